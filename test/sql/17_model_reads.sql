-- Reading a model is a privilege, per model.  Its owner reads it; a role
-- granted 'read' reads its weights, predictions and figures; a role
-- granted 'monitor' its figures only; anyone else (here a role that may
-- read and delete the table's rows) nothing at all, before or after a
-- DELETE, by any path: functions, views or catalog tables.
\set SHOW_CONTEXT never
CREATE ROLE mr_owner;
CREATE ROLE mr_analyst;
CREATE ROLE mr_reader;
CREATE ROLE mr_monitor;
CREATE ROLE mr_team;
CREATE ROLE mr_member IN ROLE mr_team;
CREATE TABLE mr_t AS SELECT * FROM ones_sevens;
ALTER TABLE mr_t ADD PRIMARY KEY (id);
ALTER TABLE mr_t OWNER TO mr_owner;
GRANT SELECT, DELETE ON mr_t TO mr_analyst, mr_reader, mr_monitor, mr_member;
SET ROLE mr_owner;
SELECT model, rows FROM unlearn_train('mr', 'mr_t', 'is_one', '{pixels}', lambda => 1e-2, sigma => 2);
RESET ROLE;

-- every read path, as a query; sqlstate_of runs one as the current role
-- and says how many rows it returned, or its SQLSTATE
CREATE TABLE mr_paths (n int, path text, q text);
INSERT INTO mr_paths VALUES
	(1, 'unlearn_coef', $$SELECT unlearn_coef('mr')$$),
	(2, 'unlearn_predict', $$SELECT unlearn_predict('mr', pixels) FROM mr_t$$),
	(3, 'unlearn_predict_class', $$SELECT unlearn_predict_class('mr', pixels) FROM mr_t$$),
	(4, 'unlearn_predict_proba', $$SELECT unlearn_predict_proba('mr', pixels) FROM mr_t$$),
	(5, 'unlearn_score_row', $$SELECT unlearn_score_row('mr', t) FROM mr_t t$$),
	(6, 'unlearn_score', $$SELECT * FROM unlearn_score('mr')$$),
	(7, 'unlearn_evaluate', $$SELECT * FROM unlearn_evaluate('mr')$$),
	(8, 'unlearn_ledger', $$SELECT * FROM unlearn_ledger('mr')$$),
	(9, 'unlearn._resident', $$SELECT unlearn._resident('mr')$$),
	(10, 'unlearn_verify', $$SELECT * FROM unlearn_verify('mr')$$),
	(11, 'unlearn_residual', $$SELECT unlearn_residual('mr')$$),
	(12, 'unlearn._matrices_digest', $$SELECT unlearn._matrices_digest('mr')$$),
	(13, 'unlearn.models', $$SELECT * FROM unlearn.models WHERE model = 'mr'$$),
	(14, 'unlearn.status', $$SELECT * FROM unlearn.status WHERE model = 'mr'$$),
	(15, 'unlearn.ledger', $$SELECT * FROM unlearn.ledger WHERE model = 'mr'$$),
	(16, 'unlearn.model_state', $$SELECT * FROM unlearn.model_state WHERE model = 'mr'$$),
	(17, 'unlearn.model_grants', $$SELECT * FROM unlearn.model_grants WHERE model = 'mr'$$);
GRANT SELECT ON mr_paths TO PUBLIC;
CREATE FUNCTION sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
BEGIN
	EXECUTE q;
	GET DIAGNOSTICS n = ROW_COUNT;
	RETURN n || ' rows';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE;
END
$$;
CREATE VIEW mr_matrix AS SELECT n, path, sqlstate_of(q) AS result FROM mr_paths;
GRANT SELECT ON mr_matrix TO PUBLIC;

-- 1. no grant: before a DELETE, nothing; the messages name the grant
SET ROLE mr_analyst;
SELECT * FROM mr_matrix ORDER BY n;
SELECT unlearn_predict('mr', (SELECT pixels FROM mr_t LIMIT 1));
SELECT count(*) FROM unlearn_ledger('mr');
-- 2. its DELETE reaches the model, but tells it nothing of the model
DELETE FROM mr_t WHERE id IN (SELECT id FROM mr_t ORDER BY id LIMIT 3);
SELECT * FROM mr_matrix ORDER BY n;
-- the store's counters move with every change of any model: statistics
SELECT resident_models, hits, misses, evictions FROM unlearn_runtime();
RESET ROLE;
SELECT rows = (SELECT count(*) FROM mr_t) AS in_step, removed FROM unlearn.models WHERE model = 'mr';
SELECT resident_models IS NOT NULL AS superuser_sees_counters FROM unlearn_runtime();

-- 3. grants: only the owner gives or takes them, for known roles and
-- privileges
SET ROLE mr_analyst;
SELECT unlearn_grant('mr', 'mr_analyst');
RESET ROLE;
SET ROLE mr_owner;
SELECT unlearn_grant('mr', 'mr_reader');
SELECT unlearn_grant('mr', 'mr_reader', 'read');
SELECT unlearn_grant('mr', 'mr_monitor', 'monitor');
SELECT unlearn_grant('mr', 'mr_team', privilege => 'read');
SELECT unlearn_grant('mr', 'mr_reader', 'write');
SELECT unlearn_grant('mr', 'mr_nobody');
SELECT unlearn_grant('mr', 4000000000::oid::regrole);
SELECT unlearn_grant('nope', 'mr_reader');
SELECT unlearn_revoke('mr', 'mr_analyst');
SELECT grantee, privilege FROM unlearn.model_grants ORDER BY grantee::text, privilege;
RESET ROLE;
SET ROLE mr_reader;
SELECT unlearn_grant('mr', 'mr_analyst');
SELECT unlearn_revoke('mr', 'mr_monitor', 'monitor');
-- a grantee sees its own grants only
SELECT grantee, privilege FROM unlearn.model_grants;
RESET ROLE;

-- 4. read: everything but the owner's removal state
SET ROLE mr_reader;
SELECT * FROM mr_matrix ORDER BY n;
RESET ROLE;
-- through a role it is a member of
SET ROLE mr_member;
SELECT * FROM mr_matrix ORDER BY n;
RESET ROLE;
-- monitor: the status line and the ledger, no weights, no predictions
SET ROLE mr_monitor;
SELECT * FROM mr_matrix ORDER BY n;
SELECT unlearn_coef('mr');
SELECT operation, rows_removed FROM unlearn_ledger('mr') ORDER BY id;
SELECT rows, removed FROM unlearn.status WHERE model = 'mr';
RESET ROLE;
-- the owner
SET ROLE mr_owner;
SELECT * FROM mr_matrix ORDER BY n;
RESET ROLE;

-- 5. the notices of a change are the figures of a model: a deleting role
-- that may not read them gets none (they go to the server log)
SET ROLE mr_owner;
SELECT model FROM unlearn_train('mr_tiny', 'mr_t', 'is_one', '{pixels}', sigma => 1e-6,
								options => '{"on_exhausted": "suspend"}');
RESET ROLE;
-- (not even with the client's message level at debug1)
SET ROLE mr_analyst;
SET client_min_messages = debug1;
DELETE FROM mr_t WHERE id = (SELECT min(id) FROM mr_t);
RESET client_min_messages;
RESET ROLE;
SET ROLE mr_owner;
SELECT state FROM unlearn.models WHERE model = 'mr_tiny';
SELECT model FROM unlearn_retrain('mr_tiny');
RESET ROLE;
SET ROLE mr_monitor;
SELECT unlearn_grant('mr_tiny', 'mr_monitor', 'monitor');
RESET ROLE;
SET ROLE mr_owner;
SELECT unlearn_grant('mr_tiny', 'mr_monitor', 'monitor');
RESET ROLE;
SET ROLE mr_monitor;
\set VERBOSITY terse
DELETE FROM mr_t WHERE id = (SELECT min(id) FROM mr_t);
\set VERBOSITY default
RESET ROLE;

-- 6. a leaky function in the caller's query sees no row it may not read:
-- the status view is a security barrier, the tables have row security
CREATE FUNCTION mr_leak(text) RETURNS boolean LANGUAGE plpgsql COST 0.0000001 AS $$
BEGIN
	RAISE NOTICE 'saw %', $1;
	RETURN true;
END
$$;
SET ROLE mr_analyst;
SELECT count(*) FROM unlearn.status WHERE mr_leak(model || ' ' || spent);
SELECT count(*) FROM unlearn.models WHERE mr_leak(model || ' ' || spent);
SELECT count(*) FROM unlearn.ledger WHERE mr_leak(model || ' ' || spent);
RESET ROLE;

-- 7. in parallel workers the check is the same
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET ROLE mr_reader;
SELECT count(*) > 0 AS reader_scores_in_parallel
FROM mr_t t WHERE (unlearn_score_row('mr', t)).score >= 0;
RESET ROLE;
SET ROLE mr_analyst;
SELECT count(*) FROM mr_t t WHERE (unlearn_score_row('mr', t)).score >= 0;
RESET ROLE;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- 8. a revoked grant ends with the next query; a replaced model starts
-- with no grants; a dropped one takes them along
SET ROLE mr_owner;
SELECT unlearn_revoke('mr', 'mr_reader');
SELECT unlearn_revoke('mr', 'mr_reader');
RESET ROLE;
SET ROLE mr_reader;
SELECT unlearn_coef('mr');
RESET ROLE;
SET ROLE mr_owner;
SELECT count(*) AS grants_before FROM unlearn.model_grants WHERE model = 'mr';
SELECT model FROM unlearn_train('mr', 'mr_t', 'is_one', '{pixels}', lambda => 1e-2, replace => true);
SELECT count(*) AS grants_after_replace FROM unlearn.model_grants WHERE model = 'mr';
SELECT unlearn_drop('mr_tiny');
RESET ROLE;
SELECT model, grantee FROM unlearn.model_grants WHERE model IN ('mr', 'mr_tiny');

-- 9. the ledger is the model's, not the name's: a role that trains a model
-- of the same name after the owner dropped it sees none of the old rows
SET ROLE mr_owner;
SELECT unlearn_drop('mr');
RESET ROLE;
CREATE TABLE mr_own AS SELECT * FROM ones_sevens;
ALTER TABLE mr_own OWNER TO mr_analyst;
SET ROLE mr_analyst;
SELECT model FROM unlearn_train('mr', 'mr_own', 'is_one', '{pixels}', sigma => 2);
SELECT unlearn_grant('mr', 'mr_analyst', 'monitor');
SELECT operation, owner FROM unlearn_ledger('mr') ORDER BY id;
SELECT operation, owner FROM unlearn.ledger ORDER BY id;
SELECT unlearn_drop('mr');
RESET ROLE;

-- 10. a grant to a role that was dropped can still be revoked (by OID);
-- evaluation on a relation that does not exist is a clear error
CREATE ROLE mr_gone;
SET ROLE mr_owner;
SELECT model FROM unlearn_train('mr', 'mr_t', 'is_one', '{pixels}', sigma => 2);
SELECT unlearn_grant('mr', 'mr_gone');
RESET ROLE;
SELECT oid AS gone_oid FROM pg_roles WHERE rolname = 'mr_gone' \gset
DROP ROLE mr_gone;
SET ROLE mr_owner;
SELECT count(*) AS dangling FROM unlearn.model_grants WHERE model = 'mr';
SELECT unlearn_revoke('mr', :gone_oid::oid::regrole);
SELECT count(*) AS dangling FROM unlearn.model_grants WHERE model = 'mr';
SELECT rows FROM unlearn_evaluate('mr', 0::regclass);
SELECT unlearn_drop('mr');
RESET ROLE;
DROP VIEW mr_matrix;
DROP FUNCTION sqlstate_of(text);
DROP FUNCTION mr_leak(text);
DROP TABLE mr_paths, mr_t, mr_own;
DROP ROLE mr_owner, mr_analyst, mr_reader, mr_monitor, mr_member, mr_team;
