-- unlearn 0.9.0 -> 0.10.0: training and re-anchoring read the rows by
-- aggregate passes (the statistics aggregates over the row functions below),
-- which may run in parallel workers, instead of loading them into one backend.

-- training passes (train_pass.c): the row functions and the column moments
CREATE FUNCTION unlearn._row_values(VARIADIC "any") RETURNS float8[]
AS 'MODULE_PATHNAME', 'unlearn_row_values' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION unlearn._row_values("any") IS 'internal to training passes: a row''s features (numeric scalars and booleans, or one numeric array) as float8[]';
CREATE FUNCTION unlearn._row_x(model text, map float8[], raw float8[]) RETURNS float8[]
AS 'MODULE_PATHNAME', 'unlearn_row_x' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION unlearn._row_x(text, float8[], float8[]) IS 'internal to training passes: raw features checked finite and mapped by a model''s row map (NULL: unmapped)';
CREATE FUNCTION unlearn._row_target(model text, label "any", positive text) RETURNS float8
AS 'MODULE_PATHNAME', 'unlearn_row_target' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION unlearn._row_target(text, "any", text) IS 'internal to training passes: +1 if the label is positive, else -1; positive NULL: the label''s value (squared loss)';
CREATE FUNCTION unlearn._moments_add(bytea, float8[], int4) RETURNS bytea
AS 'MODULE_PATHNAME', 'unlearn_moments_add' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION unlearn._moments_combine(bytea, bytea) RETURNS bytea
AS 'MODULE_PATHNAME', 'unlearn_moments_combine' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION unlearn._moments_final(bytea) RETURNS float8[]
AS 'MODULE_PATHNAME', 'unlearn_moments_final' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
REVOKE EXECUTE ON FUNCTION unlearn._moments_add(bytea, float8[], int4),
	unlearn._moments_combine(bytea, bytea), unlearn._moments_final(bytea) FROM PUBLIC;
CREATE AGGREGATE unlearn._column_moments(x float8[], columns int4) (
	SFUNC = unlearn._moments_add, STYPE = bytea, COMBINEFUNC = unlearn._moments_combine,
	FINALFUNC = unlearn._moments_final, PARALLEL = SAFE);
COMMENT ON AGGREGATE unlearn._column_moments(float8[], int4) IS 'internal to training passes: count, then per column the mean, then per column the variance of the rows'' values';
-- the statistics aggregates as training passes call them: the same support
-- functions and state, in schema unlearn, whose USAGE no role but a
-- superuser can take from the table owners the passes run as
CREATE AGGREGATE unlearn._pass_hessian(x float8[], y float8, w float8[], loss text) (
	SFUNC = unlearn._stats_hessian_add, STYPE = unlearn.stats,
	COMBINEFUNC = unlearn._stats_combine, PARALLEL = SAFE);
COMMENT ON AGGREGATE unlearn._pass_hessian(float8[], float8, float8[], text) IS 'internal to training passes: unlearn_gradient_hessian_state';
CREATE AGGREGATE unlearn._pass_gram(x float8[]) (
	SFUNC = unlearn._stats_gram_add, STYPE = unlearn.stats,
	COMBINEFUNC = unlearn._stats_combine, PARALLEL = SAFE);
COMMENT ON AGGREGATE unlearn._pass_gram(float8[]) IS 'internal to training passes: unlearn_gram_state';
