-- unlearn 0.21.0 -> 0.22.0: a feature category(column) takes its
-- categories from the model's rows (unlearn.models.taken_categories), and
-- unlearn.models and unlearn.pending drop their CHECK constraints (the
-- library checks what it reads).
\echo Use "ALTER EXTENSION unlearn UPDATE TO '0.22.0'" to load this file. \quit

ALTER TABLE unlearn.models ADD COLUMN taken_categories text[];
COMMENT ON COLUMN unlearn.models.taken_categories IS 'the columns of features category(column), whose categories are taken from the rows: public like classes; a change after which a category has no row, or a row has a value that is no category, retrains the model, which takes them afresh; NULL: none';

-- the columns of unlearn.models are checked where the library reads them,
-- not by CHECK constraints, which PostgreSQL parses and plans again at each
-- write of a model row (each statement that changes a trained table)
ALTER TABLE unlearn.models
	DROP CONSTRAINT models_loss_check,
	DROP CONSTRAINT models_dims_check,
	DROP CONSTRAINT models_scale_check,
	DROP CONSTRAINT models_bound_check,
	DROP CONSTRAINT models_on_exhausted_check,
	DROP CONSTRAINT models_state_check,
	DROP CONSTRAINT models_steps_check,
	DROP CONSTRAINT models_preprocess_check,
	DROP CONSTRAINT models_nulls_check,
	DROP CONSTRAINT models_intercept_scaling_check,
	DROP CONSTRAINT models_spread_steps_check,
	DROP CONSTRAINT models_removal_check,
	DROP CONSTRAINT models_mechanism_check,
	DROP CONSTRAINT models_given_parameters_check,
	DROP CONSTRAINT models_noise_check,
	DROP CONSTRAINT models_nats_check,
	DROP CONSTRAINT models_nats_spent_check,
	DROP CONSTRAINT models_apply_failures_check;
ALTER TABLE unlearn.pending DROP CONSTRAINT pending_change_check;

-- models of Citus distributed tables: the shards' row trigger
CREATE FUNCTION unlearn._shard_queue() RETURNS trigger
AS 'MODULE_PATHNAME', 'unlearn_shard_queue_trigger' LANGUAGE C;
REVOKE EXECUTE ON FUNCTION unlearn._shard_queue() FROM PUBLIC;
COMMENT ON FUNCTION unlearn._shard_queue() IS 'internal: row trigger on the shards of a Citus distributed table that queues each changed row in the table''s distributed queue for one async model';

-- the fit of a model of a distributed table, measured on the shards
CREATE FUNCTION unlearn._row_margin(x float8[], w float8[]) RETURNS float8
AS 'MODULE_PATHNAME', 'unlearn_row_margin' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 10;
COMMENT ON FUNCTION unlearn._row_margin(float8[], float8[]) IS 'internal to training: w.x for a mapped row x';
CREATE FUNCTION unlearn._row_class(x float8[], coef float8[], classes int4) RETURNS int4
AS 'MODULE_PATHNAME', 'unlearn_row_class' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 10;
COMMENT ON FUNCTION unlearn._row_class(float8[], float8[], int4) IS 'internal to training: the position among the model''s labels of the class its weights predict for a mapped row x';
