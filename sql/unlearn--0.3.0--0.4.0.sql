-- unlearn 0.3.0 -> 0.4.0: nulls => 'skip', the rows per label of a
-- classifier (its class list follows the rows), the status view's
-- skipped rows and deletions left, all-class probabilities, scoring by
-- row and by primary key, and held-out evaluation.

\echo Use "ALTER EXTENSION unlearn UPDATE TO '0.4.0'" to load this file. \quit

ALTER TABLE unlearn.models
	ADD COLUMN nulls text NOT NULL DEFAULT 'error' CHECK (nulls IN ('error', 'skip')),
	ADD COLUMN skipped bigint NOT NULL DEFAULT 0;
ALTER TABLE unlearn.model_state ADD COLUMN class_rows bigint[];
COMMENT ON COLUMN unlearn.models.nulls IS 'error: a null in a model column is an error; skip: a row with a null in a model column is outside the model';
COMMENT ON COLUMN unlearn.models.skipped IS 'rows of the table outside the model because of a null (nulls = skip)';
COMMENT ON TABLE unlearn.model_state IS 'owner-only removal state: noise b, anchor w0, lambda_max bound, spent budget and Hessian weight sum C per class, the column sums of the standardize map, and the rows per label of a classifier';

-- the status view gains columns in the middle: it and the functions that
-- return its rows are made again
DROP FUNCTION unlearn_train(text, regclass, text, text[], text, float8, float8, float8, float8, boolean, text, text, text, boolean, boolean, text, float8[], float8[]);
DROP FUNCTION unlearn._train(text, regclass, text, text[], text, float8, float8, float8, float8, boolean, text, text, text, boolean, boolean, text, float8[], float8[]);
DROP FUNCTION unlearn_retrain(text, boolean);
DROP FUNCTION unlearn_score(text, regclass);
DROP VIEW unlearn.status;

CREATE VIEW unlearn.status AS
SELECT m.model, m.source, m.loss,
	   coalesce(array_length(m.classes, 1), 0) AS classes,
	   m.dims, m.rows, m.skipped, m.removed, m.inserted, m.retrains,
	   m.budget, m.spent,
	   greatest(m.budget - m.spent, 0) AS remaining,
	   CASE WHEN m.budget > 0 THEN round((100 * m.spent / m.budget)::numeric, 2) END AS pct_spent,
	   CASE WHEN m.state = 'ready' AND u.changed > 0 THEN
		   floor(least(greatest(m.budget - m.spent, 0) / nullif(u.bound / u.changed, 0), 1e15))::bigint
	   END AS deletions_left,
	   m.bound, m.on_exhausted, m.steps, m.state,
	   m.trained_at, m.updated_at,
	   m.state = 'ready' AND unlearn._resident(m.model) AS resident
FROM unlearn.models m
LEFT JOIN LATERAL (
	SELECT sum(l.bound) AS bound, sum(l.rows_removed + l.rows_added) AS changed
	FROM unlearn.ledger l
	WHERE l.model = m.model AND NOT l.retrained AND NOT l.reanchored
	  AND l.id > (SELECT coalesce(max(r.id), 0) FROM unlearn.ledger r
				  WHERE r.model = m.model AND (r.retrained OR r.reanchored))
) u ON true;
GRANT SELECT ON unlearn.status TO PUBLIC;
COMMENT ON VIEW unlearn.status IS 'one line per model: rows (and rows skipped for a null), removals, budget left, an estimate of the row changes left before the next re-anchoring or retrain, and whether its removal matrices are in shared memory (resident; otherwise its next change rebuilds them)';
COMMENT ON COLUMN unlearn.status.deletions_left IS 'row deletions the remaining budget is expected to cover before the next re-anchoring or retrain: remaining over the mean bound per changed row since the last one; NULL when the model is not ready, no row has changed since, or its removals cost nothing (squared loss)';

CREATE FUNCTION unlearn._train(model text, source regclass, label text, features text[],
	loss text, lambda float8, sigma float8, epsilon float8, delta float8,
	intercept boolean, bound text, on_exhausted text, steps text,
	replace boolean, verbose boolean, preprocess text, centre float8[], spread float8[],
	nulls text)
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
	nulls text DEFAULT 'error')
RETURNS SETOF unlearn.status
LANGUAGE sql VOLATILE
AS $$
	SELECT unlearn._train($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19);
	SELECT * FROM unlearn.status s WHERE s.model = $1;
