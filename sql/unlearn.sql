-- unlearn: certified machine unlearning inside PostgreSQL.
--
-- User-facing functions live in the schema the extension is created in
-- (normally public), so that SELECT unlearn_train(...) works with the
-- default search_path.  The catalog and the private helpers live in the
-- schema "unlearn", which this script creates.

\echo Use "CREATE EXTENSION unlearn" to load this file. \quit

CREATE SCHEMA unlearn;
GRANT USAGE ON SCHEMA unlearn TO PUBLIC;

-- The removal matrices live in shared memory set aside at start-up.
CREATE FUNCTION unlearn._require_preload() RETURNS void
AS 'MODULE_PATHNAME', 'unlearn_require_preload' LANGUAGE C;
SELECT unlearn._require_preload();

------------------------------------------------------------------------
-- Catalog
------------------------------------------------------------------------

-- The columns' values are checked where they are read (the library's
-- model_from_row refuses a row it does not accept), not by CHECK
-- constraints: only the extension writes this table, and PostgreSQL would
-- parse and plan every CHECK constraint again at each write of a model row,
-- which is each statement that changes a trained table.
CREATE TABLE unlearn.models (
	model		text PRIMARY KEY,
	owner		regrole NOT NULL DEFAULT current_user::regrole,
	source		regclass NOT NULL,
	label		text NOT NULL,
	features	text[] NOT NULL,
	feature_array boolean NOT NULL,
	column_types regtype[] NOT NULL,
	loss		text NOT NULL,
	classes		text[],
	dims		integer NOT NULL,
	intercept	boolean NOT NULL,
	scale		float8 NOT NULL,
	rows		bigint NOT NULL,
	trained_rows bigint NOT NULL,
	removed		bigint NOT NULL DEFAULT 0,
	inserted	bigint NOT NULL DEFAULT 0,
	retrains	integer NOT NULL DEFAULT 0,
	reanchors	integer NOT NULL DEFAULT 0,
	lambda		float8 NOT NULL,
	reg			float8 NOT NULL,
	sigma		float8 NOT NULL,
	epsilon		float8 NOT NULL,
	delta		float8 NOT NULL,
	budget		float8 NOT NULL,
	spent		float8 NOT NULL,
	bound		text NOT NULL,
	on_exhausted text NOT NULL,
	state		text NOT NULL DEFAULT 'ready',
	partitions	regclass[] NOT NULL DEFAULT '{}',
	steps		text NOT NULL,
	coef		float8[],
	trained_at	timestamptz NOT NULL,
	updated_at	timestamptz NOT NULL,
	preprocess	text NOT NULL DEFAULT 'none',
	centre		float8[],
	spread		float8[],
	nulls		text NOT NULL DEFAULT 'skip',
	skipped		bigint NOT NULL DEFAULT 0,
	expressions	boolean[],
	intercept_scaling float8 NOT NULL DEFAULT 1,
	spread_steps integer NOT NULL DEFAULT 1,
	classes_declared boolean NOT NULL DEFAULT false,
	removal		text NOT NULL DEFAULT 'immediate',
	mechanism	text NOT NULL DEFAULT 'newton',
	step_size	float8 NOT NULL DEFAULT 0,
	training_steps bigint NOT NULL DEFAULT 0,
	gd_steps	bigint NOT NULL DEFAULT 0,
	fewest_rows bigint NOT NULL DEFAULT 0,
	given_parameters integer NOT NULL DEFAULT 0,
	cohort		text,
	noise		text NOT NULL DEFAULT 'gaussian',
	nats		float8,
	nats_spent	float8 NOT NULL DEFAULT 0,
	filter		text,
	apply_error text,
	apply_failures integer NOT NULL DEFAULT 0,
	apply_failed_at timestamptz,
	taken_categories text[]
);
COMMENT ON COLUMN unlearn.models.filter IS 'the row filter: a boolean expression over the row (canonical text); the model reflects the rows where it is true; NULL: every row';
CREATE INDEX ON unlearn.models (source);

COMMENT ON TABLE unlearn.models IS 'one row per unlearn model: metadata, coefficients and removal budget';
COMMENT ON COLUMN unlearn.models.dims IS 'number of input features d (the intercept, when present, is one more coefficient)';
COMMENT ON COLUMN unlearn.models.scale IS 'row map: z = ((x - centre) / spread, intercept_scaling), x -> z / max(scale, ||z||); scale = sqrt(weights per class)';
COMMENT ON COLUMN unlearn.models.intercept_scaling IS 'the intercept''s coordinate before the row map divides by scale: 2 for models trained from 0.8.0, 1 before';
COMMENT ON COLUMN unlearn.models.spread_steps IS 'steps of the standardize spread grid per power of two: 4 for models trained from 0.8.0, 1 before';
COMMENT ON COLUMN unlearn.models.classes_declared IS 'true when the classes were declared (the option "classes" of unlearn_train, or a boolean label''s false and true) rather than taken from the rows: they never change, and a row with another label is refused';
COMMENT ON COLUMN unlearn.models.preprocess IS 'where centre and spread come from: standardize (mean and standard deviation of the rows the model reflects, on a power-of-two grid, kept so by retraining), declared (given at training) or none (the identity)';
COMMENT ON COLUMN unlearn.models.centre IS 'per feature column (one for an array column); NULL while a standardize model withholds its weights';
COMMENT ON COLUMN unlearn.models.features IS 'per feature: a column name, or the canonical text of an expression over the row (see expressions)';
COMMENT ON COLUMN unlearn.models.taken_categories IS 'the columns of features category(column), whose categories are taken from the rows: public like classes; a change after which a category has no row, or a row has a value that is no category, retrains the model, which takes them afresh; NULL: none';
COMMENT ON COLUMN unlearn.models.expressions IS 'per feature: true when it is an expression over the row (built-in immutable functions and operators only), false for a column; NULL: every feature is a column';
COMMENT ON COLUMN unlearn.models.rows IS 'rows the model reflects now';
COMMENT ON COLUMN unlearn.models.nulls IS 'error: a null in a model column is an error; skip: a row with a null in a model column is outside the model; impute: a missing feature value (null, or not a finite number) is the column''s centre, and a row with a null label is outside the model';
COMMENT ON COLUMN unlearn.models.skipped IS 'rows of the table outside the model because of a null (nulls = skip)';
COMMENT ON COLUMN unlearn.models.reg IS 'Lambda = lambda * trained_rows, frozen at (re)training';
COMMENT ON COLUMN unlearn.models.budget IS 'epsilon prime: the gradient-residual budget of the analytic Gaussian mechanism';
COMMENT ON COLUMN unlearn.models.reanchors IS 'times the Hessian was rebuilt at the current w and spent replaced by the measured residual (no change to w or b)';
COMMENT ON COLUMN unlearn.models.state IS 'ready: coef is released and certified; too few rows: the table holds fewer rows than weights (or none), coef is withheld until rows are inserted or unlearn_retrain; suspended: the budget ran out under on_exhausted = suspend, coef is withheld until unlearn_retrain';
COMMENT ON COLUMN unlearn.models.partitions IS 'the partitions of the table when its models were last (re)trained: a change retrains them';
COMMENT ON COLUMN unlearn.models.removal IS 'immediate: the table''s statement triggers apply each change to the model in the changing transaction; deferred: its row triggers queue each change in unlearn.pending, and unlearn_apply_pending applies the queue (foreign partitions, Citus-style engines); the model withholds its weights while changes are queued; async: its row triggers queue each change, the maintenance worker applies the queue within unlearn.apply_delay, and the model serves the version of its last apply meanwhile';
COMMENT ON COLUMN unlearn.models.apply_error IS 'async: the error of the maintenance worker''s last failed apply, NULL after a successful one; the queue stays intact';
COMMENT ON COLUMN unlearn.models.apply_failures IS 'async: failed applies since the last successful one; after the last, at apply_failed_at, the worker waits 2^apply_failures seconds (at most unlearn.worker_naptime) before the next';
COMMENT ON COLUMN unlearn.models.mechanism IS 'newton: certified Newton removal with loss perturbation (exact for least squares); noisy_gd: Noisy-GD, whose changes run noisy steps on the rows after them and which keeps no state (see unlearn_privacy); fisher: Newton removal without loss perturbation, each release published with noise shaped by the Hessian and a KL bound in nats (exact for least squares)';
COMMENT ON COLUMN unlearn.models.step_size IS 'noisy_gd: the step size eta, 1 / (1/4 + lambda); sigma is then the noise of a step, N(0, 2 eta sigma^2 I), and budget the deletion epsilon every change reaches';
COMMENT ON COLUMN unlearn.models.training_steps IS 'noisy_gd: the steps of a training from the stationary start';
COMMENT ON COLUMN unlearn.models.gd_steps IS 'noisy_gd: the steps run since the last training, its own included';
COMMENT ON COLUMN unlearn.models.given_parameters IS 'noisy_gd: which parameters unlearn_train was given (1 noise, 2 step_size, 4 training_steps) and every training keeps; the others are chosen afresh from the rows at each training';
COMMENT ON COLUMN unlearn.models.fewest_rows IS 'noisy_gd: the fewest rows the model reflected since its last training, the n of its accountant';
COMMENT ON COLUMN unlearn.models.cohort IS 'the column whose values are cohorts (unlearn_train''s cohort): the model keeps each cohort''s statistics in unlearn.cohorts, and a statement that removes all of a cohort''s rows erases it from them; NULL: no cohorts';
COMMENT ON COLUMN unlearn.models.noise IS 'the distribution of the objective noise b: gaussian, N(0, sigma^2 I), for (epsilon, delta)-certified removal; laplace, density ~ exp(-||b|| / sigma), for pure epsilon-certified removal with budget epsilon sigma';
COMMENT ON COLUMN unlearn.models.nats IS 'fisher: the KL bound each release aims at, in nats, against the exact minimiser of the rows left with the same noise; NULL for other mechanisms';
COMMENT ON COLUMN unlearn.models.nats_spent IS 'fisher: the sum of the KL bounds of every release after a change, over the model''s life: a bound on what all of them together leave about any row forgotten';
COMMENT ON COLUMN unlearn.models.spent IS 'beta: certified upper bound on the gradient residual norm (l2 over one-vs-rest classes)';

