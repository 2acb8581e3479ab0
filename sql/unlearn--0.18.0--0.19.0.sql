-- unlearn 0.18.0 -> 0.19.0: cohorts (seed 003), and unlearn_export.
-- unlearn_train(..., cohort => 'column') keeps each cohort's statistics in
-- the owner-only table unlearn.cohorts, in step with every change; a
-- statement that removes all of a cohort's rows erases it from them in one
-- step (ledger operation cohort).  unlearn_forget_cohort deletes a
-- cohort's rows; unlearn_cohorts lists them; unlearn.status gains cohorts
-- and cohort_bytes.
\echo Use "ALTER EXTENSION unlearn UPDATE TO '0.19.0'" to load this file. \quit

ALTER TABLE unlearn.models ADD COLUMN cohort text;
COMMENT ON COLUMN unlearn.models.cohort IS 'the column whose values are cohorts (unlearn_train''s cohort): the model keeps each cohort''s statistics in unlearn.cohorts, and a statement that removes all of a cohort''s rows erases it from them; NULL: no cohorts';

-- The statistics of each cohort of a model trained with a cohort column:
-- the rows of the cohort value the model reflects, and per class the data
-- part of the Hessian, the gradient and the weight and gradient-magnitude
-- sums over those rows at the model's anchor (src/mechanism/cohort.c).
-- Secret like model_state: only the model's owner (and superusers) can
-- see a row.  Erasing a cohort deletes its row.
CREATE TABLE unlearn.cohorts (
	model		text NOT NULL REFERENCES unlearn.models ON DELETE CASCADE ON UPDATE CASCADE,
	owner		regrole NOT NULL,
	cohort		text NOT NULL,
	rows		bigint NOT NULL CHECK (rows > 0),
	stats		bytea NOT NULL,
	PRIMARY KEY (model, cohort)
);
ALTER TABLE unlearn.cohorts ALTER COLUMN stats SET STORAGE EXTERNAL;
-- no planner statistics: they would keep erased values, and leakproof
-- comparisons would let a role that sees no row probe them
ALTER TABLE unlearn.cohorts ALTER COLUMN cohort SET STATISTICS 0,
	ALTER COLUMN rows SET STATISTICS 0, ALTER COLUMN stats SET STATISTICS 0,
	ALTER COLUMN model SET STATISTICS 0, ALTER COLUMN owner SET STATISTICS 0;
COMMENT ON TABLE unlearn.cohorts IS 'owner-only statistics of each cohort of a model trained with a cohort column: its rows, and per class the Hessian''s data part, the gradient, and the weight and magnitude sums of its rows at the anchor';

ALTER TABLE unlearn.cohorts ENABLE ROW LEVEL SECURITY;
CREATE POLICY cohorts_owner ON unlearn.cohorts FOR SELECT
	USING (pg_catalog.pg_has_role(current_user, owner, 'USAGE'));
REVOKE ALL ON unlearn.cohorts FROM PUBLIC;
GRANT SELECT ON unlearn.cohorts TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('unlearn.cohorts',
	'WHERE pg_catalog.pg_has_role(owner, ''USAGE'')');

DROP FUNCTION unlearn_train(text, regclass, text, text[], text, float8, float8, float8, float8, jsonb, boolean, boolean, text);
DROP FUNCTION unlearn._train(text, regclass, text, text[], text, float8, float8, float8, float8, boolean, text, text, text, boolean, boolean, text, float8[], float8[], text, text[], text, text, float8, float8, float8);

CREATE OR REPLACE VIEW unlearn.status WITH (security_barrier) AS
SELECT m.model, m.source, m.loss,
	   coalesce(array_length(m.classes, 1), 0) AS classes,
	   m.dims, m.rows, m.skipped, m.removed, m.inserted, m.retrains,
	   m.budget, m.spent,
	   greatest(m.budget - m.spent, 0) AS remaining,
	   CASE WHEN m.budget > 0 THEN round((100 * m.spent / m.budget)::numeric, 2) END AS pct_spent,
	   CASE WHEN m.state = 'ready' AND u.changed > 0 AND m.mechanism = 'newton' AND m.loss <> 'squared' THEN
		   floor(least(greatest(m.budget - m.spent, 0) / nullif(u.bound / u.changed, 0), 1e15))::bigint
	   END AS deletions_left,
	   m.bound, m.on_exhausted, m.steps, m.state,
	   m.trained_at, m.updated_at,
	   m.state = 'ready' AND unlearn._resident(m.model) AS resident,
	   m.removal,
	   (SELECT pg_catalog.count(*) FROM unlearn.pending q WHERE q.model = m.model) AS pending,
	   m.mechanism,
	   CASE WHEN pg_catalog.pg_has_role(current_user, m.owner, 'USAGE') THEN c.cohorts END AS cohorts,
	   CASE WHEN pg_catalog.pg_has_role(current_user, m.owner, 'USAGE') THEN c.cohort_bytes END AS cohort_bytes
