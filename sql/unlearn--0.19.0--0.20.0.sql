-- unlearn 0.19.0 -> 0.20.0: Fisher scrubbing (seed 001) and pure-epsilon
-- noise.  unlearn_train(..., mechanism => 'fisher', nats => 1) trains
-- without objective noise and publishes each change's Newton step with
-- Gaussian noise shaped by the Hessian, its KL bound in nats in the ledger
-- and unlearn.status.nats; noise => 'laplace' gives a Newton model
-- objective noise with density ~ exp(-||b|| / sigma), pure
-- epsilon-certified removal.  unlearn.status gains noise, nats and
-- guarantee; unlearn_budget takes the noise.
\echo Use "ALTER EXTENSION unlearn UPDATE TO '0.20.0'" to load this file. \quit

ALTER TABLE unlearn.models
	DROP CONSTRAINT models_mechanism_check,
	ADD CONSTRAINT models_mechanism_check CHECK (mechanism IN ('newton', 'noisy_gd', 'fisher')),
	ADD COLUMN noise text NOT NULL DEFAULT 'gaussian' CHECK (noise IN ('gaussian', 'laplace')),
	ADD COLUMN nats float8 CHECK (nats > 0 AND nats <= 1000),
	ADD COLUMN nats_spent float8 NOT NULL DEFAULT 0 CHECK (nats_spent >= 0),
	ADD COLUMN filter text;
COMMENT ON COLUMN unlearn.models.filter IS 'the row filter: a boolean expression over the row (canonical text); the model reflects the rows where it is true; NULL: every row';
ALTER TABLE unlearn.models
	DROP CONSTRAINT models_nulls_check,
	ADD CONSTRAINT models_nulls_check CHECK (nulls IN ('error', 'skip', 'impute'));
COMMENT ON COLUMN unlearn.models.nulls IS 'error: a null in a model column is an error; skip: a row with a null in a model column is outside the model; impute: a missing feature value (null, or not a finite number) is the column''s centre, and a row with a null label is outside the model';
ALTER TABLE unlearn.model_state ADD COLUMN weights bytea, ADD COLUMN release_scale float8;
ALTER TABLE unlearn.model_state ALTER COLUMN weights SET STORAGE EXTERNAL;
COMMENT ON TABLE unlearn.model_state IS 'owner-only removal state: noise b, anchor w0, lambda_max bound, spent budget and Hessian weight sum C per class, the column sums of the standardize map, the rows per label of a classifier, and for fisher the secret weights w and the scale c of the published noise';
ALTER TABLE unlearn.ledger ADD COLUMN nats float8;

CREATE FUNCTION unlearn._finite_support(internal) RETURNS internal
AS 'MODULE_PATHNAME', 'unlearn_finite_support' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn._finite_support(internal) IS 'internal: the planner support of unlearn._finite (selectivity 1)';
CREATE FUNCTION unlearn._finite(VARIADIC "any") RETURNS boolean
AS 'MODULE_PATHNAME', 'unlearn_finite' LANGUAGE C IMMUTABLE PARALLEL SAFE
SUPPORT unlearn._finite_support;
COMMENT ON FUNCTION unlearn._finite("any") IS 'internal: whether every feature of a row is a finite number as the model reads it (nulls aside); under nulls skip, the rows where it is false are outside the model';
CREATE FUNCTION unlearn._row_raw(model text, raw float8[]) RETURNS float8[]
AS 'MODULE_PATHNAME', 'unlearn_row_raw' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100;
COMMENT ON FUNCTION unlearn._row_raw(text, float8[]) IS 'internal to training passes: raw features with each value that is not finite marked missing (NaN), for the moments pass of a model that imputes';
COMMENT ON FUNCTION unlearn._row_values("any") IS 'internal to training passes: a row''s features (numeric scalars and booleans, or one numeric array) as float8[], a null value or element as NaN (missing)';
COMMENT ON FUNCTION unlearn._row_x(text, float8[], float8[]) IS 'internal to training passes: raw features checked finite, or under a map that imputes with missing values marked, and mapped by a model''s row map (NULL: unmapped)';
CREATE FUNCTION unlearn._written_here(xmin xid) RETURNS boolean
AS 'MODULE_PATHNAME', 'unlearn_written_here' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn._written_here(xid) IS 'internal: whether a row version with that xmin was written by the current transaction (the policy model_readers hides an uncommitted fisher or noisy_gd release from grantees)';

