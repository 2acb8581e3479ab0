-- A backend keeps the matrices of the model states it read or wrote
-- (state_cache.c), keyed by the version of the model's state row.  Rolled
-- back statements and savepoints must never leave it serving a version the
-- table does not hold: the same statements with and without the cache give
-- the same model, bit for bit.  (Least squares with sigma 0: two trainings
-- on equal tables give equal models.)
\set SHOW_CONTEXT never
CREATE TABLE cache_a AS SELECT id, label::float8 AS y, pixels FROM digits;
CREATE TABLE cache_b AS SELECT * FROM cache_a;
SELECT model FROM unlearn_train('cache_a', 'cache_a', 'y', '{pixels}', loss => 'squared', sigma => 0);
SELECT model FROM unlearn_train('cache_b', 'cache_b', 'y', '{pixels}', loss => 'squared', sigma => 0);
CREATE FUNCTION pg_temp.state(m text) RETURNS text LANGUAGE sql AS $$
	SELECT md5((SELECT coef::text FROM unlearn.models WHERE model = m)
			   || (SELECT string_agg(data::text, ',' ORDER BY block) FROM unlearn.model_blocks WHERE model = m))
$$;
SELECT pg_temp.state('cache_a') = pg_temp.state('cache_b') AS same_at_start;

-- One sequence of statements, run on cache_a with the cache and on cache_b
-- without it (\gexec runs each as its own statement, %1$I the table).
CREATE TABLE script (part text, n int, stmt text);
INSERT INTO script VALUES
	('main', 1, 'BEGIN'),
	('main', 2, 'DELETE FROM %1$I WHERE mod(id, 7) = 0'),
	('main', 3, 'ROLLBACK'),
	('main', 4, 'BEGIN'),
	('main', 5, 'SAVEPOINT s'),
	('main', 6, 'DELETE FROM %1$I WHERE mod(id, 5) = 0'),
	('main', 7, 'ROLLBACK TO SAVEPOINT s'),
	('main', 8, 'DELETE FROM %1$I WHERE mod(id, 11) = 0'),
	('main', 9, 'DELETE FROM %1$I WHERE mod(id, 13) = 0'),
	('main', 10, 'COMMIT'),
	('main', 11, 'BEGIN'),
	('main', 12, 'DELETE FROM %1$I WHERE mod(id, 17) = 0'),
	('main', 13, 'ROLLBACK'),
	('main', 14, 'INSERT INTO %1$I SELECT id + 10000, y, pixels FROM %1$I WHERE mod(id, 19) = 0'),
	('main', 15, 'DELETE FROM %1$I WHERE mod(id, 23) = 0'),
	('cold', 1, 'BEGIN'),
	('cold', 2, 'DELETE FROM %1$I WHERE mod(id, 31) = 0'),
	('cold', 3, 'ROLLBACK'),
	('cold', 4, 'DELETE FROM %1$I WHERE mod(id, 37) = 0');
SET unlearn.state_cache = '64MB';
SELECT format(stmt, 'cache_a') FROM script WHERE part = 'main' ORDER BY n \gexec
SET unlearn.state_cache = 0;
SELECT format(stmt, 'cache_b') FROM script WHERE part = 'main' ORDER BY n \gexec
RESET unlearn.state_cache;

SELECT model, removed, inserted FROM unlearn.models WHERE model IN ('cache_a', 'cache_b') ORDER BY model;
SELECT (SELECT rows FROM unlearn.models WHERE model = 'cache_a') = (SELECT count(*) FROM cache_a) AS in_step,
	   pg_temp.state('cache_a') = pg_temp.state('cache_b') AS same_at_end;

-- VACUUM FULL moves the block rows; the cached row locations must not be used
VACUUM FULL unlearn.model_blocks;
DELETE FROM cache_a WHERE mod(id, 29) = 0;
SET unlearn.state_cache = 0;
DELETE FROM cache_b WHERE mod(id, 29) = 0;
RESET unlearn.state_cache;
SELECT pg_temp.state('cache_a') = pg_temp.state('cache_b') AS same_after_vacuum_full;

-- a cold cache: the version read from the table is cached as read, and a
-- rolled-back statement must not change that entry
\c -
SELECT format(stmt, 'cache_a') FROM script WHERE part = 'cold' ORDER BY n \gexec
SET unlearn.state_cache = 0;
SELECT format(stmt, 'cache_b') FROM script WHERE part = 'cold' ORDER BY n \gexec
RESET unlearn.state_cache;
SELECT model, removed, inserted FROM unlearn.models WHERE model IN ('cache_a', 'cache_b') ORDER BY model;
SELECT (SELECT md5(coef::text) FROM unlearn.models WHERE model = 'cache_a')
	   = (SELECT md5(coef::text) FROM unlearn.models WHERE model = 'cache_b') AS same_coef_after_cold_rollback,
	   (SELECT string_agg(md5(data), ',' ORDER BY block) FROM unlearn.model_blocks WHERE model = 'cache_a')
	   = (SELECT string_agg(md5(data), ',' ORDER BY block) FROM unlearn.model_blocks WHERE model = 'cache_b') AS same_blocks_after_cold_rollback;

SHOW unlearn.state_cache;
SET unlearn.state_cache = -1;
SELECT unlearn_drop('cache_a'), unlearn_drop('cache_b');
DROP TABLE cache_a, cache_b, script;
