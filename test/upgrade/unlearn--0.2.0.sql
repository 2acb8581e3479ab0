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

CREATE TABLE unlearn.models (
	model		text PRIMARY KEY,
	owner		regrole NOT NULL DEFAULT current_user::regrole,
	source		regclass NOT NULL,
	label		text NOT NULL,
	features	text[] NOT NULL,
	feature_array boolean NOT NULL,
	column_types regtype[] NOT NULL,
	loss		text NOT NULL CHECK (loss IN ('logistic', 'squared')),
	classes		text[],
	dims		integer NOT NULL CHECK (dims > 0),
	intercept	boolean NOT NULL,
	scale		float8 NOT NULL CHECK (scale > 0),
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
	bound		text NOT NULL CHECK (bound IN ('guo', 'taylor', 'exact')),
	on_exhausted text NOT NULL CHECK (on_exhausted IN ('retrain', 'suspend')),
	state		text NOT NULL DEFAULT 'ready' CHECK (state IN ('ready', 'too few rows', 'suspended')),
	partitions	regclass[] NOT NULL DEFAULT '{}',
	steps		text NOT NULL CHECK (steps IN ('row', 'statement')),
	coef		float8[],
	trained_at	timestamptz NOT NULL,
	updated_at	timestamptz NOT NULL
);
CREATE INDEX ON unlearn.models (source);

COMMENT ON TABLE unlearn.models IS 'one row per unlearn model: metadata, coefficients and removal budget';
COMMENT ON COLUMN unlearn.models.dims IS 'number of input features d (the intercept, when present, is one more coefficient)';
COMMENT ON COLUMN unlearn.models.scale IS 'row map: x -> (x, 1) / max(scale, ||(x, 1)||)';
COMMENT ON COLUMN unlearn.models.rows IS 'rows the model reflects now';
COMMENT ON COLUMN unlearn.models.reg IS 'Lambda = lambda * trained_rows, frozen at (re)training';
COMMENT ON COLUMN unlearn.models.budget IS 'epsilon prime: the gradient-residual budget of the analytic Gaussian mechanism';
COMMENT ON COLUMN unlearn.models.reanchors IS 'times the Hessian was rebuilt at the current w and spent replaced by the measured residual (no change to w or b)';
COMMENT ON COLUMN unlearn.models.state IS 'ready: coef is released and certified; too few rows: the table holds fewer rows than weights (or none), coef is withheld until rows are inserted or unlearn_retrain; suspended: the budget ran out under on_exhausted = suspend, coef is withheld until unlearn_retrain';
COMMENT ON COLUMN unlearn.models.partitions IS 'the partitions of the table when its models were last (re)trained: a change retrains them';
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
	weight_sum	float8[] NOT NULL
);
ALTER TABLE unlearn.model_state ALTER COLUMN noise SET STORAGE EXTERNAL;
ALTER TABLE unlearn.model_state ALTER COLUMN anchor SET STORAGE EXTERNAL;
COMMENT ON TABLE unlearn.model_state IS 'owner-only removal state: noise b, anchor w0, lambda_max bound, spent budget and Hessian weight sum C per class';

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
	reanchored	boolean NOT NULL DEFAULT false
);
CREATE INDEX ON unlearn.ledger (model, id);
COMMENT ON TABLE unlearn.ledger IS 'one row per statement and model: what was removed or added and the residual bound spent; never feature values';

-- The catalog belongs to the extension: its C functions write it as the
-- extension's owner after checking the caller's rights (src/privilege.c).
-- Other roles may only read: the public catalog and the ledger, and the
-- secret state of the models they own (row-level security).
ALTER TABLE unlearn.model_state ENABLE ROW LEVEL SECURITY;
CREATE POLICY state_owner ON unlearn.model_state FOR SELECT
	USING (pg_catalog.pg_has_role(current_user, owner, 'USAGE'));

REVOKE ALL ON unlearn.models, unlearn.model_state, unlearn.ledger FROM PUBLIC;
REVOKE ALL ON SEQUENCE unlearn.ledger_id_seq FROM PUBLIC;
GRANT SELECT ON unlearn.models, unlearn.model_state, unlearn.ledger TO PUBLIC;
-- readable so that a non-superuser's pg_dump can save it (the ledger is public)
GRANT SELECT ON SEQUENCE unlearn.ledger_id_seq TO PUBLIC;

