-- The Hessian factors and K' live in an UNLOGGED table, which a crash
-- empties.  The next change then retrains the model (always a valid
-- removal) instead of using state that no longer exists.
SELECT relpersistence FROM pg_class WHERE oid = 'unlearn.model_blocks'::regclass;
CREATE TABLE lost AS SELECT * FROM ones_sevens;
SELECT model FROM unlearn_train('lost', 'lost', 'is_one', '{pixels}', lambda => 1e-2, sigma => 2);
SELECT count(*) > 0 AS has_blocks FROM unlearn.model_blocks WHERE model = 'lost';
-- what crash recovery does to an unlogged table
DELETE FROM unlearn.model_blocks WHERE model = 'lost';
-- a crash also restarts every backend, emptying its cache of matrices
\c -
-- prediction needs no secret state
SELECT unlearn_predict('lost', array_fill(0::float8, ARRAY[64])) BETWEEN 0 AND 1 AS predicts;
DELETE FROM lost WHERE id = (SELECT min(id) FROM lost);
SELECT retrains, rows = (SELECT count(*) FROM lost) AS in_step FROM unlearn.models WHERE model = 'lost';
SELECT count(*) > 0 AS blocks_rebuilt FROM unlearn.model_blocks WHERE model = 'lost';
SELECT certified FROM unlearn_verify('lost');
-- and removals go on as usual afterwards
DELETE FROM lost WHERE id = (SELECT min(id) FROM lost);
SELECT retrains, removed FROM unlearn.models WHERE model = 'lost';
SELECT unlearn_drop('lost');
DROP TABLE lost;
