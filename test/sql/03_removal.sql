-- DELETE, INSERT, UPDATE and TRUNCATE keep models in step, inside the
-- transaction.  ROLLBACK leaves the stored model and its resident
-- matrices (shared memory) as they were, bit for bit.
\set SHOW_CONTEXT never
CREATE TABLE rm AS SELECT id, is_one, pixels FROM ones_sevens;
ALTER TABLE rm ADD PRIMARY KEY (id);
ALTER TABLE rm ADD COLUMN note text;
SELECT model, rows FROM unlearn_train('rm', 'rm', 'is_one', '{pixels}', lambda => 1e-2, sigma => 2);

CREATE FUNCTION pg_temp.fingerprint(m text) RETURNS text LANGUAGE sql AS $$
	SELECT md5(row(mo.*)::text || row(s.*)::text) || coalesce(unlearn._matrices_digest(m), 'not resident')
	FROM unlearn.models mo JOIN unlearn.model_state s USING (model) WHERE mo.model = m
$$;
SELECT pg_temp.fingerprint('rm') AS before \gset

-- ROLLBACK leaves the model bit for bit as it was
BEGIN;
DELETE FROM rm WHERE id IN (SELECT id FROM rm ORDER BY id LIMIT 5);
SELECT rows, removed, spent > 0 AS spent FROM unlearn.models WHERE model = 'rm';
ROLLBACK;
SELECT pg_temp.fingerprint('rm') = :'before' AS identical_after_rollback;

-- and so does ROLLBACK TO SAVEPOINT
BEGIN;
SAVEPOINT s;
DELETE FROM rm WHERE id = (SELECT min(id) FROM rm);
INSERT INTO rm SELECT id + 100000, is_one, pixels FROM rm ORDER BY id LIMIT 2;
ROLLBACK TO SAVEPOINT s;
SELECT pg_temp.fingerprint('rm') = :'before' AS identical_after_savepoint;
COMMIT;

-- a committed DELETE: counts, budget, one ledger row per statement
SELECT spent AS spent0 FROM unlearn.models WHERE model = 'rm' \gset
DELETE FROM rm WHERE id IN (SELECT id FROM rm ORDER BY id LIMIT 3);
DELETE FROM rm WHERE id = (SELECT max(id) FROM rm);
SELECT rows, removed, inserted, spent > :spent0 AS spent_grew FROM unlearn.models WHERE model = 'rm';
SELECT operation, rows_removed, rows_added, bound > 0 AS bound_positive,
	   abs(spent - (SELECT spent FROM unlearn.models WHERE model = 'rm')) < 1e-15 OR id <> (SELECT max(id) FROM unlearn.ledger WHERE model = 'rm') AS spent_matches
FROM unlearn.ledger WHERE model = 'rm' ORDER BY id;
-- (accuracy: over 200 noise draws at sigma 2 this model's training accuracy
-- ranged from 0.975 to 1, mean 0.996; one draw in 200 fell below 0.98, which
-- failed this test about once in 40 runs.  The threshold catches a model
-- that no longer classifies, chance being 0.5; near_retrain and the residual
-- check the update itself.)
SELECT certified, residual <= spent AS residual_within_spent, retrain_distance < 0.1 AS near_retrain,
	   accuracy > 0.95 AS accurate, retrain_accuracy > 0.95 AS retrain_accurate
FROM unlearn_verify('rm');
-- the model agrees with the table
SELECT (SELECT rows FROM unlearn.models WHERE model = 'rm') = count(*) AS rows_match FROM rm;

-- INSERT adds rows with a Newton step, and pays for it
INSERT INTO rm SELECT id + 100000, is_one, pixels FROM ones_sevens ORDER BY id LIMIT 4;
SELECT rows, inserted FROM unlearn.models WHERE model = 'rm';