CREATE FUNCTION unlearn._resident(model text) RETURNS boolean
AS 'MODULE_PATHNAME', 'unlearn_resident' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION unlearn._resident(text) IS 'whether the removal matrices of a model are in shared memory at its current version';

CREATE VIEW unlearn.status AS
SELECT m.model, m.source, m.loss,
	   coalesce(array_length(m.classes, 1), 0) AS classes,
	   m.dims, m.rows, m.removed, m.inserted, m.retrains,
	   m.budget, m.spent,
	   greatest(m.budget - m.spent, 0) AS remaining,
	   CASE WHEN m.budget > 0 THEN round((100 * m.spent / m.budget)::numeric, 2) END AS pct_spent,
	   m.bound, m.on_exhausted, m.steps, m.state,
	   m.trained_at, m.updated_at,
	   m.state = 'ready' AND unlearn._resident(m.model) AS resident
FROM unlearn.models m;
GRANT SELECT ON unlearn.status TO PUBLIC;
COMMENT ON VIEW unlearn.status IS 'one line per model: rows, removals, budget left, and whether its removal matrices are in shared memory (resident; otherwise its next change rebuilds them)';

-- pg_dump saves the catalog with the tables.  A role dumps the models it
-- may act for (all of them for a superuser), so that a dump holds each
-- model with its state; the ledger and its sequence go whole.
SELECT pg_catalog.pg_extension_config_dump('unlearn.models',
	'WHERE pg_catalog.pg_has_role(owner, ''USAGE'')');
SELECT pg_catalog.pg_extension_config_dump('unlearn.model_state',
	'WHERE pg_catalog.pg_has_role(owner, ''USAGE'')');
SELECT pg_catalog.pg_extension_config_dump('unlearn.ledger', '');
SELECT pg_catalog.pg_extension_config_dump('unlearn.ledger_id_seq', '');

------------------------------------------------------------------------
-- Private C functions
------------------------------------------------------------------------

CREATE FUNCTION unlearn._train(model text, source regclass, label text, features text[],
	loss text, lambda float8, sigma float8, epsilon float8, delta float8,
	intercept boolean, bound text, on_exhausted text, steps text,
	replace boolean, verbose boolean)
RETURNS void AS 'MODULE_PATHNAME', 'unlearn_train' LANGUAGE C VOLATILE;

CREATE FUNCTION unlearn._retrain(model text, verbose boolean)
RETURNS void AS 'MODULE_PATHNAME', 'unlearn_retrain' LANGUAGE C VOLATILE STRICT;

CREATE FUNCTION unlearn._maintain() RETURNS trigger
AS 'MODULE_PATHNAME', 'unlearn_maintain_trigger' LANGUAGE C;
COMMENT ON FUNCTION unlearn._maintain() IS 'trigger: applies certified Newton removal/addition to every model of the table';

CREATE FUNCTION unlearn._forbid_truncate() RETURNS trigger
AS 'MODULE_PATHNAME', 'unlearn_truncate_trigger' LANGUAGE C;
COMMENT ON FUNCTION unlearn._forbid_truncate() IS 'trigger: rejects TRUNCATE of a table that has models';

CREATE FUNCTION unlearn._on_sql_drop() RETURNS event_trigger
AS 'MODULE_PATHNAME', 'unlearn_on_sql_drop' LANGUAGE C;
CREATE FUNCTION unlearn._on_ddl_end() RETURNS event_trigger
AS 'MODULE_PATHNAME', 'unlearn_on_ddl_end' LANGUAGE C;

REVOKE EXECUTE ON FUNCTION unlearn._maintain(), unlearn._forbid_truncate(),
	unlearn._on_sql_drop(), unlearn._on_ddl_end() FROM PUBLIC;

CREATE EVENT TRIGGER unlearn_sql_drop ON sql_drop
	EXECUTE FUNCTION unlearn._on_sql_drop();
CREATE EVENT TRIGGER unlearn_ddl_end ON ddl_command_end
	WHEN TAG IN ('ALTER TABLE', 'CREATE TABLE')
	EXECUTE FUNCTION unlearn._on_ddl_end();

------------------------------------------------------------------------
-- User-facing functions
------------------------------------------------------------------------

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
	verbose boolean DEFAULT false)
RETURNS SETOF unlearn.status
LANGUAGE sql VOLATILE
AS $$
	SELECT unlearn._train($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15);
	SELECT * FROM unlearn.status s WHERE s.model = $1;