-- Secret and data-derived state: noise b, anchor w0, the spent budget and
-- Hessian weight sum per class.  Only the model owner (and superusers) can
-- see a row.  The matrices built from the rows (the Cholesky factors of H
-- and K') are in shared memory only (src/state_store.c), tagged with the
-- version of this row that was written with them.
CREATE TABLE unlearn.model_state (
	model		text PRIMARY KEY REFERENCES unlearn.models ON DELETE CASCADE ON UPDATE CASCADE,
	owner		regrole NOT NULL DEFAULT current_user::regrole,
	noise		bytea NOT NULL,
	anchor		bytea NOT NULL,
	gram_bound	float8 NOT NULL,
	class_spent float8[] NOT NULL,
	weight_sum	float8[] NOT NULL,
	column_sums float8[],
	class_rows	bigint[],
	weights		bytea,
	release_scale float8
);
ALTER TABLE unlearn.model_state ALTER COLUMN noise SET STORAGE EXTERNAL;
ALTER TABLE unlearn.model_state ALTER COLUMN anchor SET STORAGE EXTERNAL;
ALTER TABLE unlearn.model_state ALTER COLUMN weights SET STORAGE EXTERNAL;
COMMENT ON TABLE unlearn.model_state IS 'owner-only removal state: noise b, anchor w0, lambda_max bound, spent budget and Hessian weight sum C per class, the column sums of the standardize map, the rows per label of a classifier, and for fisher the secret weights w and the scale c of the published noise';

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

CREATE TABLE unlearn.ledger (
	id			bigserial PRIMARY KEY,
	model		text NOT NULL,
	owner		regrole NOT NULL DEFAULT current_user::regrole,
	at			timestamptz NOT NULL DEFAULT clock_timestamp(),
	xact		xid8 NOT NULL DEFAULT pg_current_xact_id(),
	operation	text NOT NULL,
	rows_removed bigint NOT NULL DEFAULT 0,
	rows_added	bigint NOT NULL DEFAULT 0,
	bound		float8 NOT NULL DEFAULT 0,
	spent		float8 NOT NULL,
	retrained	boolean NOT NULL DEFAULT false,
	reanchored	boolean NOT NULL DEFAULT false,
	nats		float8
);
CREATE INDEX ON unlearn.ledger (model, id);
COMMENT ON TABLE unlearn.ledger IS 'one row per statement and model: what was removed or added and the residual bound spent; never feature values';
COMMENT ON COLUMN unlearn.ledger.nats IS 'fisher: the KL bound, in nats, of the release this statement published; NULL for other mechanisms and for lines that publish nothing new';

-- Who may read a model besides its owner: 'read' (its weights and
-- predictions, its catalog row, and everything 'monitor' gives) or
-- 'monitor' (its line in unlearn.status and its ledger rows).  Written by
-- unlearn_grant and unlearn_revoke only; a replaced or dropped model loses
-- its grants.
CREATE TABLE unlearn.model_grants (
	model		text NOT NULL REFERENCES unlearn.models ON DELETE CASCADE ON UPDATE CASCADE,
	owner		regrole NOT NULL,
	grantee		regrole NOT NULL,
	privilege	text NOT NULL CHECK (privilege IN ('read', 'monitor')),
	granted_at	timestamptz NOT NULL DEFAULT clock_timestamp(),
	PRIMARY KEY (model, grantee, privilege)
);
COMMENT ON TABLE unlearn.model_grants IS 'per-model read grants (unlearn_grant): read gives the weights, predictions and everything monitor gives; monitor gives the status line and the ledger rows';

-- The changes queued for models trained with "removal": "deferred" or
-- "async": one row per changed row of the table, written by the row
-- trigger unlearn._defer() and consumed (applied, then deleted) by
-- unlearn_apply_pending or the maintenance worker in one transaction.  A
-- contribution is the row as the model decodes it (its features as float8
-- and its label), never the table's other columns; NULL for a row outside
-- the model for a null.  Only the model's owner (who may read those
-- columns of the table) and superusers can see a row.  The entries of a
-- model go with it (the extension deletes them): no foreign key, whose
-- check would lock the model's row for every queued row.  A contribution
-- is stored as it is, in the row while it fits a page (doubles do not
-- compress).  change is -1 or 1, checked where the library reads it (a
-- CHECK constraint would be planned again at each queued row).
CREATE TABLE unlearn.pending (
	id			bigserial PRIMARY KEY,
	model		text NOT NULL,
	owner		regrole NOT NULL,
	at			timestamptz NOT NULL DEFAULT clock_timestamp(),
	change		smallint NOT NULL,
	contribution bytea
) WITH (toast_tuple_target = 8160);
ALTER TABLE unlearn.pending ALTER COLUMN contribution SET STORAGE EXTERNAL;
CREATE INDEX ON unlearn.pending (model, id);
COMMENT ON TABLE unlearn.pending IS 'row changes queued for deferred and async models (the option "removal" of unlearn_train): change -1 removes the row, +1 adds it; consumed by unlearn_apply_pending and, for async models, by the maintenance worker';

-- The catalog belongs to the extension: its C functions write it as the
-- extension's owner after checking the caller's rights (src/privilege.c).
-- Other roles may only read, and only what row-level security lets
-- through: the catalog rows of the models they own or were granted
-- 'read' on, the ledger rows of the models they own or were granted
-- anything on, the grants they gave or hold, and the secret state of
-- the models they own.  The C functions check the same grants.
ALTER TABLE unlearn.models ENABLE ROW LEVEL SECURITY;
-- A grantee reads a deferred model through the functions only, which
-- withhold its weights while changes are queued (deferred.c).
CREATE FUNCTION unlearn._finite_support(internal) RETURNS internal
AS 'MODULE_PATHNAME', 'unlearn_finite_support' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn._finite_support(internal) IS 'internal: the planner support of unlearn._finite (selectivity 1)';
CREATE FUNCTION unlearn._finite(VARIADIC "any") RETURNS boolean
AS 'MODULE_PATHNAME', 'unlearn_finite' LANGUAGE C IMMUTABLE PARALLEL SAFE
SUPPORT unlearn._finite_support;
COMMENT ON FUNCTION unlearn._finite("any") IS 'internal: whether every feature of a row is a finite number as the model reads it (nulls aside); under nulls skip, the rows where it is false are outside the model';
CREATE FUNCTION unlearn._written_here(xmin xid) RETURNS boolean
AS 'MODULE_PATHNAME', 'unlearn_written_here' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn._written_here(xid) IS 'internal: whether a row version with that xmin was written by the current transaction (the policy model_readers hides an uncommitted fisher or noisy_gd release from grantees)';
-- a grantee sees a fisher or Noisy-GD model's weights once the change that
-- drew them commits: a release read before and rolled back would be a
-- sample of fresh noise that no bound counts
CREATE POLICY model_readers ON unlearn.models FOR SELECT
	USING (pg_catalog.pg_has_role(current_user, owner, 'USAGE')
		   OR (removal IN ('immediate', 'async')
			   AND NOT (mechanism <> 'newton' AND unlearn._written_here(xmin))
			   AND EXISTS (SELECT 1 FROM unlearn.model_grants g
						   WHERE g.model = models.model AND g.privilege = 'read'
							 AND pg_catalog.pg_has_role(current_user, g.grantee, 'USAGE'))));