-- UPDATE of other columns spends nothing and writes no ledger row
SELECT spent AS spent1, (SELECT count(*) FROM unlearn.ledger) AS ledger1 FROM unlearn.models WHERE model = 'rm' \gset
UPDATE rm SET note = 'checked' WHERE id < 100;
SELECT spent = :spent1 AS unchanged, (SELECT count(*) FROM unlearn.ledger) = :ledger1 AS no_ledger_row
FROM unlearn.models WHERE model = 'rm';
-- UPDATE of a feature or the label is rectification: remove old, add new
UPDATE rm SET is_one = NOT is_one WHERE id = (SELECT min(id) FROM rm);
SELECT operation, rows_removed, rows_added FROM unlearn.ledger WHERE model = 'rm' ORDER BY id DESC LIMIT 1;
UPDATE rm SET is_one = NOT is_one WHERE id = (SELECT min(id) FROM rm);
SELECT certified FROM unlearn_verify('rm');
-- NaN in an updated row is a missing value ("nulls": "impute", the
-- default): the row stays in the model with the pixel's centre, and a
-- finite value replaces it; no value makes the write fail
UPDATE rm SET pixels[3] = 'NaN' WHERE id = (SELECT min(id) FROM rm);
SELECT rows = (SELECT count(*) FROM rm) AS still_in_the_model, skipped FROM unlearn.status WHERE model = 'rm';
SELECT certified FROM unlearn_verify('rm');
UPDATE rm SET pixels[3] = 0 WHERE id = (SELECT min(id) FROM rm);
SELECT rows = (SELECT count(*) FROM rm) AS still_in_the_model, skipped FROM unlearn.status WHERE model = 'rm';

-- TRUNCATE forgets every row: the model rests, releasing and keeping nothing
-- (rolled back here)
BEGIN;
TRUNCATE rm;
SELECT state, rows FROM unlearn.status WHERE model = 'rm';
SELECT count(*) AS state_rows FROM unlearn.model_state WHERE model = 'rm';
ROLLBACK;
SELECT state, rows = (SELECT count(*) FROM rm) AS in_step FROM unlearn.status WHERE model = 'rm';

-- the triggers cannot be disabled, dropped, or the columns changed under a model
ALTER TABLE rm DISABLE TRIGGER unlearn_after_delete;
ALTER TABLE rm DISABLE TRIGGER ALL;
ALTER TABLE rm ENABLE TRIGGER unlearn_after_delete;
DROP TRIGGER unlearn_after_delete ON rm;
ALTER TABLE rm DROP COLUMN pixels;
ALTER TABLE rm ALTER COLUMN pixels TYPE real[];
ALTER TABLE rm RENAME COLUMN is_one TO one;
-- other changes are fine
ALTER TABLE rm ADD COLUMN extra int;
ALTER TABLE rm RENAME TO rm2;
ALTER TABLE rm2 RENAME TO rm;

-- session_replication_role = replica does not silence the ALWAYS triggers
SET session_replication_role = replica;
DELETE FROM rm WHERE id = (SELECT min(id) FROM rm);
RESET session_replication_role;
SELECT (SELECT rows FROM unlearn.models WHERE model = 'rm') = count(*) AS rows_match FROM rm;

-- budget exhausted under 'suspend': the DELETE goes through, the model
-- withholds its weights (and keeps no state) until unlearn_retrain
CREATE TABLE rmb AS SELECT * FROM ones_sevens;
SELECT model FROM unlearn_train('strict', 'rmb', 'is_one', '{pixels}', sigma => 1e-6, options => '{"on_exhausted": "suspend"}');
\set VERBOSITY terse
DELETE FROM rmb WHERE id = (SELECT min(id) FROM rmb);
\set VERBOSITY default
SELECT state, coef IS NULL AS withheld, rows = (SELECT count(*) FROM rmb) AS in_step
FROM unlearn.models WHERE model = 'strict';
SELECT count(*) AS state_rows FROM unlearn.model_state WHERE model = 'strict';
SELECT unlearn_predict('strict', array_fill(0::float8, ARRAY[64]));
DELETE FROM rmb WHERE id = (SELECT min(id) FROM rmb);
SELECT state, rows = (SELECT count(*) FROM rmb) AS in_step FROM unlearn.models WHERE model = 'strict';
SELECT model FROM unlearn_retrain('strict');
SELECT state, retrains FROM unlearn.status WHERE model = 'strict';
SELECT unlearn_predict('strict', array_fill(0::float8, ARRAY[64])) BETWEEN 0 AND 1 AS predicts;

