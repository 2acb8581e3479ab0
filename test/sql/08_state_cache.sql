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

SET unlearn.state_cache = '64MB';
BEGIN;
DELETE FROM cache_a WHERE id % 7 = 0;
ROLLBACK;
BEGIN;
SAVEPOINT s;
DELETE FROM cache_a WHERE id % 5 = 0;
ROLLBACK TO SAVEPOINT s;
DELETE FROM cache_a WHERE id % 11 = 0;
DELETE FROM cache_a WHERE id % 13 = 0;
COMMIT;
BEGIN;
DELETE FROM cache_a WHERE id % 17 = 0;
ROLLBACK;
INSERT INTO cache_a SELECT id + 10000, y, pixels FROM cache_a WHERE id % 19 = 0;
DELETE FROM cache_a WHERE id % 23 = 0;

SET unlearn.state_cache = 0;
BEGIN;
DELETE FROM cache_b WHERE id % 7 = 0;
ROLLBACK;
BEGIN;
SAVEPOINT s;
DELETE FROM cache_b WHERE id % 5 = 0;
ROLLBACK TO SAVEPOINT s;
DELETE FROM cache_b WHERE id % 11 = 0;
DELETE FROM cache_b WHERE id % 13 = 0;
COMMIT;
BEGIN;
DELETE FROM cache_b WHERE id % 17 = 0;
ROLLBACK;
INSERT INTO cache_b SELECT id + 10000, y, pixels FROM cache_b WHERE id % 19 = 0;
DELETE FROM cache_b WHERE id % 23 = 0;
RESET unlearn.state_cache;

SELECT (SELECT rows FROM unlearn.models WHERE model = 'cache_a') = (SELECT count(*) FROM cache_a) AS in_step,
	   pg_temp.state('cache_a') = pg_temp.state('cache_b') AS same_at_end;

-- VACUUM FULL moves the block rows; the cached row locations must not be used
VACUUM FULL unlearn.model_blocks;
DELETE FROM cache_a WHERE id % 29 = 0;
SET unlearn.state_cache = 0;
DELETE FROM cache_b WHERE id % 29 = 0;
RESET unlearn.state_cache;
SELECT pg_temp.state('cache_a') = pg_temp.state('cache_b') AS same_after_vacuum_full;

-- a cold cache: the version read from the table is cached as read, and a
-- rolled-back statement must not change that entry
\c -
BEGIN;
DELETE FROM cache_a WHERE id % 31 = 0;
ROLLBACK;
DELETE FROM cache_a WHERE id % 37 = 0;
SET unlearn.state_cache = 0;
BEGIN;
DELETE FROM cache_b WHERE id % 31 = 0;
ROLLBACK;
DELETE FROM cache_b WHERE id % 37 = 0;
RESET unlearn.state_cache;
SELECT (SELECT md5(coef::text) FROM unlearn.models WHERE model = 'cache_a')
	   = (SELECT md5(coef::text) FROM unlearn.models WHERE model = 'cache_b') AS same_coef_after_cold_rollback,
	   (SELECT string_agg(md5(data), ',' ORDER BY block) FROM unlearn.model_blocks WHERE model = 'cache_a')
	   = (SELECT string_agg(md5(data), ',' ORDER BY block) FROM unlearn.model_blocks WHERE model = 'cache_b') AS same_blocks_after_cold_rollback;

SHOW unlearn.state_cache;
SET unlearn.state_cache = -1;
SELECT unlearn_drop('cache_a'), unlearn_drop('cache_b');
DROP TABLE cache_a, cache_b;