ALTER TABLE unlearn.model_state ENABLE ROW LEVEL SECURITY;
CREATE POLICY state_owner ON unlearn.model_state FOR SELECT
	USING (pg_catalog.pg_has_role(current_user, owner, 'USAGE'));
ALTER TABLE unlearn.cohorts ENABLE ROW LEVEL SECURITY;
CREATE POLICY cohorts_owner ON unlearn.cohorts FOR SELECT
	USING (pg_catalog.pg_has_role(current_user, owner, 'USAGE'));
ALTER TABLE unlearn.ledger ENABLE ROW LEVEL SECURITY;
CREATE POLICY ledger_readers ON unlearn.ledger FOR SELECT
	USING (pg_catalog.pg_has_role(current_user, owner, 'USAGE')
		   OR EXISTS (SELECT 1 FROM unlearn.model_grants g
					  WHERE g.model = ledger.model AND g.owner = ledger.owner
						AND pg_catalog.pg_has_role(current_user, g.grantee, 'USAGE')));
ALTER TABLE unlearn.model_grants ENABLE ROW LEVEL SECURITY;
CREATE POLICY grant_parties ON unlearn.model_grants FOR SELECT
	USING (pg_catalog.pg_has_role(current_user, owner, 'USAGE')
		   OR pg_catalog.pg_has_role(current_user, grantee, 'USAGE'));
ALTER TABLE unlearn.pending ENABLE ROW LEVEL SECURITY;
CREATE POLICY pending_owner ON unlearn.pending FOR SELECT
	USING (pg_catalog.pg_has_role(current_user, owner, 'USAGE'));

REVOKE ALL ON unlearn.models, unlearn.model_state, unlearn.ledger, unlearn.model_grants,
	unlearn.pending, unlearn.cohorts FROM PUBLIC;
REVOKE ALL ON SEQUENCE unlearn.ledger_id_seq, unlearn.pending_id_seq FROM PUBLIC;
GRANT SELECT ON unlearn.models, unlearn.model_state, unlearn.ledger, unlearn.model_grants,
	unlearn.pending, unlearn.cohorts TO PUBLIC;
-- readable so that a non-superuser's pg_dump can save them
GRANT SELECT ON SEQUENCE unlearn.ledger_id_seq, unlearn.pending_id_seq TO PUBLIC;

CREATE FUNCTION unlearn._resident(model text) RETURNS boolean
AS 'MODULE_PATHNAME', 'unlearn_resident' LANGUAGE C STABLE STRICT;

CREATE VIEW unlearn.status WITH (security_barrier) AS
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
GRANT SELECT ON unlearn.status TO PUBLIC;
COMMENT ON VIEW unlearn.status IS 'one line per model the caller owns or holds a grant on: rows (and rows skipped for a null), removals, budget left, an estimate of the row changes left before the next re-anchoring or retrain, and whether its removal matrices are in shared memory (resident; otherwise its next change rebuilds them)';
COMMENT ON COLUMN unlearn.status.pending IS 'row changes queued for a deferred or async model and not yet applied; while there are any, a deferred model withholds its weights and an async one serves the version of its last apply';
COMMENT ON COLUMN unlearn.status.pending_since IS 'when the oldest queued change of a deferred or async model was queued; NULL when none is';
COMMENT ON COLUMN unlearn.status.apply_error IS 'async: the error of the maintenance worker''s last failed apply of the queue, NULL after a successful one';
COMMENT ON COLUMN unlearn.status.cohorts IS 'cohorts whose statistics the model keeps (unlearn_train''s cohort), 0 without a cohort column; the rows of the others (past unlearn.cohort_memory, or new since the last training) are forgotten row by row; NULL for a role that does not own the model';
COMMENT ON COLUMN unlearn.status.cohort_bytes IS 'bytes of the statistics the model keeps for its cohorts (bounded by unlearn.cohort_memory)';
COMMENT ON COLUMN unlearn.status.deletions_left IS 'row deletions the remaining budget is expected to cover, one row per statement, before the next re-anchoring or retrain: remaining over the mean bound per changed row since the last one; NULL when the model is not ready, no row has changed since, or its removals cost nothing (squared loss)';
COMMENT ON COLUMN unlearn.status.noise IS 'the distribution of the objective noise b: gaussian ((epsilon, delta)) or laplace (pure epsilon)';
COMMENT ON COLUMN unlearn.status.nats IS 'fisher: the KL bounds of every release after a change, summed over the model''s life (unlearn.ledger.nats has each); NULL for other mechanisms';
COMMENT ON COLUMN unlearn.status.guarantee IS 'what the model certifies about a row it forgot, in words: (epsilon, delta)- or pure epsilon-certified removal, (epsilon, delta)-unlearning over every release (noisy_gd), nats per release (fisher), an exact refit (least squares), or none';
COMMENT ON COLUMN unlearn.status.largest_statement IS 'about how many rows one statement may change before the next re-anchoring or retrain: a statement is one Newton step, whose bound grows up to k^2 times one row''s for k rows, so the square root of deletions_left; NULL where deletions_left is';

-- Progress of the training and re-anchoring running now, one row per
-- backend (src/progress.c), as pg_stat_progress_vacuum shows VACUUM.
CREATE FUNCTION unlearn._progress(OUT pid integer, OUT datid oid, OUT role oid,
	OUT model text, OUT relid oid, OUT command text, OUT phase text,
	OUT pass integer, OUT rows_done bigint, OUT rows_total bigint,
	OUT iteration integer, OUT classes integer, OUT classes_converged integer,
	OUT gradient_norm float8, OUT started timestamptz, OUT phase_started timestamptz)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'unlearn_progress' LANGUAGE C VOLATILE;
CREATE VIEW unlearn.progress AS
SELECT p.pid, d.datname, p.role::regrole AS role, p.model,
	   CASE WHEN d.datname = pg_catalog.current_database() THEN p.relid::regclass END AS source,
	   p.command, p.phase, p.pass, p.rows_done, p.rows_total,
	   round(100 * p.rows_done::numeric / nullif(p.rows_total, 0), 1) AS pct_pass,
	   p.iteration, p.classes, p.classes_converged, p.gradient_norm,
	   p.started, pg_catalog.clock_timestamp() - p.started AS elapsed, p.phase_started
FROM unlearn._progress() p
LEFT JOIN pg_catalog.pg_database d ON d.oid = p.datid;
GRANT SELECT ON unlearn.progress TO PUBLIC;
COMMENT ON VIEW unlearn.progress IS 'one line per session training, retraining or re-anchoring a model now: the phase, the pass over the table, the rows it has read, Newton''s iteration and gradient norm; the figures that depend on the rows are shown to the model owner''s roles only, the model, table, command, phase and times also to pg_read_all_stats, and the pid and database to every role';
COMMENT ON COLUMN unlearn.progress.command IS 'training (unlearn_train), retraining (unlearn_retrain, or a retrain after a change), re-anchoring, cohort erasure (measuring the residual after a cohort left), class census (a model that releases nothing lists its classes), or audit (unlearn_audit: inserting canaries, deleting canaries, scoring canaries, training shadow models, relearning)';
COMMENT ON COLUMN unlearn.progress.phase IS 'waiting for table lock, census, column moments, gradient and Hessian (a Newton pass), gradient (a pass whose Hessian would not be used), or Gram matrix';
COMMENT ON COLUMN unlearn.progress.rows_done IS 'rows of the model the current pass has read so far, counted by the backend and its parallel workers in batches of 1024 (none during the census)';
COMMENT ON COLUMN unlearn.progress.rows_total IS 'rows the model reflects, known after the census (the passes read exactly these)';
COMMENT ON COLUMN unlearn.progress.gradient_norm IS 'after each Newton pass: the largest gradient norm of the classes still iterating (of all classes once none is)';

