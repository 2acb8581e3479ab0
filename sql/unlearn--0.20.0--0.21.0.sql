-- unlearn 0.20.0 -> 0.21.0: "removal": "async" (writers queue their
-- changes, the maintenance worker applies them within unlearn.apply_delay
-- and the model serves the version of its last apply meanwhile; the
-- worker's failures in unlearn.models.apply_error; unlearn.status gains
-- pending_since and apply_error; unlearn_wait), and training passes compute
-- the features of a category() group in one lookup per row
-- (unlearn._category_values) instead of one expression per category.
\echo Use "ALTER EXTENSION unlearn UPDATE TO '0.21.0'" to load this file. \quit

CREATE FUNCTION unlearn._category_values(value anyelement, categories anyarray) RETURNS float8[]
AS 'MODULE_PATHNAME', 'unlearn_category_values' LANGUAGE C IMMUTABLE PARALLEL SAFE COST 10;
COMMENT ON FUNCTION unlearn._category_values(anyelement, anyarray) IS 'internal to training passes: the features of a category() group in one lookup, 1 for each category equal to the value and 0 for the others, then other (1 when none is equal or the value is null); text, integer and boolean values';

ALTER TABLE unlearn.models
	DROP CONSTRAINT models_removal_check,
	ADD CONSTRAINT models_removal_check CHECK (removal IN ('immediate', 'deferred', 'async')),
	ADD COLUMN apply_error text,
	ADD COLUMN apply_failures integer NOT NULL DEFAULT 0 CHECK (apply_failures >= 0),
	ADD COLUMN apply_failed_at timestamptz;
COMMENT ON COLUMN unlearn.models.removal IS 'immediate: the table''s statement triggers apply each change to the model in the changing transaction; deferred: its row triggers queue each change in unlearn.pending, and unlearn_apply_pending applies the queue (foreign partitions, Citus-style engines); the model withholds its weights while changes are queued; async: its row triggers queue each change, the maintenance worker applies the queue within unlearn.apply_delay, and the model serves the version of its last apply meanwhile';
COMMENT ON COLUMN unlearn.models.apply_error IS 'async: the error of the maintenance worker''s last failed apply, NULL after a successful one; the queue stays intact';
COMMENT ON COLUMN unlearn.models.apply_failures IS 'async: failed applies since the last successful one; after the last, at apply_failed_at, the worker waits 2^apply_failures seconds (at most unlearn.worker_naptime) before the next';

-- the queue: no foreign key (the extension deletes a model's entries with
-- it), contributions stored as they are
ALTER TABLE unlearn.pending DROP CONSTRAINT pending_model_fkey,
	ALTER COLUMN contribution SET STORAGE EXTERNAL,
	SET (toast_tuple_target = 8160);

DROP POLICY model_readers ON unlearn.models;
CREATE POLICY model_readers ON unlearn.models FOR SELECT
	USING (pg_catalog.pg_has_role(current_user, owner, 'USAGE')
		   OR (removal IN ('immediate', 'async')
			   AND NOT (mechanism <> 'newton' AND unlearn._written_here(xmin))
			   AND EXISTS (SELECT 1 FROM unlearn.model_grants g
						   WHERE g.model = models.model AND g.privilege = 'read'
							 AND pg_catalog.pg_has_role(current_user, g.grantee, 'USAGE'))));
COMMENT ON TABLE unlearn.pending IS 'row changes queued for deferred and async models (the option "removal" of unlearn_train): change -1 removes the row, +1 adds it; consumed by unlearn_apply_pending and, for async models, by the maintenance worker';

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
	   END AS largest_statement,
	   (SELECT pg_catalog.min(q.at) FROM unlearn.pending q WHERE q.model = m.model) AS pending_since,
	   m.apply_error
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
COMMENT ON COLUMN unlearn.status.pending IS 'row changes queued for a deferred or async model and not yet applied; while there are any, a deferred model withholds its weights and an async one serves the version of its last apply';
COMMENT ON COLUMN unlearn.status.pending_since IS 'when the oldest queued change of a deferred or async model was queued; NULL when none is';
COMMENT ON COLUMN unlearn.status.apply_error IS 'async: the error of the maintenance worker''s last failed apply of the queue, NULL after a successful one';

COMMENT ON FUNCTION unlearn_apply_pending(text)
IS 'apply the row changes queued for a deferred or async model in one certified step, as the statement triggers apply an immediate model''s, and delete them from the queue (the model''s owner or the table''s owner); it locks the table against writers while it runs';

CREATE FUNCTION unlearn._wait(model text, timeout float8)
RETURNS boolean AS 'MODULE_PATHNAME', 'unlearn_wait' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION unlearn._wait(text, float8) IS 'internal: the C function of unlearn_wait';
CREATE FUNCTION unlearn_wait(model text, timeout float8 DEFAULT 10)
RETURNS boolean
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT unlearn._wait($1, $2) $$;
COMMENT ON FUNCTION unlearn_wait(text, float8)
IS 'wait until the maintenance worker has applied every change queued for an async model before the call (committed), at most timeout seconds: true once they are applied (the erasure of their rows is then complete), false at the timeout; a role that may read the model''s status, in a READ COMMITTED transaction';

COMMENT ON FUNCTION unlearn_train(text, regclass, text, text[], text, float8, float8, float8, float8, jsonb, boolean, boolean, text, text, text, float8, text)
IS 'train a removal-ready L2-regularised, loss-perturbed linear model on the rows of a table and return a summary (model, rows, classes, accuracy or r2 on its rows, budget, spent, state, seconds; unlearn.status has the rest); features are columns or expressions over the row such as log(income) (built-in immutable functions only); filter is a boolean expression over the row, by the rules of feature expressions, and the model reflects the rows where it is true; options is a JSON object of rarely changed settings: nulls (skip, impute or error), classes (a classifier''s declared labels), preprocess (standardize, declared with centre and spread, or none), removal (immediate, deferred or async), bound (taylor, guo or exact), on_exhausted (retrain or suspend), steps (statement or row), intercept (true or false), and for noisy_gd noise, step_size and training_steps, which replace the chosen ones; mechanism newton (the default), noisy_gd (Noisy-GD: a guarantee over every release, no state, noise and steps chosen from epsilon and delta; sigma is ignored) or fisher (no objective noise, sigma is ignored: each release after a change publishes the Newton step''s weights plus Gaussian noise shaped by the Hessian, scaled so that what it leaves about the rows forgotten is at most nats, default 1); cohort names a column whose values are cohorts (tenants, sites, sources): the model keeps each cohort''s statistics, and a statement that removes all of a cohort''s rows erases it from them without a step per row; by default the key of a table partitioned by LIST on one column ('''' for none); noise gaussian (the default: (epsilon, delta)-certified removal) or laplace (newton only: b with density proportional to exp(-||b|| / sigma), pure epsilon-certified removal with budget epsilon sigma)';

-- every write of the catalog's models marks its transaction, which then
-- tells the other backends to read their kept definitions again
-- (src/store/catalog_generation.c)
CREATE FUNCTION unlearn._catalog_written() RETURNS trigger
AS 'MODULE_PATHNAME', 'unlearn_catalog_written' LANGUAGE C;
COMMENT ON FUNCTION unlearn._catalog_written() IS 'internal: the statement trigger on unlearn.models that tells other backends to read the models they keep again';
REVOKE EXECUTE ON FUNCTION unlearn._catalog_written() FROM PUBLIC;
CREATE TRIGGER catalog_written AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON unlearn.models
	FOR EACH STATEMENT EXECUTE FUNCTION unlearn._catalog_written();