$$;
COMMENT ON FUNCTION unlearn_train(text, regclass, text, text[], text, float8, float8, float8, float8, boolean, text, text, text, boolean, boolean)
IS 'train a removal-ready L2-regularised, loss-perturbed linear model on the rows of a table';

CREATE FUNCTION unlearn_retrain(model text, verbose boolean DEFAULT false)
RETURNS SETOF unlearn.status
LANGUAGE sql VOLATILE
AS $$
	SELECT unlearn._retrain($1, $2);
	SELECT * FROM unlearn.status s WHERE s.model = $1;
$$;
COMMENT ON FUNCTION unlearn_retrain(text, boolean)
IS 'retrain a model from scratch on the current rows with fresh noise, resetting its spent budget';

CREATE FUNCTION unlearn_drop(model text) RETURNS void
AS 'MODULE_PATHNAME', 'unlearn_drop' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION unlearn_drop(text) IS 'drop a model, and the table''s triggers with its last model';

CREATE FUNCTION unlearn_coef(model text) RETURNS float8[]
AS 'MODULE_PATHNAME', 'unlearn_coef' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION unlearn_coef(text) IS 'weights w in the model''s own (scaled) feature space, intercept last; one row per class for one-vs-rest';

CREATE FUNCTION unlearn_predict(model text, x float8[]) RETURNS float8
AS 'MODULE_PATHNAME', 'unlearn_predict' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn_predict(text, float8[]) IS 'probability of the positive class (logistic), value (squared) or top-class probability (one-vs-rest)';

CREATE FUNCTION unlearn_predict_class(model text, x float8[]) RETURNS text
AS 'MODULE_PATHNAME', 'unlearn_predict_class' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn_predict_class(text, float8[]) IS 'predicted label, as text';

CREATE FUNCTION unlearn_score(model text, source regclass DEFAULT NULL)
RETURNS TABLE (row_id tid, label text, score float8)
AS 'MODULE_PATHNAME', 'unlearn_score' LANGUAGE C STABLE;
COMMENT ON FUNCTION unlearn_score(text, regclass) IS 'score every row of a table (default: the model''s source) in one pass';

CREATE FUNCTION unlearn_verify(model text)
RETURNS TABLE (residual float8, spent float8, budget float8, certified boolean,
			   retrain_distance float8, accuracy float8, retrain_accuracy float8)
AS 'MODULE_PATHNAME', 'unlearn_verify' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION unlearn_verify(text) IS 'exact gradient residual against spent, distance to and accuracy of a fresh retrain with the same noise (owner only; one pass over the table)';

CREATE FUNCTION unlearn_residual(model text) RETURNS float8[]
AS 'MODULE_PATHNAME', 'unlearn_residual' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION unlearn_residual(text) IS 'exact gradient residual vector of the released model on the current rows (owner only)';

CREATE FUNCTION unlearn_runtime(
	OUT blas_core text, OUT blas_fallback boolean, OUT blas_threads integer, OUT blas_config text,
	OUT state_store boolean, OUT state_memory bigint, OUT resident_models bigint,
	OUT hits bigint, OUT misses bigint, OUT evictions bigint)
AS 'MODULE_PATHNAME', 'unlearn_runtime' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION unlearn_runtime() IS 'the OpenBLAS core (and whether it is a generic fallback on a CPU with AVX2), its threads for training, and the shared memory of the removal matrices with its use since start-up';

CREATE FUNCTION unlearn_evict(model text) RETURNS boolean
AS 'MODULE_PATHNAME', 'unlearn_evict' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION unlearn_evict(text) IS 'free the removal matrices of a model from shared memory now (owner only); its next change rebuilds them with one pass over its table';

CREATE FUNCTION unlearn_budget(sigma float8, epsilon float8 DEFAULT 1, delta float8 DEFAULT 1e-4)
RETURNS float8
AS 'MODULE_PATHNAME', 'unlearn_budget' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn_budget(float8, float8, float8) IS 'residual budget epsilon prime of Gaussian noise sigma at (epsilon, delta), analytic Gaussian mechanism';

CREATE FUNCTION unlearn._matrices_digest(model text) RETURNS text
AS 'MODULE_PATHNAME', 'unlearn_matrices_digest' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION unlearn._matrices_digest(text) IS 'a 64-bit hash of the resident removal matrices of a model (owner only), NULL if not resident; for tests';
