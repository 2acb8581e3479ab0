-- unlearn 0.7.0 -> 0.8.0: unlearn_score scores in parallel workers when
-- its plan has them, through a per-row scorer that takes the columns.

\echo Use "ALTER EXTENSION unlearn UPDATE TO '0.8.0'" to load this file. \quit

CREATE TYPE unlearn.keyed_score AS (key jsonb, label text, score float8);
COMMENT ON TYPE unlearn.keyed_score IS 'a row of unlearn_score: the primary key (jsonb: each column''s text), the predicted label and the score';

CREATE FUNCTION unlearn._score_columns(model text, key_columns text[], VARIADIC columns "any")
RETURNS unlearn.keyed_score
AS 'MODULE_PATHNAME', 'unlearn_score_columns' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION unlearn._score_columns(text, text[], "any") IS 'unlearn_score''s per-row scorer in parallel workers: the feature columns in the model''s order, then the key columns named by key_columns';