$$;
COMMENT ON FUNCTION unlearn_train(text, regclass, text, text[], text, float8, float8, float8, float8, boolean, text, text, text, boolean, boolean, text, float8[], float8[], text)
IS 'train a removal-ready L2-regularised, loss-perturbed linear model on the rows of a table; preprocess standardizes each feature column (standardize), with a declared centre and spread (declared), or not at all (none); nulls => skip leaves rows with a null in a model column outside the model';

CREATE FUNCTION unlearn_retrain(model text, verbose boolean DEFAULT false)
RETURNS SETOF unlearn.status
LANGUAGE sql VOLATILE
AS $$
	SELECT unlearn._retrain($1, $2);
	SELECT * FROM unlearn.status s WHERE s.model = $1;
$$;
COMMENT ON FUNCTION unlearn_retrain(text, boolean)
IS 'retrain a model from scratch on the current rows with fresh noise, resetting its spent budget';

CREATE FUNCTION unlearn_predict_proba(model text, x float8[]) RETURNS float8[]
AS 'MODULE_PATHNAME', 'unlearn_predict_proba' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn_predict_proba(text, float8[]) IS 'probability of every class, in the order of unlearn.models.classes (one-vs-rest: the class sigmoids normalised to sum 1)';

CREATE TYPE unlearn.scored AS (label text, score float8);
COMMENT ON TYPE unlearn.scored IS 'a prediction: the predicted label (NULL for squared loss) and the score of unlearn_predict';

CREATE FUNCTION unlearn_score_row(model text, r record) RETURNS unlearn.scored
AS 'MODULE_PATHNAME', 'unlearn_score_row' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn_score_row(text, record) IS 'predicted label and score of a whole row that has the model''s columns, read with one deform: SELECT t.id, s.* FROM t, unlearn_score_row(''m'', t) s';

CREATE FUNCTION unlearn_score(model text, source regclass DEFAULT NULL)
RETURNS TABLE (key jsonb, label text, score float8)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	rel regclass := coalesce(source, (SELECT m.source FROM unlearn.models m WHERE m.model = unlearn_score.model));
	keys text;
BEGIN
	IF rel IS NULL THEN
		RAISE EXCEPTION 'model "%" does not exist', model USING ERRCODE = 'undefined_object',
			HINT = 'See SELECT model FROM unlearn.models for the models there are.';
	END IF;
	-- each key column as its type's output text (format's %s), never
	-- through a cast: a cast may be the table owner's code
	SELECT string_agg(format('%L, pg_catalog.format(''%%s'', t.%I)', a.attname, a.attname), ', ' ORDER BY k.n)
	INTO keys
	FROM pg_catalog.pg_index i
	CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
	JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
	WHERE i.indrelid = rel AND i.indisprimary;
	IF keys IS NULL THEN
		RAISE EXCEPTION 'relation % has no primary key', rel USING ERRCODE = 'wrong_object_type',
			HINT = 'Select the columns that identify a row yourself: SELECT t.id, s.* FROM t, unlearn_score_row(''model'', t) s.';
	END IF;
	-- the row function in the select list of a subquery that is not
	-- flattened: called once per row, without a function scan per row
	RETURN QUERY EXECUTE format(
		'SELECT k, (s).label, (s).score FROM (SELECT pg_catalog.jsonb_build_object(%s) AS k, '
		'@extschema@.unlearn_score_row($1, t) AS s FROM %s t OFFSET 0) x',
		keys, rel) USING model;
END
$$;
COMMENT ON FUNCTION unlearn_score(text, regclass) IS 'the primary key (jsonb: each column''s text), predicted label and score of every row of a table (default: the model''s source)';

CREATE FUNCTION unlearn_evaluate(model text, source regclass DEFAULT NULL,
	OUT rows bigint, OUT skipped bigint,
	OUT accuracy float8, OUT log_loss float8, OUT roc_auc float8, OUT f1 float8,
	OUT classes text[], OUT class_precision float8[], OUT class_recall float8[],
	OUT class_f1 float8[], OUT confusion bigint[],
	OUT r2 float8, OUT rmse float8, OUT mae float8)
AS 'MODULE_PATHNAME', 'unlearn_evaluate' LANGUAGE C STABLE;
COMMENT ON FUNCTION unlearn_evaluate(text, regclass) IS 'held-out metrics of a model on the labelled rows of a table (default: its source): accuracy, log-loss, ROC AUC (one-vs-rest macro), macro F1, per-class precision, recall and F1 and the confusion matrix (rows: true class, columns: predicted) for a classifier; R2, RMSE and MAE for squared loss; NULL where a metric is undefined (ROC AUC when a class has no row or every row, R2 for a constant target)';