-- pg_dump saves the catalog with the tables.  A role dumps the models it
-- may act for (all of them for a superuser), so that a dump holds each
-- model with its state, its grants and its ledger; the sequence goes whole.
SELECT pg_catalog.pg_extension_config_dump('unlearn.models',
	'WHERE pg_catalog.pg_has_role(owner, ''USAGE'')');
SELECT pg_catalog.pg_extension_config_dump('unlearn.model_state',
	'WHERE pg_catalog.pg_has_role(owner, ''USAGE'')');
SELECT pg_catalog.pg_extension_config_dump('unlearn.ledger',
	'WHERE pg_catalog.pg_has_role(owner, ''USAGE'')');
SELECT pg_catalog.pg_extension_config_dump('unlearn.model_grants',
	'WHERE pg_catalog.pg_has_role(owner, ''USAGE'')');
SELECT pg_catalog.pg_extension_config_dump('unlearn.ledger_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('unlearn.pending',
	'WHERE pg_catalog.pg_has_role(owner, ''USAGE'')');
SELECT pg_catalog.pg_extension_config_dump('unlearn.pending_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('unlearn.cohorts',
	'WHERE pg_catalog.pg_has_role(owner, ''USAGE'')');

------------------------------------------------------------------------
-- Private C functions
------------------------------------------------------------------------

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

CREATE FUNCTION unlearn._retrain(model text, verbose boolean)
RETURNS unlearn.summary AS 'MODULE_PATHNAME', 'unlearn_retrain' LANGUAGE C VOLATILE STRICT;

CREATE FUNCTION unlearn._maintain() RETURNS trigger
AS 'MODULE_PATHNAME', 'unlearn_maintain_trigger' LANGUAGE C;

CREATE FUNCTION unlearn._forbid_truncate() RETURNS trigger
AS 'MODULE_PATHNAME', 'unlearn_truncate_trigger' LANGUAGE C;

CREATE FUNCTION unlearn._defer() RETURNS trigger
AS 'MODULE_PATHNAME', 'unlearn_defer_trigger' LANGUAGE C;
CREATE FUNCTION unlearn._shard_queue() RETURNS trigger
AS 'MODULE_PATHNAME', 'unlearn_shard_queue_trigger' LANGUAGE C;

-- every write of the catalog's models marks its transaction, which then
-- tells the other backends to read their kept definitions again
-- (src/store/catalog_generation.c)
CREATE FUNCTION unlearn._catalog_written() RETURNS trigger
AS 'MODULE_PATHNAME', 'unlearn_catalog_written' LANGUAGE C;
COMMENT ON FUNCTION unlearn._catalog_written() IS 'internal: the statement trigger on unlearn.models that tells other backends to read the models they keep again';
REVOKE EXECUTE ON FUNCTION unlearn._catalog_written() FROM PUBLIC;
CREATE TRIGGER catalog_written AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON unlearn.models
	FOR EACH STATEMENT EXECUTE FUNCTION unlearn._catalog_written();

CREATE FUNCTION unlearn._apply_pending(model text)
RETURNS void AS 'MODULE_PATHNAME', 'unlearn_apply_pending' LANGUAGE C VOLATILE STRICT;

CREATE FUNCTION unlearn._on_sql_drop() RETURNS event_trigger
AS 'MODULE_PATHNAME', 'unlearn_on_sql_drop' LANGUAGE C;
CREATE FUNCTION unlearn._on_ddl_end() RETURNS event_trigger
AS 'MODULE_PATHNAME', 'unlearn_on_ddl_end' LANGUAGE C;

REVOKE EXECUTE ON FUNCTION unlearn._maintain(), unlearn._forbid_truncate(), unlearn._defer(),
	unlearn._shard_queue(), unlearn._on_sql_drop(), unlearn._on_ddl_end() FROM PUBLIC;

CREATE EVENT TRIGGER unlearn_sql_drop ON sql_drop
	EXECUTE FUNCTION unlearn._on_sql_drop();
CREATE EVENT TRIGGER unlearn_ddl_end ON ddl_command_end
	WHEN TAG IN ('ALTER TABLE', 'CREATE TABLE', 'CREATE FOREIGN TABLE', 'CREATE TRIGGER',
				 'ALTER TRIGGER')
	EXECUTE FUNCTION unlearn._on_ddl_end();

------------------------------------------------------------------------
-- User-facing functions
------------------------------------------------------------------------

CREATE TYPE unlearn.train_options AS (
	intercept boolean,
	bound text,
	on_exhausted text,
	steps text,
	preprocess text,
	centre float8[],
	spread float8[],
	nulls text,
	classes text[],
	removal text,
	noise float8,
	step_size float8,
	training_steps float8);
COMMENT ON TYPE unlearn.train_options IS 'internal: unlearn_train''s options with their defaults filled in (unlearn._train_options)';

