-- unlearn 0.1.0 -> 0.2.0: the removal matrices move from the unlogged table
-- unlearn.model_blocks to shared memory (src/state_store.c).  Each model
-- rebuilds them with one pass over its table on its first change after the
-- update (ledger operation 'rebuild'); w, b and the budget stay.

\echo Use "ALTER EXTENSION unlearn UPDATE TO '0.2.0'" to load this file. \quit

CREATE FUNCTION unlearn._require_preload() RETURNS void
AS 'MODULE_PATHNAME', 'unlearn_require_preload' LANGUAGE C;
SELECT unlearn._require_preload();

ALTER EXTENSION unlearn DROP TABLE unlearn.model_blocks;
DROP TABLE unlearn.model_blocks;
ALTER TABLE unlearn.model_state DROP COLUMN checksum;
COMMENT ON TABLE unlearn.model_state IS 'owner-only removal state: noise b, anchor w0, lambda_max bound, spent budget and Hessian weight sum C per class';

-- partitions by name, so that a restore maps them to the new tables
ALTER TABLE unlearn.models ALTER COLUMN partitions DROP DEFAULT;
ALTER TABLE unlearn.models ALTER COLUMN partitions TYPE regclass[] USING partitions::regclass[];
ALTER TABLE unlearn.models ALTER COLUMN partitions SET DEFAULT '{}';

SELECT pg_catalog.pg_extension_config_dump('unlearn.models',
	'WHERE pg_catalog.pg_has_role(owner, ''USAGE'')');
SELECT pg_catalog.pg_extension_config_dump('unlearn.model_state',
	'WHERE pg_catalog.pg_has_role(owner, ''USAGE'')');
SELECT pg_catalog.pg_extension_config_dump('unlearn.ledger_id_seq', '');
-- readable so that a non-superuser's pg_dump can save it (the ledger is public)
GRANT SELECT ON SEQUENCE unlearn.ledger_id_seq TO PUBLIC;

CREATE FUNCTION unlearn._resident(model text) RETURNS boolean
AS 'MODULE_PATHNAME', 'unlearn_resident' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION unlearn._resident(text) IS 'whether the removal matrices of a model are in shared memory at its current version';

CREATE OR REPLACE VIEW unlearn.status AS
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
COMMENT ON VIEW unlearn.status IS 'one line per model: rows, removals, budget left, and whether its removal matrices are in shared memory (resident; otherwise its next change rebuilds them)';

CREATE FUNCTION unlearn_runtime(
	OUT blas_core text, OUT blas_fallback boolean, OUT blas_threads integer, OUT blas_config text,
	OUT state_store boolean, OUT state_memory bigint, OUT resident_models bigint,
	OUT hits bigint, OUT misses bigint, OUT evictions bigint)
AS 'MODULE_PATHNAME', 'unlearn_runtime' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION unlearn_runtime() IS 'the OpenBLAS core (and whether it is a generic fallback on a CPU with AVX2), its threads for training, and the shared memory of the removal matrices with its use since start-up';

CREATE FUNCTION unlearn_evict(model text) RETURNS boolean
AS 'MODULE_PATHNAME', 'unlearn_evict' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION unlearn_evict(text) IS 'free the removal matrices of a model from shared memory now (owner only); its next change rebuilds them with one pass over its table';
CREATE FUNCTION unlearn._matrices_digest(model text) RETURNS text
AS 'MODULE_PATHNAME', 'unlearn_matrices_digest' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION unlearn._matrices_digest(text) IS 'a 64-bit hash of the resident removal matrices of a model (owner only), NULL if not resident; for tests';
