-- unlearn 0.2.0 -> 0.3.0: the row map standardizes feature columns
-- (src/column_map.c).  Models trained before keep their stored divisor and
-- no column map (preprocess 'none') until they are retrained; a retrain
-- keeps 'none' and sets the data-independent divisor sqrt(p).

\echo Use "ALTER EXTENSION unlearn UPDATE TO '0.3.0'" to load this file. \quit

ALTER TABLE unlearn.models
	ADD COLUMN preprocess text NOT NULL DEFAULT 'none'
		CHECK (preprocess IN ('standardize', 'declared', 'none')),
	ADD COLUMN centre float8[],
	ADD COLUMN spread float8[];
ALTER TABLE unlearn.model_state ADD COLUMN column_sums float8[];

COMMENT ON COLUMN unlearn.models.scale IS 'row map: z = ((x - centre) / spread, 1), x -> z / max(scale, ||z||); scale = sqrt(weights per class)';
COMMENT ON COLUMN unlearn.models.preprocess IS 'where centre and spread come from: standardize (mean and standard deviation of the rows the model reflects, on a power-of-two grid, kept so by retraining), declared (given at training) or none (the identity)';
COMMENT ON COLUMN unlearn.models.centre IS 'per feature column (one for an array column); NULL while a standardize model withholds its weights';
COMMENT ON TABLE unlearn.model_state IS 'owner-only removal state: noise b, anchor w0, lambda_max bound, spent budget and Hessian weight sum C per class, and the column sums of the standardize map';

DROP FUNCTION unlearn_train(text, regclass, text, text[], text, float8, float8, float8, float8, boolean, text, text, text, boolean, boolean);
DROP FUNCTION unlearn._train(text, regclass, text, text[], text, float8, float8, float8, float8, boolean, text, text, text, boolean, boolean);

CREATE FUNCTION unlearn._train(model text, source regclass, label text, features text[],
	loss text, lambda float8, sigma float8, epsilon float8, delta float8,
	intercept boolean, bound text, on_exhausted text, steps text,
	replace boolean, verbose boolean, preprocess text, centre float8[], spread float8[])
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
	spread float8[] DEFAULT NULL)
RETURNS SETOF unlearn.status
LANGUAGE sql VOLATILE
AS $$
	SELECT unlearn._train($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18);
	SELECT * FROM unlearn.status s WHERE s.model = $1;
$$;
COMMENT ON FUNCTION unlearn_train(text, regclass, text, text[], text, float8, float8, float8, float8, boolean, text, text, text, boolean, boolean, text, float8[], float8[])
IS 'train a removal-ready L2-regularised, loss-perturbed linear model on the rows of a table; preprocess standardizes each feature column (standardize), with a declared centre and spread (declared), or not at all (none)';
