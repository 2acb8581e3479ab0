-- unlearn 0.8.0 -> 0.9.0: a classifier's classes may be declared
-- (unlearn_train's classes; a boolean label declares false and true) rather
-- than taken from the rows; declared classes never change, and a row with
-- another label is refused.

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