ALTER POLICY model_readers ON unlearn.models
	USING (pg_catalog.pg_has_role(current_user, owner, 'USAGE')
		   OR (removal = 'immediate'
			   AND NOT (mechanism <> 'newton' AND unlearn._written_here(xmin))
			   AND EXISTS (SELECT 1 FROM unlearn.model_grants g
						   WHERE g.model = models.model AND g.privilege = 'read'
							 AND pg_catalog.pg_has_role(current_user, g.grantee, 'USAGE'))));
COMMENT ON COLUMN unlearn.models.noise IS 'the distribution of the objective noise b: gaussian, N(0, sigma^2 I), for (epsilon, delta)-certified removal; laplace, density ~ exp(-||b|| / sigma), for pure epsilon-certified removal with budget epsilon sigma';
COMMENT ON COLUMN unlearn.models.nats IS 'fisher: the KL bound each release aims at, in nats, against the exact minimiser of the rows left with the same noise; NULL for other mechanisms';
COMMENT ON COLUMN unlearn.models.nats_spent IS 'fisher: the sum of the KL bounds of every release after a change, over the model''s life: a bound on what all of them together leave about any row forgotten';
COMMENT ON COLUMN unlearn.ledger.nats IS 'fisher: the KL bound, in nats, of the release this statement published; NULL for other mechanisms and for lines that publish nothing new';

CREATE OR REPLACE VIEW unlearn.status WITH (security_barrier) AS
SELECT m.model, m.source, m.loss,
	   coalesce(array_length(m.classes, 1), 0) AS classes,
	   m.dims, m.rows, m.skipped, m.removed, m.inserted, m.retrains,
	   m.budget, m.spent,
	   greatest(m.budget - m.spent, 0) AS remaining,
	   CASE WHEN m.budget > 0 THEN round((100 * m.spent / m.budget)::numeric, 2) END AS pct_spent,
	   CASE WHEN m.state = 'ready' AND u.changed > 0 AND m.mechanism IN ('newton', 'fisher') AND m.loss <> 'squared' THEN
		   floor(least(greatest(m.budget - m.spent, 0) / nullif(u.bound / u.changed, 0), 1e15))::bigint
	   END AS deletions_left,
	   m.bound, m.on_exhausted, m.steps, m.state,
	   m.trained_at, m.updated_at,
	   m.state = 'ready' AND unlearn._resident(m.model) AS resident,
	   m.removal,
	   (SELECT pg_catalog.count(*) FROM unlearn.pending q WHERE q.model = m.model) AS pending,
	   m.mechanism,
	   CASE WHEN pg_catalog.pg_has_role(current_user, m.owner, 'USAGE') THEN c.cohorts END AS cohorts,
	   CASE WHEN pg_catalog.pg_has_role(current_user, m.owner, 'USAGE') THEN c.cohort_bytes END AS cohort_bytes,
	   m.noise,
	   CASE WHEN m.mechanism = 'fisher' THEN m.nats_spent END AS nats,
	   CASE
		   WHEN m.loss = 'squared' AND m.mechanism <> 'noisy_gd' AND m.budget = 0 THEN
			   'exact: a refit, 0 nats'
		   WHEN m.mechanism = 'fisher' THEN
			   pg_catalog.format('%s nats per release', m.nats)
		   WHEN m.mechanism = 'noisy_gd' THEN
			   pg_catalog.format('(%s, %s)-unlearning over every release', m.epsilon, m.delta)
		   WHEN m.budget = 0 THEN
			   'none: sigma = 0, every change retrains'
		   WHEN m.noise = 'laplace' THEN
			   pg_catalog.format('%s-certified removal (pure, delta = 0)', m.epsilon)
		   ELSE pg_catalog.format('(%s, %s)-certified removal', m.epsilon, m.delta)
	   END AS guarantee,
	   CASE WHEN m.state = 'ready' AND u.changed > 0 AND m.mechanism IN ('newton', 'fisher') AND m.loss <> 'squared' THEN
		   floor(sqrt(least(greatest(m.budget - m.spent, 0) / nullif(u.bound / u.changed, 0), 1e15)))::bigint
	   END AS largest_statement
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
COMMENT ON COLUMN unlearn.status.noise IS 'the distribution of the objective noise b: gaussian ((epsilon, delta)) or laplace (pure epsilon)';
COMMENT ON COLUMN unlearn.status.nats IS 'fisher: the KL bounds of every release after a change, summed over the model''s life (unlearn.ledger.nats has each); NULL for other mechanisms';
COMMENT ON COLUMN unlearn.status.guarantee IS 'what the model certifies about a row it forgot, in words: (epsilon, delta)- or pure epsilon-certified removal, (epsilon, delta)-unlearning over every release (noisy_gd), nats per release (fisher), an exact refit (least squares), or none';
COMMENT ON COLUMN unlearn.status.largest_statement IS 'about how many rows one statement may change before the next re-anchoring or retrain: a statement is one Newton step, whose bound grows up to k^2 times one row''s for k rows, so the square root of deletions_left; NULL where deletions_left is';

