-- unlearn 0.7.0 -> 0.8.0: unlearn_score scores in parallel workers when
-- its plan has them, through a per-row scorer that takes the columns; new
-- models map the intercept to 2 and standardise on a grid of four spread
-- steps per power of two (models trained before keep 1 and 1).

\echo Use "ALTER EXTENSION unlearn UPDATE TO '0.8.0'" to load this file. \quit

CREATE TYPE unlearn.keyed_score AS (key jsonb, label text, score float8);
COMMENT ON TYPE unlearn.keyed_score IS 'a row of unlearn_score: the primary key (jsonb: each column''s text), the predicted label and the score';

CREATE FUNCTION unlearn._score_columns(model text, key_columns text[], VARIADIC columns "any")
RETURNS unlearn.keyed_score
AS 'MODULE_PATHNAME', 'unlearn_score_columns' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION unlearn._score_columns(text, text[], "any") IS 'unlearn_score''s per-row scorer in parallel workers: the feature columns in the model''s order, then the key columns named by key_columns';

ALTER TABLE unlearn.models
	ADD COLUMN intercept_scaling float8 NOT NULL DEFAULT 1 CHECK (intercept_scaling >= 1 AND intercept_scaling <= 16),
	ADD COLUMN spread_steps integer NOT NULL DEFAULT 1 CHECK (spread_steps BETWEEN 1 AND 64);
COMMENT ON COLUMN unlearn.models.scale IS 'row map: z = ((x - centre) / spread, intercept_scaling), x -> z / max(scale, ||z||); scale = sqrt(weights per class)';
COMMENT ON COLUMN unlearn.models.intercept_scaling IS 'the intercept''s coordinate before the row map divides by scale: 2 for models trained from 0.8.0, 1 before';
COMMENT ON COLUMN unlearn.models.spread_steps IS 'steps of the standardize spread grid per power of two: 4 for models trained from 0.8.0, 1 before';