-- under 'retrain' it retrains on the remaining rows with fresh noise
SELECT model FROM unlearn_train('strict', 'rmb', 'is_one', '{pixels}', sigma => 1e-6, replace => true);
SELECT noise AS noise_before FROM unlearn.model_state WHERE model = 'strict' \gset
DELETE FROM rmb WHERE id = (SELECT min(id) FROM rmb);
SELECT retrains, rows, trained_rows = rows AS fresh, spent <= budget AS within_budget
FROM unlearn.models WHERE model = 'strict';
SELECT noise <> :'noise_before' AS fresh_noise FROM unlearn.model_state WHERE model = 'strict';
SELECT operation, retrained FROM unlearn.ledger WHERE model = 'strict' ORDER BY id DESC LIMIT 1;
SELECT unlearn_drop('strict');

-- a NOTICE once less than 10% of the budget is left
SELECT model FROM unlearn_train('warn', 'rmb', 'is_one', '{pixels}', lambda => 1e-2, sigma => 1);
\set VERBOSITY terse
DO $$
DECLARE
	i int := 0;
BEGIN
	WHILE (SELECT spent < 0.9 * budget AND retrains = 0 FROM unlearn.models WHERE model = 'warn') AND i < 300 LOOP
		DELETE FROM rmb WHERE id = (SELECT min(id) FROM rmb);
		i := i + 1;
	END LOOP;
END $$;
\set VERBOSITY default
SELECT retrains, spent >= 0.9 * budget AND spent <= budget AS in_last_tenth FROM unlearn.models WHERE model = 'warn';
SELECT unlearn_drop('warn');
DROP TABLE rmb;

-- largest_statement is the square root of deletions_left: one statement of
-- k rows costs up to k^2 single-row bounds (0 when the noise drawn left
-- less than one row's budget, as one suite run in this session drew:
-- no "> 0" here)
CREATE TABLE rms AS SELECT id, label = 1 AS is_one, pixels FROM digits WHERE label IN (1, 7);
SELECT model FROM unlearn_train('rms', 'rms', 'is_one', '{pixels}', sigma => 10);
DELETE FROM rms WHERE id IN (SELECT id FROM rms ORDER BY id LIMIT 3);
SELECT largest_statement = floor(sqrt(least(greatest(budget - spent, 0) /
		   (SELECT sum(bound) / sum(rows_removed + rows_added) FROM unlearn.ledger
			WHERE model = 'rms' AND operation <> 'train'), 1e15)))::bigint AS square_root,
	   largest_statement ^ 2 <= deletions_left + 1 AND (largest_statement + 1) ^ 2 > deletions_left
		   AS below_deletions_left
FROM unlearn.status WHERE model = 'rms';
SELECT unlearn_drop('rms');
DROP TABLE rms;

-- least squares: removal is exact and spends nothing
CREATE TABLE diab2 AS SELECT * FROM diabetes;
SELECT model FROM unlearn_train('diab2', 'diab2', 'target', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
								loss => 'squared', lambda => 1e-6, sigma => 1);
SELECT spent AS lsq_spent FROM unlearn.models WHERE model = 'diab2' \gset
DELETE FROM diab2 WHERE id % 7 = 0;
SELECT spent >= :lsq_spent AS accounts_rounding, spent < :lsq_spent + 1e-6 AS spends_only_rounding,
	   retrains, removed FROM unlearn.models WHERE model = 'diab2';
-- nothing to count down: unlearn.status shows no deletions left
SELECT deletions_left, largest_statement FROM unlearn.status WHERE model = 'diab2';

-- DROP TABLE drops its models; a dropped model leaves the table free
DROP TABLE diab2;
SELECT count(*) AS diab2_models FROM unlearn.models WHERE model = 'diab2';
SELECT unlearn_drop('rm');
SELECT count(*) AS triggers_left FROM pg_trigger WHERE tgrelid = 'rm'::regclass;
SELECT count(*) AS ledger_rows_before FROM unlearn.ledger \gset
DELETE FROM rm WHERE id = (SELECT min(id) FROM rm);
TRUNCATE rm;
SELECT count(*) = :ledger_rows_before AS no_ledger_rows FROM unlearn.ledger;
DROP TABLE rm;