DROP FUNCTION unlearn_train(text, regclass, text, text[], text, float8, float8, float8, float8, jsonb, boolean, boolean, text, text);
DROP FUNCTION unlearn._train(text, regclass, text, text[], text, float8, float8, float8, float8, boolean, text, text, text, boolean, boolean, text, float8[], float8[], text, text[], text, text, float8, float8, float8, text);
DROP FUNCTION unlearn_budget(float8, float8, float8);

CREATE TYPE unlearn.summary AS (model text, rows bigint, classes integer, accuracy float8, r2 float8,
	budget float8, spent float8, state text, seconds float8);
COMMENT ON TYPE unlearn.summary IS 'what unlearn_train and unlearn_retrain return: the model, its rows and classes, its accuracy (classifiers) or R^2 (least squares) on its own rows, budget, spent, state and the seconds taken; unlearn.status has the rest';

CREATE FUNCTION unlearn._train(model text, source regclass, label text, features text[],
	loss text, lambda float8, sigma float8, epsilon float8, delta float8,
	intercept boolean, bound text, on_exhausted text, steps text,
	replace boolean, verbose boolean, preprocess text, centre float8[], spread float8[],
	nulls text, classes text[], removal text, mechanism text, noise float8, step_size float8,
	training_steps float8, cohort text, noise_distribution text, nats float8, filter text)
RETURNS unlearn.summary AS 'MODULE_PATHNAME', 'unlearn_train' LANGUAGE C VOLATILE;


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
	cohort text DEFAULT NULL,
	noise text DEFAULT 'gaussian',
	nats float8 DEFAULT NULL,
	filter text DEFAULT NULL)
RETURNS SETOF unlearn.summary
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
	-- a Noisy-GD model maps its rows by nothing computed from them
	SELECT t.* FROM unlearn._train_options($10) o,
		LATERAL unlearn._train($1, $2, $3, $4, $5, $6, $7, $8, $9, o.intercept, o.bound,
							   o.on_exhausted, o.steps, $11, $12,
							   CASE WHEN $13 = 'noisy_gd' AND NOT $10 ? 'preprocess' THEN 'none'
									ELSE o.preprocess END,
							   o.centre, o.spread, o.nulls, o.classes, o.removal, $13,
							   o.noise, o.step_size, o.training_steps, $14, $15, $16, $17) t;
