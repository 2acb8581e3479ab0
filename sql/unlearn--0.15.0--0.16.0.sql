-- unlearn 0.15.0 -> 0.16.0: every function in schema unlearn is marked
-- internal in its comment, so that \dx+ unlearn and \df unlearn.* tell
-- the interface (the unlearn_* functions) from the machinery.
\echo Use "ALTER EXTENSION unlearn UPDATE TO '0.16.0'" to load this file. \quit

COMMENT ON FUNCTION unlearn._require_preload() IS 'internal: refuses CREATE EXTENSION unless unlearn is in shared_preload_libraries';
COMMENT ON FUNCTION unlearn._resident(text) IS 'internal: whether the removal matrices of a model are in shared memory at its current version';
COMMENT ON FUNCTION unlearn._progress() IS 'internal: the progress slots in shared memory (unlearn.progress): row-derived figures for the model owner''s roles only, the model, table, command, phase and times also for pg_read_all_stats, the pid and database for every role';
COMMENT ON FUNCTION unlearn._train(text, regclass, text, text[], text, float8, float8, float8, float8, boolean, text, text, text, boolean, boolean, text, float8[], float8[], text, text[], text) IS 'internal: unlearn_train''s implementation';
COMMENT ON FUNCTION unlearn._retrain(text, boolean) IS 'internal: unlearn_retrain''s implementation';
COMMENT ON FUNCTION unlearn._apply_pending(text) IS 'internal: unlearn_apply_pending''s implementation';
COMMENT ON FUNCTION unlearn._maintain() IS 'internal: statement trigger that applies certified Newton removal and addition to every model of the table';
COMMENT ON FUNCTION unlearn._forbid_truncate() IS 'internal: trigger that rejects TRUNCATE of a table that has models';
COMMENT ON FUNCTION unlearn._defer() IS 'internal: row trigger that queues each changed row in unlearn.pending for the table''s deferred models';
COMMENT ON FUNCTION unlearn._on_sql_drop() IS 'internal: event trigger: a dropped table takes its models; a dropped column or trigger a model needs is refused';
COMMENT ON FUNCTION unlearn._on_ddl_end() IS 'internal: event trigger: DDL that would change a model''s rows without its triggers is refused';
COMMENT ON FUNCTION unlearn._matrices_digest(text) IS 'internal: a 64-bit hash of the resident removal matrices of a model (owner only), NULL if not resident; for tests';
COMMENT ON FUNCTION unlearn._column_moments(float8[], integer) IS 'internal to training passes: count, then per column the mean, then per column the variance of the rows'' values';
COMMENT ON FUNCTION unlearn._pass_hessian(float8[], float8, float8[], text) IS 'internal to training passes: unlearn_gradient_hessian_state';
COMMENT ON FUNCTION unlearn._array_shape(anyarray) IS 'internal to training passes: -1 for a one-dimensional array with a null element, else the length of its first dimension (0 if empty)';
COMMENT ON FUNCTION unlearn._pass_gradient(float8[], float8, float8[], text) IS 'internal to training passes: unlearn_loss_gradient_state';
COMMENT ON FUNCTION unlearn._pass_gram(float8[]) IS 'internal to training passes: unlearn_gram_state';
COMMENT ON FUNCTION unlearn._check_read(text, text) IS 'internal: the table of a model the caller may read (read or monitor), or an error 42501';
COMMENT ON FUNCTION unlearn._score_columns(text, text[], "any") IS 'internal: unlearn_score''s per-row scorer in parallel workers: the feature columns in the model''s order, then the key columns named by key_columns';
COMMENT ON FUNCTION unlearn._stats_in(cstring) IS 'internal: input function of the statistics state type unlearn.stats';
COMMENT ON FUNCTION unlearn._stats_out(unlearn.stats) IS 'internal: output function of the statistics state type unlearn.stats';
COMMENT ON FUNCTION unlearn._stats_recv(internal) IS 'internal: binary input function of the statistics state type unlearn.stats';
COMMENT ON FUNCTION unlearn._stats_send(unlearn.stats) IS 'internal: binary output function of the statistics state type unlearn.stats';
COMMENT ON FUNCTION unlearn._stats_gradient_add(unlearn.stats, float8[], float8, float8[], text) IS 'internal: transition function of the loss and gradient aggregates';
COMMENT ON FUNCTION unlearn._stats_hessian_add(unlearn.stats, float8[], float8, float8[], text) IS 'internal: transition function of the gradient and Hessian aggregates';
COMMENT ON FUNCTION unlearn._stats_gram_add(unlearn.stats, float8[]) IS 'internal: transition function of the Gram aggregates';
COMMENT ON FUNCTION unlearn._stats_combine(unlearn.stats, unlearn.stats) IS 'internal: combine function of the statistics aggregates (parallel partial states)';
COMMENT ON FUNCTION unlearn._row_values("any") IS 'internal to training passes: a row''s features (numeric scalars and booleans, or one numeric array) as float8[]';
COMMENT ON FUNCTION unlearn._row_x(text, float8[], float8[]) IS 'internal to training passes: raw features checked finite and mapped by a model''s row map (NULL: unmapped)';
COMMENT ON FUNCTION unlearn._row_target(text, "any", text) IS 'internal to training passes: +1 if the label is positive, else -1; positive NULL: the label''s value (squared loss)';
COMMENT ON FUNCTION unlearn._moments_add(bytea, float8[], integer) IS 'internal: transition function of unlearn._column_moments';
COMMENT ON FUNCTION unlearn._moments_combine(bytea, bytea) IS 'internal: combine function of unlearn._column_moments';
COMMENT ON FUNCTION unlearn._moments_final(bytea) IS 'internal: final function of unlearn._column_moments';