CREATE FUNCTION unlearn._train_options(options jsonb)
RETURNS unlearn.train_options AS 'MODULE_PATHNAME', 'unlearn_train_options' LANGUAGE C IMMUTABLE;
COMMENT ON FUNCTION unlearn._train_options(jsonb) IS 'internal: checks unlearn_train''s options by name and JSON type and fills in the defaults';


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
IS 'train a removal-ready L2-regularised, loss-perturbed linear model on the rows of a table and return a summary (model, rows, classes, accuracy or r2 on its rows, budget, spent, state, seconds; unlearn.status has the rest); features are columns or expressions over the row such as log(income) (built-in immutable functions only); filter is a boolean expression over the row, by the rules of feature expressions, and the model reflects the rows where it is true; options is a JSON object of rarely changed settings: nulls (skip, impute or error), classes (a classifier''s declared labels), preprocess (standardize, declared with centre and spread, or none), removal (immediate, deferred or async), bound (taylor, guo or exact), on_exhausted (retrain or suspend), steps (statement or row), intercept (true or false), and for noisy_gd noise, step_size and training_steps, which replace the chosen ones; mechanism newton (the default), noisy_gd (Noisy-GD: a guarantee over every release, no state, noise and steps chosen from epsilon and delta; sigma is ignored) or fisher (no objective noise, sigma is ignored: each release after a change publishes the Newton step''s weights plus Gaussian noise shaped by the Hessian, scaled so that what it leaves about the rows forgotten is at most nats, default 1); cohort names a column whose values are cohorts (tenants, sites, sources): the model keeps each cohort''s statistics, and a statement that removes all of a cohort''s rows erases it from them without a step per row; by default the key of a table partitioned by LIST on one column ('''' for none); noise gaussian (the default: (epsilon, delta)-certified removal) or laplace (newton only: b with density proportional to exp(-||b|| / sigma), pure epsilon-certified removal with budget epsilon sigma)';
COMMENT ON FUNCTION unlearn._train(text, regclass, text, text[], text, float8, float8, float8, float8, boolean, text, text, text, boolean, boolean, text, float8[], float8[], text, text[], text, text, float8, float8, float8, text, text, float8, text) IS 'internal: unlearn_train''s implementation';

CREATE FUNCTION unlearn_retrain(model text, verbose boolean DEFAULT false)
RETURNS SETOF unlearn.summary
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT * FROM unlearn._retrain($1, $2);
$$;
COMMENT ON FUNCTION unlearn_retrain(text, boolean)
IS 'retrain a model from scratch on the current rows with fresh noise, resetting its spent budget; returns a summary (model, rows, classes, accuracy or r2 on its rows, budget, spent, state, seconds): unlearn.status has the rest';

CREATE FUNCTION unlearn_apply_pending(model text)
RETURNS SETOF unlearn.status
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT unlearn._apply_pending($1);
	SELECT * FROM unlearn.status s WHERE s.model = $1;
$$;
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

CREATE FUNCTION unlearn_drop(model text) RETURNS void
AS 'MODULE_PATHNAME', 'unlearn_drop' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION unlearn_drop(text) IS 'drop a model, and the table''s triggers with its last model';

CREATE FUNCTION unlearn_grant(model text, grantee regrole, privilege text DEFAULT 'read')
RETURNS void
AS 'MODULE_PATHNAME', 'unlearn_grant' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION unlearn_grant(text, regrole, text) IS 'let a role (and its members) read a model (owner only): read gives its weights, predictions, scores, evaluation and catalog row, and everything monitor gives; monitor gives its line in unlearn.status and its ledger rows.  A grantee who compares the model before and after a deletion can reconstruct the deleted row: grant only to roles trusted with the training data';

CREATE FUNCTION unlearn_revoke(model text, grantee regrole, privilege text DEFAULT 'read')
RETURNS void
AS 'MODULE_PATHNAME', 'unlearn_revoke' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION unlearn_revoke(text, regrole, text) IS 'take back a grant of unlearn_grant (owner only)';

CREATE FUNCTION unlearn._check_read(model text, privilege text) RETURNS regclass
AS 'MODULE_PATHNAME', 'unlearn_check_read' LANGUAGE C STABLE STRICT PARALLEL SAFE;

CREATE FUNCTION unlearn_ledger(model text) RETURNS SETOF unlearn.ledger
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM unlearn._check_read(model, 'monitor');
	RETURN QUERY SELECT l.* FROM unlearn.ledger l WHERE l.model = unlearn_ledger.model ORDER BY l.id;
END
$$;
COMMENT ON FUNCTION unlearn_ledger(text) IS 'the ledger rows of a model, oldest first: one per statement that changed it, with the rows removed and added and the bound spent (owner, and roles granted read or monitor)';

CREATE FUNCTION unlearn_coef(model text) RETURNS float8[]
AS 'MODULE_PATHNAME', 'unlearn_coef' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION unlearn_coef(text) IS 'weights w in the model''s own (scaled) feature space, intercept last; one row per class for one-vs-rest';

CREATE FUNCTION unlearn_predict(model text, x float8[]) RETURNS float8
AS 'MODULE_PATHNAME', 'unlearn_predict' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn_predict(text, float8[]) IS 'probability of the positive class (logistic), value (squared) or top-class probability (one-vs-rest)';

CREATE FUNCTION unlearn_predict_class(model text, x float8[]) RETURNS text
AS 'MODULE_PATHNAME', 'unlearn_predict_class' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn_predict_class(text, float8[]) IS 'predicted label, as text';

CREATE FUNCTION unlearn_predict_proba(model text, x float8[]) RETURNS float8[]
AS 'MODULE_PATHNAME', 'unlearn_predict_proba' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn_predict_proba(text, float8[]) IS 'probability of every class, in the order of unlearn.models.classes (one-vs-rest: the class sigmoids normalised to sum 1)';

CREATE TYPE unlearn.scored AS (label text, score float8);
COMMENT ON TYPE unlearn.scored IS 'a prediction: the predicted label (NULL for squared loss) and the score of unlearn_predict';

CREATE FUNCTION unlearn_score_row(model text, r record) RETURNS unlearn.scored
AS 'MODULE_PATHNAME', 'unlearn_score_row' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn_score_row(text, record) IS 'predicted label and score of a whole row that has the model''s columns, read with one deform: SELECT t.id, s.* FROM t, unlearn_score_row(''m'', t) s';

CREATE TYPE unlearn.keyed_score AS (key jsonb, label text, score float8);
COMMENT ON TYPE unlearn.keyed_score IS 'a row of unlearn_score: the primary key (jsonb: each column''s text), the predicted label and the score';

CREATE FUNCTION unlearn._score_columns(model text, key_columns text[], VARIADIC columns "any")
RETURNS unlearn.keyed_score
AS 'MODULE_PATHNAME', 'unlearn_score_columns' LANGUAGE C STABLE PARALLEL SAFE;

CREATE FUNCTION unlearn_score(model text, source regclass DEFAULT NULL)
RETURNS TABLE (key jsonb, label text, score float8)
AS 'MODULE_PATHNAME', 'unlearn_score_by_key' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION unlearn_score(text, regclass) IS 'the primary key (jsonb: each column''s text), predicted label and score of every row of a table (default: the model''s source) that the caller may read, in one scan';

CREATE TYPE unlearn.evaluation AS (
	rows bigint, skipped bigint,
	accuracy float8, log_loss float8, roc_auc float8, f1 float8,
	classes text[], class_precision float8[], class_recall float8[],
	class_f1 float8[], confusion bigint[],
	r2 float8, rmse float8, mae float8);
COMMENT ON TYPE unlearn.evaluation IS 'what unlearn_evaluate returns';
CREATE FUNCTION unlearn_evaluate(model text, source regclass DEFAULT NULL)
RETURNS unlearn.evaluation
AS 'MODULE_PATHNAME', 'unlearn_evaluate' LANGUAGE C STABLE;
COMMENT ON FUNCTION unlearn_evaluate(text, regclass) IS 'held-out metrics of a model on the labelled rows of a table (default: its source): accuracy, log-loss, ROC AUC (one-vs-rest macro), macro F1, per-class precision, recall and F1 and the confusion matrix (rows: true class, columns: predicted) for a classifier; R2, RMSE and MAE for squared loss; NULL where a metric is undefined (ROC AUC when a class has no row or every row, R2 for a constant target)';

CREATE TYPE unlearn.verification AS (residual float8, spent float8, budget float8,
	certified boolean, retrain_distance float8, accuracy float8, retrain_accuracy float8);
COMMENT ON TYPE unlearn.verification IS 'what unlearn_verify returns';
CREATE FUNCTION unlearn_verify(model text)
RETURNS SETOF unlearn.verification
AS 'MODULE_PATHNAME', 'unlearn_verify' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION unlearn_verify(text) IS 'exact gradient residual against spent, distance to and accuracy of a fresh retrain with the same noise (owner only; one pass over the table); for a noisy_gd model the residual is NULL, certified says that every change reached the deletion epsilon (spent <= budget), and the retrain is noiseless';

CREATE TYPE unlearn.privacy AS (
	model text,
	mechanism text,
	dp_epsilon float8,
	dp_delta float8,
	deletion_epsilon float8,
	deletion_delta float8,
	deletion_target float8,
	noise float8,
	step_size float8,
	training_steps bigint,
	steps bigint,
	fewest_rows bigint);
COMMENT ON TYPE unlearn.privacy IS 'what unlearn_privacy returns: a model''s guarantees, and for Noisy-GD the parameters and accounting they come from';

CREATE FUNCTION unlearn_privacy(model text)
RETURNS unlearn.privacy
AS 'MODULE_PATHNAME', 'unlearn_privacy' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION unlearn_privacy(text) IS 'a model''s guarantees (owner and grantees): for noisy_gd the (epsilon, delta)-DP of the rows present and the data-deletion (epsilon, delta) reached by every change since training, over all its releases, from its Renyi accountant; for newton the certified-removal (epsilon, delta) of one release';

CREATE FUNCTION unlearn._renyi_epsilon(lambda float8, step_size float8, noise float8,
	n float8, rows_changed float8, steps float8, delta float8,
	OUT epsilon float8, OUT alpha float8)
AS 'MODULE_PATHNAME', 'unlearn_renyi_epsilon' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn._renyi_epsilon(float8, float8, float8, float8, float8, float8, float8) IS 'internal: Noisy-GD''s accountant, the least epsilon over its orders of exp(-lambda eta K / alpha) S^2 eps0(alpha) (test/python/check_renyi.py)';

CREATE FUNCTION unlearn._renyi_steps(lambda float8, step_size float8, noise float8,
	n float8, rows_changed float8, epsilon float8, delta float8)
RETURNS bigint
AS 'MODULE_PATHNAME', 'unlearn_renyi_steps' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn._renyi_steps(float8, float8, float8, float8, float8, float8, float8) IS 'internal: K(S), the steps after which S changed rows reach the deletion epsilon; NULL when none does';

CREATE FUNCTION unlearn._renyi_noise(lambda float8, n float8, epsilon float8, delta float8)
RETURNS float8
AS 'MODULE_PATHNAME', 'unlearn_renyi_noise' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn._renyi_noise(float8, float8, float8, float8) IS 'internal: the least Noisy-GD noise whose training DP for one row is within epsilon; NULL when no noise up to 1e6 is';

CREATE TYPE unlearn.audit AS (
	population text,
	rows integer,
	auc float8,
	tpr_at_0_1 float8, tpr_at_0_1_low float8, tpr_at_0_1_high float8,
	tpr_at_1 float8, tpr_at_1_low float8, tpr_at_1_high float8,
	epsilon_lower_bound float8,
	ceiling_at_0_1 float8, ceiling_at_1 float8,
	error float8, mean_confidence float8, mean_entropy float8,
	relearn_passes integer,
	release_cosine float8);
COMMENT ON TYPE unlearn.audit IS 'what unlearn_audit returns: per population of canaries (present, deleted, never seen, retrained) and of the rows of forget the attack''s AUC and its TPR at FPR 0.1% and 1% with 95% Clopper-Pearson intervals, the lower bound on epsilon they prove, the certificate''s ceilings, the read-outs (error, confidence, entropy, and for the deleted canaries the Newton passes until relearned) and the two-release statistic';

CREATE FUNCTION unlearn_audit(
	model text,
	canaries integer DEFAULT 2000,
	shadows integer DEFAULT 16,
	attack text DEFAULT 'loo',
	forget text DEFAULT NULL,
	canary_kind text DEFAULT 'mislabeled',
	seed bigint DEFAULT NULL)
RETURNS SETOF unlearn.audit
AS 'MODULE_PATHNAME', 'unlearn_audit' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION unlearn_audit(text, integer, integer, text, text, text, bigint)
IS 'membership-inference audit of a binary logistic model (owner only): canaries made from the table''s rows enter it through INSERT, half of them leave through DELETE, an attacker (loo, the strongest, or analytic in closed form, or lira with shadow models) scores them, and everything the audit wrote is rolled back; forget => a query over the table audits the erasure of its rows before it is run (population forget)';

CREATE FUNCTION unlearn._audit_canaries(model text, canaries integer, shadows integer,
	attack text, forget text, canary_kind text, seed bigint)
RETURNS TABLE (population text, score float8, retrained_score float8, margin float8)
AS 'MODULE_PATHNAME', 'unlearn_audit_canaries' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION unlearn._audit_canaries(text, integer, integer, text, text, text, bigint) IS 'internal: unlearn_audit one row per canary (its population, the attack''s score under the model and under the retrain, its margin); for the benchmark''s ROC curves';

CREATE FUNCTION unlearn._audit_statistics(members float8[], non_members float8[],
	OUT auc float8, OUT tpr_at_0_1 float8, OUT tpr_at_0_1_low float8, OUT tpr_at_0_1_high float8,
	OUT tpr_at_1 float8, OUT tpr_at_1_low float8, OUT tpr_at_1_high float8)
AS 'MODULE_PATHNAME', 'unlearn_audit_statistics' LANGUAGE C IMMUTABLE STRICT;
COMMENT ON FUNCTION unlearn._audit_statistics(float8[], float8[]) IS 'internal: the AUC and TPRs with Clopper-Pearson intervals that unlearn_audit reports for given scores; for tests';

CREATE FUNCTION unlearn_residual(model text) RETURNS float8[]
AS 'MODULE_PATHNAME', 'unlearn_residual' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION unlearn_residual(text) IS 'exact gradient residual vector of the released model on the current rows (owner only)';

CREATE TYPE unlearn.runtime AS (
	blas_core text, blas_fallback boolean, blas_threads integer, blas_config text,
	state_store boolean, state_memory bigint, resident_models bigint,
	hits bigint, misses bigint, evictions bigint);
COMMENT ON TYPE unlearn.runtime IS 'what unlearn_runtime returns';
CREATE FUNCTION unlearn_runtime()
RETURNS unlearn.runtime
AS 'MODULE_PATHNAME', 'unlearn_runtime' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION unlearn_runtime() IS 'the OpenBLAS core (and whether it is a generic fallback on a CPU with AVX2), its threads for training, and the shared memory of the removal matrices with its use since start-up';

CREATE FUNCTION unlearn_evict(model text) RETURNS boolean
AS 'MODULE_PATHNAME', 'unlearn_evict' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION unlearn_evict(text) IS 'free the removal matrices of a model from shared memory now (owner only); its next change rebuilds them with one pass over its table';

CREATE FUNCTION unlearn_budget(sigma float8, epsilon float8 DEFAULT 1, delta float8 DEFAULT 1e-4,
	noise text DEFAULT 'gaussian') RETURNS float8
AS 'MODULE_PATHNAME', 'unlearn_budget' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn_budget(float8, float8, float8, text) IS 'residual budget epsilon prime of objective noise of scale sigma: for gaussian noise at (epsilon, delta), by the analytic Gaussian mechanism; for laplace noise (density proportional to exp(-||b|| / sigma)) epsilon sigma, pure epsilon, delta unused';

CREATE FUNCTION unlearn._laplace_norms(dims integer, scale float8, draws integer) RETURNS float8[]
AS 'MODULE_PATHNAME', 'unlearn_laplace_norms' LANGUAGE C VOLATILE STRICT;
REVOKE EXECUTE ON FUNCTION unlearn._laplace_norms(integer, float8, integer) FROM PUBLIC;
COMMENT ON FUNCTION unlearn._laplace_norms(integer, float8, integer) IS 'internal: the norms of draws vectors of dims coordinates from the laplace objective noise sampler, for the test of its distribution (||b|| ~ Gamma(dims, scale))';

CREATE FUNCTION unlearn._matrices_digest(model text) RETURNS text
AS 'MODULE_PATHNAME', 'unlearn_matrices_digest' LANGUAGE C VOLATILE STRICT;

CREATE TYPE unlearn.plan AS (basis text, sigma float8, budget float8, bound_per_removal float8,
	weight_shift float8, accuracy_at_zero float8, accuracy float8, accuracy_cost float8,
	statement_rows bigint);
COMMENT ON TYPE unlearn.plan IS 'what unlearn_plan returns';
COMMENT ON COLUMN unlearn.plan.statement_rows IS 'the most rows one statement may remove within that budget: a statement is one Newton step, whose bound grows up to k^2 times one row''s for k rows (Guo et al., Theorem 4)';
CREATE FUNCTION unlearn_plan(
	removals bigint,
	model text DEFAULT NULL,
	rows bigint DEFAULT NULL,
	dims integer DEFAULT NULL,
	classes integer DEFAULT 2,
	epsilon float8 DEFAULT 1,
	delta float8 DEFAULT 1e-4,
	lambda float8 DEFAULT NULL,
	loss text DEFAULT 'logistic',
	intercept boolean DEFAULT true)
RETURNS SETOF unlearn.plan
AS 'MODULE_PATHNAME', 'unlearn_plan' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION unlearn_plan(bigint, text, bigint, integer, integer, float8, float8, float8, text, boolean)
IS 'the sigma that lets a model absorb a number of single-row removals between re-anchorings: worst case from the table size, and measured from a model''s ledger; for a model (owner only), the accuracy cost of that sigma measured by fitting its rows';

-- Training statistics as aggregates (src/aggregates.c): the loss and
-- gradient, the gradient and Hessian at a given w, and the Gram matrix,
-- over a state type of their own, so that they run in parallel workers and
-- merge across tables or nodes.
CREATE TYPE unlearn.stats;
CREATE FUNCTION unlearn._stats_in(cstring) RETURNS unlearn.stats
AS 'MODULE_PATHNAME', 'unlearn_stats_in' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION unlearn._stats_out(unlearn.stats) RETURNS cstring
AS 'MODULE_PATHNAME', 'unlearn_stats_out' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION unlearn._stats_recv(internal) RETURNS unlearn.stats
AS 'MODULE_PATHNAME', 'unlearn_stats_recv' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION unlearn._stats_send(unlearn.stats) RETURNS bytea
AS 'MODULE_PATHNAME', 'unlearn_stats_send' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE TYPE unlearn.stats (
	INPUT = unlearn._stats_in, OUTPUT = unlearn._stats_out,
	RECEIVE = unlearn._stats_recv, SEND = unlearn._stats_send,
	INTERNALLENGTH = VARIABLE, ALIGNMENT = double, STORAGE = extended);
COMMENT ON TYPE unlearn.stats IS 'state of the unlearn statistics aggregates: kind, loss, w, rows and sums; text form ulstats1: and base64, binary form raw';

CREATE TYPE unlearn.stats_values AS (kind text, loss text, rows bigint, loss_sum float8,
	gradient float8[], matrix float8[]);
COMMENT ON TYPE unlearn.stats_values IS 'the sums of an unlearn statistics aggregate: sum of l, sum of l'' x and (hessian) sum of l'''' x x'' over the rows at w, or (gram) sum of x x''; matrix is full and symmetric; without the regulariser';