FROM unlearn.models m
LEFT JOIN LATERAL (
	SELECT pg_catalog.count(*)::integer AS cohorts,
		   coalesce(sum(pg_catalog.octet_length(q.stats)), 0)::bigint AS cohort_bytes
	FROM unlearn.cohorts q WHERE q.model = m.model AND m.cohort IS NOT NULL
) c ON true
LEFT JOIN LATERAL (
	SELECT sum(l.bound) AS bound, sum(l.rows_removed + l.rows_added) AS changed
	FROM unlearn.ledger l
	WHERE l.model = m.model AND l.owner = m.owner AND NOT l.retrained AND NOT l.reanchored
	  AND l.id > (SELECT coalesce(max(r.id), 0) FROM unlearn.ledger r
				  WHERE r.model = m.model AND (r.retrained OR r.reanchored))
) u ON true
-- the models the caller owns or holds a grant on (the view reads the
-- catalog as its owner, so it filters the rows itself, before any
-- condition of the caller's query)
WHERE pg_catalog.pg_has_role(current_user, m.owner, 'USAGE')
   OR EXISTS (SELECT 1 FROM unlearn.model_grants g
			  WHERE g.model = m.model
				AND pg_catalog.pg_has_role(current_user, g.grantee, 'USAGE'));
GRANT SELECT ON unlearn.status TO PUBLIC;
COMMENT ON COLUMN unlearn.status.cohorts IS 'cohorts whose statistics the model keeps (unlearn_train''s cohort), 0 without a cohort column; the rows of the others (past unlearn.cohort_memory, or new since the last training) are forgotten row by row; NULL for a role that does not own the model';
COMMENT ON COLUMN unlearn.status.cohort_bytes IS 'bytes of the statistics the model keeps for its cohorts (bounded by unlearn.cohort_memory)';

CREATE FUNCTION unlearn._train(model text, source regclass, label text, features text[],
	loss text, lambda float8, sigma float8, epsilon float8, delta float8,
	intercept boolean, bound text, on_exhausted text, steps text,
	replace boolean, verbose boolean, preprocess text, centre float8[], spread float8[],
	nulls text, classes text[], removal text, mechanism text, noise float8, step_size float8,
	training_steps float8, cohort text)
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
	options jsonb DEFAULT '{}',
	replace boolean DEFAULT false,
	verbose boolean DEFAULT false,
	mechanism text DEFAULT 'newton',
	cohort text DEFAULT NULL)
RETURNS SETOF unlearn.status
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
	-- a Noisy-GD model maps its rows by nothing computed from them
	SELECT unlearn._train($1, $2, $3, $4, $5, $6, $7, $8, $9, o.intercept, o.bound,
						  o.on_exhausted, o.steps, $11, $12,
						  CASE WHEN $13 = 'noisy_gd' AND NOT $10 ? 'preprocess' THEN 'none'
							   ELSE o.preprocess END,
						  o.centre, o.spread, o.nulls, o.classes, o.removal, $13,
						  o.noise, o.step_size, o.training_steps, $14)
	FROM unlearn._train_options($10) o;
	SELECT * FROM unlearn.status s WHERE s.model = $1;
$$;
COMMENT ON FUNCTION unlearn_train(text, regclass, text, text[], text, float8, float8, float8, float8, jsonb, boolean, boolean, text, text)
IS 'train a removal-ready L2-regularised, loss-perturbed linear model on the rows of a table; features are columns or expressions over the row such as log(income) (built-in immutable functions only); options is a JSON object of rarely changed settings: nulls (skip or error), classes (a classifier''s declared labels), preprocess (standardize, declared with centre and spread, or none), removal (immediate or deferred), bound (taylor, guo or exact), on_exhausted (retrain or suspend), steps (statement or row), intercept (true or false), and for noisy_gd noise, step_size and training_steps, which replace the chosen ones; mechanism newton (the default) or noisy_gd (Noisy-GD: a guarantee over every release, no state, noise and steps chosen from epsilon and delta; sigma is ignored); cohort names a column whose values are cohorts (tenants, sites, sources): the model keeps each cohort''s statistics, and a statement that removes all of a cohort''s rows erases it from them without a step per row; by default the key of a table partitioned by LIST on one column ('''' for none)';

CREATE FUNCTION unlearn_forget_cohort(model text, cohort text) RETURNS bigint
AS 'MODULE_PATHNAME', 'unlearn_forget_cohort' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION unlearn_forget_cohort(text, text)
IS 'erase a cohort: delete, with the caller''s rights, the rows of the model''s table whose cohort column equals the value, and return how many were deleted; a model that keeps the cohort''s statistics forgets them in one step, the ledger''s operation cohort';

CREATE FUNCTION unlearn_export(model text) RETURNS jsonb
AS 'MODULE_PATHNAME', 'unlearn_export' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION unlearn_export(text)
IS 'what predicting needs, as jsonb: the weights in mapped space, the row map (centre, spread, clamp, intercept scaling, scale), the features, the classes, the loss and the formula (the owner or a read grant); an exported copy does not forget: a later erasure does not reach it';

CREATE FUNCTION unlearn_cohorts(model text)
RETURNS TABLE (cohort text, rows bigint, bytes bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT c.cohort, c.rows, octet_length(c.stats)::bigint
	FROM unlearn.cohorts c WHERE c.model = $1
	ORDER BY c.rows DESC, c.cohort;
$$;
COMMENT ON FUNCTION unlearn_cohorts(text)
IS 'the cohorts whose statistics a model keeps, with their rows and bytes, largest first (its owner''s roles only: others see no line)';
COMMENT ON FUNCTION unlearn._train_options(jsonb) IS 'internal: checks unlearn_train''s options by name and JSON type and fills in the defaults';
COMMENT ON FUNCTION unlearn._train(text, regclass, text, text[], text, float8, float8, float8, float8, boolean, text, text, text, boolean, boolean, text, float8[], float8[], text, text[], text, text, float8, float8, float8, text) IS 'internal: unlearn_train''s implementation';
COMMENT ON COLUMN unlearn.progress.command IS 'training (unlearn_train), retraining (unlearn_retrain, or a retrain after a change), re-anchoring, cohort erasure (measuring the residual after a cohort left), class census (a model that releases nothing lists its classes), or audit (unlearn_audit: inserting canaries, deleting canaries, scoring canaries, training shadow models, relearning)';
