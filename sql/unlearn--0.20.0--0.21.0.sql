-- unlearn 0.20.0 -> 0.21.0: training passes compute the features of a
-- category() group in one lookup per row (unlearn._category_values)
-- instead of one expression per category.
\echo Use "ALTER EXTENSION unlearn UPDATE TO '0.21.0'" to load this file. \quit

CREATE FUNCTION unlearn._category_values(value anyelement, categories anyarray) RETURNS float8[]
AS 'MODULE_PATHNAME', 'unlearn_category_values' LANGUAGE C IMMUTABLE PARALLEL SAFE COST 10;
COMMENT ON FUNCTION unlearn._category_values(anyelement, anyarray) IS 'internal to training passes: the features of a category() group in one lookup, 1 for each category equal to the value and 0 for the others, then other (1 when none is equal or the value is null); text, integer and boolean values';
