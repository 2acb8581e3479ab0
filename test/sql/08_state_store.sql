-- The matrices a statement changes are a private copy; the commit
-- publishes the newest one, tagged with the version of the model's state
-- row.  Rolled-back statements and savepoints must never leave shared
-- memory holding a version the tables do not: the same committed changes,
-- with and without rolled-back work in between, give the same model, bit
-- for bit.  (Least squares with sigma 0: two trainings on equal tables give
-- equal models.)
\set SHOW_CONTEXT never
CREATE TABLE store_a AS SELECT id, label::float8 AS y, pixels FROM digits;
CREATE TABLE store_b AS SELECT * FROM store_a;
SELECT model FROM unlearn_train('store_a', 'store_a', 'y', '{pixels}', loss => 'squared', sigma => 0);
SELECT model FROM unlearn_train('store_b', 'store_b', 'y', '{pixels}', loss => 'squared', sigma => 0);
CREATE FUNCTION pg_temp.state(m text) RETURNS text LANGUAGE sql AS $$
	SELECT md5((SELECT coef::text FROM unlearn.models WHERE model = m)) || unlearn._matrices_digest(m)
$$;
SELECT pg_temp.state('store_a') = pg_temp.state('store_b') AS same_at_start;

-- store_a runs every statement, store_b only those that commit
-- (\gexec runs each as its own statement, %1$I the table)
CREATE TABLE script (n int, committed boolean, stmt text);
INSERT INTO script VALUES
	(1, false, 'BEGIN'),
	(2, false, 'DELETE FROM %1$I WHERE mod(id, 7) = 0'),
	(3, false, 'ROLLBACK'),
	(4, true, 'BEGIN'),
	(5, false, 'SAVEPOINT s'),
	(6, false, 'DELETE FROM %1$I WHERE mod(id, 5) = 0'),
	(7, false, 'ROLLBACK TO SAVEPOINT s'),
	(8, true, 'DELETE FROM %1$I WHERE mod(id, 11) = 0'),
	(9, false, 'SAVEPOINT t'),
	(10, true, 'DELETE FROM %1$I WHERE mod(id, 13) = 0'),
	(11, false, 'RELEASE SAVEPOINT t'),
	(12, false, 'SAVEPOINT u'),
	(13, false, 'DELETE FROM %1$I WHERE mod(id, 3) = 0'),
	(14, false, 'ROLLBACK TO SAVEPOINT u'),
	(15, true, 'COMMIT'),
	(16, false, 'BEGIN'),
	(17, false, 'DELETE FROM %1$I WHERE mod(id, 17) = 0'),
	(18, false, 'ROLLBACK'),
	(19, true, 'INSERT INTO %1$I SELECT id + 10000, y, pixels FROM %1$I WHERE mod(id, 19) = 0'),
	(20, true, 'DELETE FROM %1$I WHERE mod(id, 23) = 0');
SELECT format(stmt, 'store_a') FROM script ORDER BY n \gexec
SELECT format(stmt, 'store_b') FROM script WHERE committed ORDER BY n \gexec

SELECT model, s.removed, s.inserted, m.reanchors, s.resident FROM unlearn.status s JOIN unlearn.models m USING (model)
WHERE model IN ('store_a', 'store_b') ORDER BY model;
SELECT (SELECT rows FROM unlearn.models WHERE model = 'store_a') = (SELECT count(*) FROM store_a) AS in_step,
	   pg_temp.state('store_a') = pg_temp.state('store_b') AS same_at_end;

-- another backend uses the published version (a hit, no rebuild), and a
-- rolled-back statement there leaves it as it was
\c -
CREATE FUNCTION pg_temp.state(m text) RETURNS text LANGUAGE sql AS $$
	SELECT md5((SELECT coef::text FROM unlearn.models WHERE model = m)) || unlearn._matrices_digest(m)
$$;
SELECT hits AS hits_before FROM unlearn_runtime() \gset
SELECT unlearn._matrices_digest('store_a') AS digest_before \gset
BEGIN;
DELETE FROM store_a WHERE mod(id, 31) = 0;
ROLLBACK;
SELECT unlearn._matrices_digest('store_a') = :'digest_before' AS unchanged_after_rollback,
	   (SELECT hits FROM unlearn_runtime()) > :hits_before AS was_a_hit;
DELETE FROM store_a WHERE mod(id, 37) = 0;
DELETE FROM store_b WHERE mod(id, 37) = 0;
SELECT model, removed, inserted, reanchors FROM unlearn.models WHERE model IN ('store_a', 'store_b') ORDER BY model;
SELECT pg_temp.state('store_a') = pg_temp.state('store_b') AS same_in_a_new_backend;

-- dropping a model frees its matrices at commit, not before
BEGIN;
SELECT unlearn_drop('store_b');
ROLLBACK;
SELECT resident FROM unlearn.status WHERE model = 'store_b';
SELECT resident_models AS resident_before FROM unlearn_runtime() \gset
SELECT unlearn_drop('store_a'), unlearn_drop('store_b');
SELECT resident_models = :resident_before - 2 AS freed FROM unlearn_runtime();
SHOW unlearn.state_memory;
SET unlearn.state_memory = '1GB';
DROP TABLE store_a, store_b, script;