$$;
COMMENT ON FUNCTION unlearn_train(text, regclass, text, text[], text, float8, float8, float8, float8, jsonb, boolean, boolean, text, text, text, float8, text)
IS 'train a removal-ready L2-regularised, loss-perturbed linear model on the rows of a table and return a summary (model, rows, classes, accuracy or r2 on its rows, budget, spent, state, seconds; unlearn.status has the rest); features are columns or expressions over the row such as log(income) (built-in immutable functions only); filter is a boolean expression over the row, by the rules of feature expressions, and the model reflects the rows where it is true; options is a JSON object of rarely changed settings: nulls (skip, impute or error), classes (a classifier''s declared labels), preprocess (standardize, declared with centre and spread, or none), removal (immediate or deferred), bound (taylor, guo or exact), on_exhausted (retrain or suspend), steps (statement or row), intercept (true or false), and for noisy_gd noise, step_size and training_steps, which replace the chosen ones; mechanism newton (the default), noisy_gd (Noisy-GD: a guarantee over every release, no state, noise and steps chosen from epsilon and delta; sigma is ignored) or fisher (no objective noise, sigma is ignored: each release after a change publishes the Newton step''s weights plus Gaussian noise shaped by the Hessian, scaled so that what it leaves about the rows forgotten is at most nats, default 1); cohort names a column whose values are cohorts (tenants, sites, sources): the model keeps each cohort''s statistics, and a statement that removes all of a cohort''s rows erases it from them without a step per row; by default the key of a table partitioned by LIST on one column ('''' for none); noise gaussian (the default: (epsilon, delta)-certified removal) or laplace (newton only: b with density proportional to exp(-||b|| / sigma), pure epsilon-certified removal with budget epsilon sigma)';
COMMENT ON FUNCTION unlearn._train(text, regclass, text, text[], text, float8, float8, float8, float8, boolean, text, text, text, boolean, boolean, text, float8[], float8[], text, text[], text, text, float8, float8, float8, text, text, float8, text) IS 'internal: unlearn_train''s implementation';

CREATE FUNCTION unlearn_budget(sigma float8, epsilon float8 DEFAULT 1, delta float8 DEFAULT 1e-4,
	noise text DEFAULT 'gaussian') RETURNS float8
AS 'MODULE_PATHNAME', 'unlearn_budget' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn_budget(float8, float8, float8, text) IS 'residual budget epsilon prime of objective noise of scale sigma: for gaussian noise at (epsilon, delta), by the analytic Gaussian mechanism; for laplace noise (density proportional to exp(-||b|| / sigma)) epsilon sigma, pure epsilon, delta unused';

CREATE FUNCTION unlearn._laplace_norms(dims integer, scale float8, draws integer) RETURNS float8[]
AS 'MODULE_PATHNAME', 'unlearn_laplace_norms' LANGUAGE C VOLATILE STRICT;
REVOKE EXECUTE ON FUNCTION unlearn._laplace_norms(integer, float8, integer) FROM PUBLIC;
COMMENT ON FUNCTION unlearn._laplace_norms(integer, float8, integer) IS 'internal: the norms of draws vectors of dims coordinates from the laplace objective noise sampler, for the test of its distribution (||b|| ~ Gamma(dims, scale))';
COMMENT ON COLUMN unlearn.models.mechanism IS 'newton: certified Newton removal with loss perturbation (exact for least squares); noisy_gd: Noisy-GD, whose changes run noisy steps on the rows after them and which keeps no state (see unlearn_privacy); fisher: Newton removal without loss perturbation, each release published with noise shaped by the Hessian and a KL bound in nats (exact for least squares)';

ALTER TYPE unlearn.plan ADD ATTRIBUTE statement_rows bigint;
COMMENT ON COLUMN unlearn.plan.statement_rows IS 'the most rows one statement may remove within that budget: a statement is one Newton step, whose bound grows up to k^2 times one row''s for k rows (Guo et al., Theorem 4)';
COMMENT ON COLUMN unlearn.status.deletions_left IS 'row deletions the remaining budget is expected to cover, one row per statement, before the next re-anchoring or retrain: remaining over the mean bound per changed row since the last one; NULL when the model is not ready, no row has changed since, or its removals cost nothing (squared loss)';

DROP FUNCTION unlearn_retrain(text, boolean);
DROP FUNCTION unlearn._retrain(text, boolean);
CREATE FUNCTION unlearn._retrain(model text, verbose boolean)
RETURNS unlearn.summary AS 'MODULE_PATHNAME', 'unlearn_retrain' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION unlearn._retrain(text, boolean) IS 'internal: unlearn_retrain''s implementation';
CREATE FUNCTION unlearn_retrain(model text, verbose boolean DEFAULT false)
RETURNS SETOF unlearn.summary
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT * FROM unlearn._retrain($1, $2);
$$;
COMMENT ON FUNCTION unlearn_retrain(text, boolean)
IS 'retrain a model from scratch on the current rows with fresh noise, resetting its spent budget; returns a summary (model, rows, classes, accuracy or r2 on its rows, budget, spent, state, seconds): unlearn.status has the rest';