CREATE FUNCTION unlearn_stats_values(state unlearn.stats) RETURNS unlearn.stats_values
AS 'MODULE_PATHNAME', 'unlearn_stats_values' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn_stats_values(unlearn.stats) IS 'the sums an unlearn.stats state holds (the final function of the statistics aggregates)';

CREATE FUNCTION unlearn._stats_gradient_add(unlearn.stats, float8[], float8, float8[], text)
RETURNS unlearn.stats AS 'MODULE_PATHNAME', 'unlearn_stats_gradient_add'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION unlearn._stats_hessian_add(unlearn.stats, float8[], float8, float8[], text)
RETURNS unlearn.stats AS 'MODULE_PATHNAME', 'unlearn_stats_hessian_add'
LANGUAGE C IMMUTABLE PARALLEL SAFE COST 100;
CREATE FUNCTION unlearn._stats_gram_add(unlearn.stats, float8[])
RETURNS unlearn.stats AS 'MODULE_PATHNAME', 'unlearn_stats_gram_add'
LANGUAGE C IMMUTABLE PARALLEL SAFE COST 100;
CREATE FUNCTION unlearn._stats_combine(unlearn.stats, unlearn.stats)
RETURNS unlearn.stats AS 'MODULE_PATHNAME', 'unlearn_stats_combine'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
-- callable by the aggregates' owner only: no role's aggregate feeds them its own states
REVOKE EXECUTE ON FUNCTION unlearn._stats_gradient_add(unlearn.stats, float8[], float8, float8[], text),
	unlearn._stats_hessian_add(unlearn.stats, float8[], float8, float8[], text),
	unlearn._stats_gram_add(unlearn.stats, float8[]),
	unlearn._stats_combine(unlearn.stats, unlearn.stats) FROM PUBLIC;

