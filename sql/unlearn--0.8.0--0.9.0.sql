-- unlearn 0.8.0 -> 0.9.0: a classifier's classes may be declared
-- (unlearn_train's classes; a boolean label declares false and true) rather
-- than taken from the rows; declared classes never change, and a row with
-- another label is refused; training statistics as aggregates (unlearn.stats).

\echo Use "ALTER EXTENSION unlearn UPDATE TO '0.9.0'" to load this file. \quit

ALTER TABLE unlearn.models ADD COLUMN classes_declared boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN unlearn.models.classes_declared IS 'true when the classes were declared (unlearn_train''s classes, or a boolean label''s false and true) rather than taken from the rows: they never change, and a row with another label is refused';

-- unlearn_train gains its last argument
DROP FUNCTION unlearn_train(text, regclass, text, text[], text, float8, float8, float8, float8, boolean, text, text, text, boolean, boolean, text, float8[], float8[], text);
DROP FUNCTION unlearn._train(text, regclass, text, text[], text, float8, float8, float8, float8, boolean, text, text, text, boolean, boolean, text, float8[], float8[], text);

CREATE FUNCTION unlearn._train(model text, source regclass, label text, features text[],
	loss text, lambda float8, sigma float8, epsilon float8, delta float8,
	intercept boolean, bound text, on_exhausted text, steps text,
	replace boolean, verbose boolean, preprocess text, centre float8[], spread float8[],
	nulls text, classes text[])
RETURNS void AS 'MODULE_PATHNAME', 'unlearn_train' LANGUAGE C VOLATILE;

CREATE FUNCTION unlearn_train(
	model text,
	source regclass,
	label text,
	features text[],
	loss text DEFAULT 'logistic',
	lambda float8 DEFAULT 1e-3,
	sigma float8 DEFAULT 1,
	epsilon float8 DEFAULT 1,
	delta float8 DEFAULT 1e-4,
	intercept boolean DEFAULT true,
	bound text DEFAULT 'taylor',
	on_exhausted text DEFAULT 'retrain',
	steps text DEFAULT 'statement',
	replace boolean DEFAULT false,
	verbose boolean DEFAULT false,
	preprocess text DEFAULT 'standardize',
	centre float8[] DEFAULT NULL,
	spread float8[] DEFAULT NULL,
	nulls text DEFAULT 'error',
	classes text[] DEFAULT NULL)
RETURNS SETOF unlearn.status
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT unlearn._train($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20);
	SELECT * FROM unlearn.status s WHERE s.model = $1;
$$;
COMMENT ON FUNCTION unlearn_train(text, regclass, text, text[], text, float8, float8, float8, float8, boolean, text, text, text, boolean, boolean, text, float8[], float8[], text, text[])
IS 'train a removal-ready L2-regularised, loss-perturbed linear model on the rows of a table; features are columns or expressions over the row such as log(income) (built-in immutable functions only); preprocess standardizes each feature column (standardize), with a declared centre and spread (declared), or not at all (none); nulls => skip leaves rows with a null in a model column outside the model; classes declares a classifier''s labels (a boolean label declares false and true), which then never change, and a row with another label is refused';

-- Training statistics as aggregates (src/aggregates.c): the loss and
-- gradient, the gradient and Hessian at a given w, and the Gram matrix,
-- over a state type of their own, so that they run in parallel workers and
-- merge across tables or nodes.
CREATE TYPE unlearn.stats;
CREATE FUNCTION unlearn._stats_in(cstring) RETURNS unlearn.stats
AS 'MODULE_PATHNAME', 'unlearn_stats_in' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION unlearn._stats_out(unlearn.stats) RETURNS cstring
AS 'MODULE_PATHNAME', 'unlearn_stats_out' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION unlearn._stats_recv(internal) RETURNS unlearn.stats
AS 'MODULE_PATHNAME', 'unlearn_stats_recv' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION unlearn._stats_send(unlearn.stats) RETURNS bytea
AS 'MODULE_PATHNAME', 'unlearn_stats_send' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE TYPE unlearn.stats (
	INPUT = unlearn._stats_in, OUTPUT = unlearn._stats_out,
	RECEIVE = unlearn._stats_recv, SEND = unlearn._stats_send,
	INTERNALLENGTH = VARIABLE, ALIGNMENT = double, STORAGE = extended);
COMMENT ON TYPE unlearn.stats IS 'state of the unlearn statistics aggregates: kind, loss, w, rows and sums; text form ulstats1: and base64, binary form raw';

CREATE TYPE unlearn.stats_values AS (kind text, loss text, rows bigint, loss_sum float8,
	gradient float8[], matrix float8[]);
COMMENT ON TYPE unlearn.stats_values IS 'the sums of an unlearn statistics aggregate: sum of l, sum of l'' x and (hessian) sum of l'''' x x'' over the rows at w, or (gram) sum of x x''; matrix is full and symmetric; without the regulariser';

CREATE FUNCTION unlearn_stats_values(state unlearn.stats) RETURNS unlearn.stats_values
AS 'MODULE_PATHNAME', 'unlearn_stats_values' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn_stats_values(unlearn.stats) IS 'the sums an unlearn.stats state holds (the final function of the statistics aggregates)';

CREATE FUNCTION unlearn._stats_gradient_add(unlearn.stats, float8[], float8, float8[], text)
RETURNS unlearn.stats AS 'MODULE_PATHNAME', 'unlearn_stats_gradient_add'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION unlearn._stats_hessian_add(unlearn.stats, float8[], float8, float8[], text)
RETURNS unlearn.stats AS 'MODULE_PATHNAME', 'unlearn_stats_hessian_add'
LANGUAGE C IMMUTABLE PARALLEL SAFE COST 100;
CREATE FUNCTION unlearn._stats_gram_add(unlearn.stats, float8[])
RETURNS unlearn.stats AS 'MODULE_PATHNAME', 'unlearn_stats_gram_add'
LANGUAGE C IMMUTABLE PARALLEL SAFE COST 100;
CREATE FUNCTION unlearn._stats_combine(unlearn.stats, unlearn.stats)
RETURNS unlearn.stats AS 'MODULE_PATHNAME', 'unlearn_stats_combine'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
-- callable by the aggregates' owner only: no role's aggregate feeds them its own states
REVOKE EXECUTE ON FUNCTION unlearn._stats_gradient_add(unlearn.stats, float8[], float8, float8[], text),
	unlearn._stats_hessian_add(unlearn.stats, float8[], float8, float8[], text),
	unlearn._stats_gram_add(unlearn.stats, float8[]),
	unlearn._stats_combine(unlearn.stats, unlearn.stats) FROM PUBLIC;

CREATE AGGREGATE unlearn_loss_gradient(x float8[], y float8, w float8[], loss text) (
	SFUNC = unlearn._stats_gradient_add, STYPE = unlearn.stats,
	COMBINEFUNC = unlearn._stats_combine, FINALFUNC = unlearn_stats_values, PARALLEL = SAFE);
COMMENT ON AGGREGATE unlearn_loss_gradient(float8[], float8, float8[], text) IS 'sum of the loss and of its gradient l''(w.x, y) x over the rows at a constant w (loss logistic, y in {-1, 1}, or squared)';
CREATE AGGREGATE unlearn_gradient_hessian(x float8[], y float8, w float8[], loss text) (
	SFUNC = unlearn._stats_hessian_add, STYPE = unlearn.stats,
	COMBINEFUNC = unlearn._stats_combine, FINALFUNC = unlearn_stats_values, PARALLEL = SAFE);
COMMENT ON AGGREGATE unlearn_gradient_hessian(float8[], float8, float8[], text) IS 'sum of the loss, its gradient and its Hessian l''''(w.x, y) x x'' over the rows at a constant w';
CREATE AGGREGATE unlearn_gram(x float8[]) (
	SFUNC = unlearn._stats_gram_add, STYPE = unlearn.stats,
	COMBINEFUNC = unlearn._stats_combine, FINALFUNC = unlearn_stats_values, PARALLEL = SAFE);
COMMENT ON AGGREGATE unlearn_gram(float8[]) IS 'the Gram matrix, sum of x x'' over the rows';

CREATE AGGREGATE unlearn_loss_gradient_state(x float8[], y float8, w float8[], loss text) (
	SFUNC = unlearn._stats_gradient_add, STYPE = unlearn.stats,
	COMBINEFUNC = unlearn._stats_combine, PARALLEL = SAFE);
COMMENT ON AGGREGATE unlearn_loss_gradient_state(float8[], float8, float8[], text) IS 'unlearn_loss_gradient''s state, to merge with unlearn_merge (one per table, partition or node)';
CREATE AGGREGATE unlearn_gradient_hessian_state(x float8[], y float8, w float8[], loss text) (
	SFUNC = unlearn._stats_hessian_add, STYPE = unlearn.stats,
	COMBINEFUNC = unlearn._stats_combine, PARALLEL = SAFE);
COMMENT ON AGGREGATE unlearn_gradient_hessian_state(float8[], float8, float8[], text) IS 'unlearn_gradient_hessian''s state, to merge with unlearn_merge';
CREATE AGGREGATE unlearn_gram_state(x float8[]) (
	SFUNC = unlearn._stats_gram_add, STYPE = unlearn.stats,
	COMBINEFUNC = unlearn._stats_combine, PARALLEL = SAFE);
COMMENT ON AGGREGATE unlearn_gram_state(float8[]) IS 'unlearn_gram''s state, to merge with unlearn_merge';
CREATE AGGREGATE unlearn_merge(state unlearn.stats) (
	SFUNC = unlearn._stats_combine, STYPE = unlearn.stats,
	COMBINEFUNC = unlearn._stats_combine, PARALLEL = SAFE);
COMMENT ON AGGREGATE unlearn_merge(unlearn.stats) IS 'merge unlearn.stats states of one kind, loss, dimension and w into one; read it with unlearn_stats_values';
