-- unlearn 0.12.0 -> 0.13.0: leaner training passes.  Newton takes a
-- point's Hessian only where it will use it; the other passes sum the loss
-- and gradient alone, through unlearn._pass_gradient, a twin of
-- unlearn_loss_gradient_state in schema unlearn (as unlearn._pass_hessian).
-- The census of an array column reads each array once, through
-- unlearn._array_shape.
\echo Use "ALTER EXTENSION unlearn UPDATE TO '0.13.0'" to load this file. \quit

CREATE FUNCTION unlearn._array_shape(anyarray) RETURNS int4
AS 'MODULE_PATHNAME', 'unlearn_array_shape' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn._array_shape(anyarray) IS 'internal to training passes: -1 for a one-dimensional array with a null element, else the length of its first dimension (0 if empty)';
CREATE AGGREGATE unlearn._pass_gradient(x float8[], y float8, w float8[], loss text) (
	SFUNC = unlearn._stats_gradient_add, STYPE = unlearn.stats,
	COMBINEFUNC = unlearn._stats_combine, PARALLEL = SAFE);
COMMENT ON AGGREGATE unlearn._pass_gradient(float8[], float8, float8[], text) IS 'internal to training passes: unlearn_loss_gradient_state';
COMMENT ON COLUMN unlearn.progress.phase IS 'waiting for table lock, census, column moments, gradient and Hessian (a Newton pass), gradient (a pass whose Hessian would not be used), or Gram matrix';