CREATE AGGREGATE unlearn_loss_gradient(x float8[], y float8, w float8[], loss text) (
	SFUNC = unlearn._stats_gradient_add, STYPE = unlearn.stats,
	COMBINEFUNC = unlearn._stats_combine, FINALFUNC = unlearn_stats_values, PARALLEL = SAFE);
COMMENT ON AGGREGATE unlearn_loss_gradient(float8[], float8, float8[], text) IS 'sum of the loss and of its gradient l''(w.x, y) x over the rows at a constant w (loss logistic, y in {-1, 1}, or squared)';
CREATE AGGREGATE unlearn_gradient_hessian(x float8[], y float8, w float8[], loss text) (
	SFUNC = unlearn._stats_hessian_add, STYPE = unlearn.stats,
	COMBINEFUNC = unlearn._stats_combine, FINALFUNC = unlearn_stats_values, PARALLEL = SAFE);
COMMENT ON AGGREGATE unlearn_gradient_hessian(float8[], float8, float8[], text) IS 'sum of the loss, its gradient and its Hessian l''''(w.x, y) x x'' over the rows at a constant w';
CREATE AGGREGATE unlearn_gram(x float8[]) (
	SFUNC = unlearn._stats_gram_add, STYPE = unlearn.stats,
	COMBINEFUNC = unlearn._stats_combine, FINALFUNC = unlearn_stats_values, PARALLEL = SAFE);
COMMENT ON AGGREGATE unlearn_gram(float8[]) IS 'the Gram matrix, sum of x x'' over the rows';

CREATE AGGREGATE unlearn_loss_gradient_state(x float8[], y float8, w float8[], loss text) (
	SFUNC = unlearn._stats_gradient_add, STYPE = unlearn.stats,
	COMBINEFUNC = unlearn._stats_combine, PARALLEL = SAFE);
COMMENT ON AGGREGATE unlearn_loss_gradient_state(float8[], float8, float8[], text) IS 'unlearn_loss_gradient''s state, to merge with unlearn_merge (one per table, partition or node)';
CREATE AGGREGATE unlearn_gradient_hessian_state(x float8[], y float8, w float8[], loss text) (
	SFUNC = unlearn._stats_hessian_add, STYPE = unlearn.stats,
	COMBINEFUNC = unlearn._stats_combine, PARALLEL = SAFE);
COMMENT ON AGGREGATE unlearn_gradient_hessian_state(float8[], float8, float8[], text) IS 'unlearn_gradient_hessian''s state, to merge with unlearn_merge';
CREATE AGGREGATE unlearn_gram_state(x float8[]) (
	SFUNC = unlearn._stats_gram_add, STYPE = unlearn.stats,
	COMBINEFUNC = unlearn._stats_combine, PARALLEL = SAFE);
COMMENT ON AGGREGATE unlearn_gram_state(float8[]) IS 'unlearn_gram''s state, to merge with unlearn_merge';
CREATE AGGREGATE unlearn_merge(state unlearn.stats) (
	SFUNC = unlearn._stats_combine, STYPE = unlearn.stats,
	COMBINEFUNC = unlearn._stats_combine, PARALLEL = SAFE);
COMMENT ON AGGREGATE unlearn_merge(unlearn.stats) IS 'merge unlearn.stats states of one kind, loss, dimension and w into one; read it with unlearn_stats_values';

-- training passes (train_pass.c): the row functions and the column moments
-- COST: a call detoasts (often decompresses) and converts or maps a whole
-- row of features, O(d), where the default 1 is one operator; so the
-- planner weighs that work, which parallel workers share (see the update
-- script to 0.14.0)
CREATE FUNCTION unlearn._row_values(VARIADIC "any") RETURNS float8[]
AS 'MODULE_PATHNAME', 'unlearn_row_values' LANGUAGE C IMMUTABLE PARALLEL SAFE COST 100;
CREATE FUNCTION unlearn._row_x(model text, map float8[], raw float8[]) RETURNS float8[]
AS 'MODULE_PATHNAME', 'unlearn_row_x' LANGUAGE C IMMUTABLE PARALLEL SAFE COST 100;
CREATE FUNCTION unlearn._row_raw(model text, raw float8[]) RETURNS float8[]
AS 'MODULE_PATHNAME', 'unlearn_row_raw' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100;
CREATE FUNCTION unlearn._row_margin(x float8[], w float8[]) RETURNS float8
AS 'MODULE_PATHNAME', 'unlearn_row_margin' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 10;
COMMENT ON FUNCTION unlearn._row_margin(float8[], float8[]) IS 'internal to training: w.x for a mapped row x';
CREATE FUNCTION unlearn._row_class(x float8[], coef float8[], classes int4) RETURNS int4
AS 'MODULE_PATHNAME', 'unlearn_row_class' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 10;
COMMENT ON FUNCTION unlearn._row_class(float8[], float8[], int4) IS 'internal to training: the position among the model''s labels of the class its weights predict for a mapped row x';
CREATE FUNCTION unlearn._category_values(value anyelement, categories anyarray) RETURNS float8[]
AS 'MODULE_PATHNAME', 'unlearn_category_values' LANGUAGE C IMMUTABLE PARALLEL SAFE COST 10;
CREATE FUNCTION unlearn._row_target(model text, label "any", positive text) RETURNS float8
AS 'MODULE_PATHNAME', 'unlearn_row_target' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION unlearn._moments_add(bytea, float8[], int4) RETURNS bytea
AS 'MODULE_PATHNAME', 'unlearn_moments_add' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION unlearn._moments_combine(bytea, bytea) RETURNS bytea
AS 'MODULE_PATHNAME', 'unlearn_moments_combine' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION unlearn._moments_final(bytea) RETURNS float8[]
AS 'MODULE_PATHNAME', 'unlearn_moments_final' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
REVOKE EXECUTE ON FUNCTION unlearn._moments_add(bytea, float8[], int4),
	unlearn._moments_combine(bytea, bytea), unlearn._moments_final(bytea) FROM PUBLIC;
CREATE AGGREGATE unlearn._column_moments(x float8[], columns int4) (
	SFUNC = unlearn._moments_add, STYPE = bytea, COMBINEFUNC = unlearn._moments_combine,
	FINALFUNC = unlearn._moments_final, PARALLEL = SAFE);
COMMENT ON AGGREGATE unlearn._column_moments(float8[], int4) IS 'internal to training passes: count, then per column the mean, then per column the variance of the rows'' values';
-- the statistics aggregates as training passes call them: the same support
-- functions and state, in schema unlearn, whose USAGE no role but a
-- superuser can take from the table owners the passes run as
CREATE AGGREGATE unlearn._pass_hessian(x float8[], y float8, w float8[], loss text) (
	SFUNC = unlearn._stats_hessian_add, STYPE = unlearn.stats,
	COMBINEFUNC = unlearn._stats_combine, PARALLEL = SAFE);
COMMENT ON AGGREGATE unlearn._pass_hessian(float8[], float8, float8[], text) IS 'internal to training passes: unlearn_gradient_hessian_state';
CREATE FUNCTION unlearn._array_shape(anyarray) RETURNS int4
AS 'MODULE_PATHNAME', 'unlearn_array_shape' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE AGGREGATE unlearn._pass_gradient(x float8[], y float8, w float8[], loss text) (
	SFUNC = unlearn._stats_gradient_add, STYPE = unlearn.stats,
	COMBINEFUNC = unlearn._stats_combine, PARALLEL = SAFE);
COMMENT ON AGGREGATE unlearn._pass_gradient(float8[], float8, float8[], text) IS 'internal to training passes: unlearn_loss_gradient_state';
CREATE AGGREGATE unlearn._pass_gram(x float8[]) (
	SFUNC = unlearn._stats_gram_add, STYPE = unlearn.stats,
	COMBINEFUNC = unlearn._stats_combine, PARALLEL = SAFE);
COMMENT ON AGGREGATE unlearn._pass_gram(float8[]) IS 'internal to training passes: unlearn_gram_state';

-- Every function in schema unlearn is internal: the SQL interface is the
-- unlearn_* functions in the extension's schema.  \dx+ unlearn and \df
-- unlearn.* say so.
COMMENT ON FUNCTION unlearn._require_preload() IS 'internal: refuses CREATE EXTENSION unless unlearn is in shared_preload_libraries';
COMMENT ON FUNCTION unlearn._resident(text) IS 'internal: whether the removal matrices of a model are in shared memory at its current version';
COMMENT ON FUNCTION unlearn._progress() IS 'internal: the progress slots in shared memory (unlearn.progress): row-derived figures for the model owner''s roles only, the model, table, command, phase and times also for pg_read_all_stats, the pid and database for every role';
COMMENT ON FUNCTION unlearn._retrain(text, boolean) IS 'internal: unlearn_retrain''s implementation';
COMMENT ON FUNCTION unlearn._apply_pending(text) IS 'internal: unlearn_apply_pending''s implementation';
COMMENT ON FUNCTION unlearn._maintain() IS 'internal: statement trigger that applies certified Newton removal and addition to every model of the table';
COMMENT ON FUNCTION unlearn._forbid_truncate() IS 'internal: trigger that rejects TRUNCATE of a table that has models';
COMMENT ON FUNCTION unlearn._defer() IS 'internal: row trigger that queues each changed row in unlearn.pending for the table''s deferred models';
COMMENT ON FUNCTION unlearn._shard_queue() IS 'internal: row trigger on the shards of a Citus distributed table that queues each changed row in the table''s distributed queue for one async model';
COMMENT ON FUNCTION unlearn._on_sql_drop() IS 'internal: event trigger: a dropped table takes its models; a dropped column or trigger a model needs is refused';
COMMENT ON FUNCTION unlearn._on_ddl_end() IS 'internal: event trigger: DDL that would change a model''s rows without its triggers is refused';
COMMENT ON FUNCTION unlearn._matrices_digest(text) IS 'internal: a 64-bit hash of the resident removal matrices of a model (owner only), NULL if not resident; for tests';
COMMENT ON FUNCTION unlearn._column_moments(float8[], integer) IS 'internal to training passes: count, then per column the mean, then per column the variance of the rows'' values';
COMMENT ON FUNCTION unlearn._pass_hessian(float8[], float8, float8[], text) IS 'internal to training passes: unlearn_gradient_hessian_state';
COMMENT ON FUNCTION unlearn._array_shape(anyarray) IS 'internal to training passes: -1 for a one-dimensional array with a null element, else the length of its first dimension (0 if empty)';
COMMENT ON FUNCTION unlearn._pass_gradient(float8[], float8, float8[], text) IS 'internal to training passes: unlearn_loss_gradient_state';
COMMENT ON FUNCTION unlearn._pass_gram(float8[]) IS 'internal to training passes: unlearn_gram_state';
COMMENT ON FUNCTION unlearn._check_read(text, text) IS 'internal: the table of a model the caller may read (read or monitor), or an error 42501';
COMMENT ON FUNCTION unlearn._score_columns(text, text[], "any") IS 'internal: unlearn_score''s per-row scorer in parallel workers: the feature columns in the model''s order, then the key columns named by key_columns';
COMMENT ON FUNCTION unlearn._stats_in(cstring) IS 'internal: input function of the statistics state type unlearn.stats';
COMMENT ON FUNCTION unlearn._stats_out(unlearn.stats) IS 'internal: output function of the statistics state type unlearn.stats';
COMMENT ON FUNCTION unlearn._stats_recv(internal) IS 'internal: binary input function of the statistics state type unlearn.stats';
COMMENT ON FUNCTION unlearn._stats_send(unlearn.stats) IS 'internal: binary output function of the statistics state type unlearn.stats';
COMMENT ON FUNCTION unlearn._stats_gradient_add(unlearn.stats, float8[], float8, float8[], text) IS 'internal: transition function of the loss and gradient aggregates';
COMMENT ON FUNCTION unlearn._stats_hessian_add(unlearn.stats, float8[], float8, float8[], text) IS 'internal: transition function of the gradient and Hessian aggregates';
COMMENT ON FUNCTION unlearn._stats_gram_add(unlearn.stats, float8[]) IS 'internal: transition function of the Gram aggregates';
COMMENT ON FUNCTION unlearn._stats_combine(unlearn.stats, unlearn.stats) IS 'internal: combine function of the statistics aggregates (parallel partial states)';
COMMENT ON FUNCTION unlearn._row_values("any") IS 'internal to training passes: a row''s features (numeric scalars and booleans, or one numeric array) as float8[], a null value or element as NaN (missing)';
COMMENT ON FUNCTION unlearn._row_x(text, float8[], float8[]) IS 'internal to training passes: raw features checked finite, or under a map that imputes with missing values marked, and mapped by a model''s row map (NULL: unmapped)';
COMMENT ON FUNCTION unlearn._row_raw(text, float8[]) IS 'internal to training passes: raw features with each value that is not finite marked missing (NaN), for the moments pass of a model that imputes';
COMMENT ON FUNCTION unlearn._category_values(anyelement, anyarray) IS 'internal to training passes: the features of a category() group in one lookup, 1 for each category equal to the value and 0 for the others, then other (1 when none is equal or the value is null); text, integer and boolean values';
COMMENT ON FUNCTION unlearn._row_target(text, "any", text) IS 'internal to training passes: +1 if the label is positive, else -1; positive NULL: the label''s value (squared loss)';
COMMENT ON FUNCTION unlearn._moments_add(bytea, float8[], integer) IS 'internal: transition function of unlearn._column_moments';
COMMENT ON FUNCTION unlearn._moments_combine(bytea, bytea) IS 'internal: combine function of unlearn._column_moments';
COMMENT ON FUNCTION unlearn._moments_final(bytea) IS 'internal: final function of unlearn._column_moments';
