-- The removal matrices live in shared memory only.  A model whose matrices
-- are not resident at the version of its state row (after a restart, a
-- crash, a restore or an eviction) rebuilds them on its next change with
-- one re-anchoring pass at its current w: w and b stay, spent becomes the
-- measured residual, and nothing is retrained.
\set SHOW_CONTEXT never
SELECT state_store, state_memory >= 8 * 1024 * 1024 AS has_memory FROM unlearn_runtime();
CREATE TABLE lost AS SELECT * FROM ones_sevens;
SELECT model FROM unlearn_train('lost', 'lost', 'is_one', '{pixels}', lambda => 1e-2, sigma => 2);
SELECT resident FROM unlearn.status WHERE model = 'lost';
SELECT unlearn_evict('lost') AS evicted, unlearn_evict('lost') AS again;
SELECT resident FROM unlearn.status WHERE model = 'lost';
SELECT coef AS coef_before, (SELECT noise FROM unlearn.model_state WHERE model = 'lost') AS noise_before
FROM unlearn.models WHERE model = 'lost' \gset

-- prediction and verification need no matrices
SELECT unlearn_predict('lost', (SELECT pixels FROM lost ORDER BY id LIMIT 1)) > 0.5 AS predicts;
SELECT certified FROM unlearn_verify('lost');

-- the next change rebuilds them, then applies its rows
DELETE FROM lost WHERE id = (SELECT min(id) FROM lost);
SELECT s.retrains, m.reanchors, s.removed, s.rows = (SELECT count(*) FROM lost) AS in_step, s.resident
FROM unlearn.status s JOIN unlearn.models m USING (model) WHERE model = 'lost';
SELECT operation, rows_removed, reanchored, retrained FROM unlearn.ledger WHERE model = 'lost' ORDER BY id;
SELECT (SELECT noise FROM unlearn.model_state WHERE model = 'lost') = :'noise_before' AS same_noise,
	   coef <> :'coef_before' AS moved_by_the_delete,
	   spent <= budget AS within_budget
FROM unlearn.models WHERE model = 'lost';
SELECT certified FROM unlearn_verify('lost');

-- a rebuild inside a rolled-back transaction publishes nothing
SELECT unlearn_evict('lost');
BEGIN;
DELETE FROM lost WHERE id = (SELECT min(id) FROM lost);
SELECT resident FROM unlearn.status WHERE model = 'lost';
ROLLBACK;
SELECT s.resident, m.reanchors FROM unlearn.status s JOIN unlearn.models m USING (model) WHERE model = 'lost';

-- removals go on as usual afterwards
DELETE FROM lost WHERE id = (SELECT min(id) FROM lost);
DELETE FROM lost WHERE id = (SELECT min(id) FROM lost);
SELECT s.retrains, m.reanchors, s.removed, s.resident FROM unlearn.status s JOIN unlearn.models m USING (model) WHERE model = 'lost';
SELECT certified FROM unlearn_verify('lost');

-- the statement that rebuilds still takes its own step from the rows the
-- model reflected before it: least squares stays equal to a refit to 1e-9
-- through a rebuild at a DELETE, at an INSERT and at an UPDATE (with no
-- column map, so that no statement moves a grid step and retrains instead)
CREATE TABLE lost_lsq AS SELECT * FROM diabetes;
SELECT model FROM unlearn_train('lost_lsq', 'lost_lsq', 'target', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
								loss => 'squared', lambda => 1e-6, sigma => 0, options => '{"preprocess": "none"}');
SELECT unlearn_evict('lost_lsq');
DELETE FROM lost_lsq WHERE id % 10 = 0;
SELECT unlearn_evict('lost_lsq');
INSERT INTO lost_lsq SELECT id + 1000, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target + 50
FROM diabetes WHERE id % 7 = 0;
SELECT unlearn_evict('lost_lsq');
UPDATE lost_lsq SET target = target - 20 WHERE id % 9 = 0;
SELECT count(*) AS rebuilds FROM unlearn.ledger WHERE model = 'lost_lsq' AND operation = 'rebuild';
SELECT retrain_distance <= 1e-9 * (SELECT sqrt(sum(c ^ 2)) FROM unnest(unlearn_coef('lost_lsq')) c) AS equal_to_refit,
	   certified
FROM unlearn_verify('lost_lsq');
SELECT unlearn_drop('lost_lsq');
DROP TABLE lost_lsq;

-- only the owner may evict or read the digest of the matrices
CREATE ROLE lost_other;
SET ROLE lost_other;
SELECT unlearn_evict('lost');
SELECT unlearn._matrices_digest('lost');
RESET ROLE;
DROP ROLE lost_other;
SELECT unlearn_evict('no_such_model');
SELECT unlearn_drop('lost');
DROP TABLE lost;
