-- Least squares: after hundreds of single-row deletions the model equals a
-- refit on the remaining rows to 1e-9 relative.  No column map, so that
-- every statement takes the Newton step (13_preprocess covers the
-- standardized map, which retrains when its grid step moves).
CREATE TABLE lsq AS SELECT * FROM diabetes;
SELECT model FROM unlearn_train('lsq', 'lsq', 'target', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
								loss => 'squared', lambda => 1e-4, sigma => 0, options => '{"preprocess": "none"}');
-- keep the row of largest norm (it bounded the row map before 0.3.0)
-- (a table, not a psql variable: psql does not substitute inside a DO body)
CREATE TEMP TABLE widest AS SELECT id FROM lsq
ORDER BY sqrt(1 + age^2 + sex^2 + bmi^2 + bp^2 + s1^2 + s2^2 + s3^2 + s4^2 + s5^2 + s6^2) DESC LIMIT 1;
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN SELECT id FROM lsq WHERE id % 3 <> 0 AND id NOT IN (SELECT id FROM widest) ORDER BY id LOOP
		DELETE FROM lsq WHERE id = r.id;
	END LOOP;
END $$;
-- and a few batch statements, an update and an insert
DELETE FROM lsq WHERE id IN (3, 6, 9, 12, 15) AND id NOT IN (SELECT id FROM widest);
UPDATE lsq SET bmi = bmi + 1 WHERE id = 18;
INSERT INTO lsq SELECT * FROM diabetes WHERE id IN (1, 2);
SELECT removed, inserted, rows, (SELECT count(*) FROM lsq) AS table_rows FROM unlearn.models WHERE model = 'lsq';

-- the refit uses the same Lambda: lambda * rows = the frozen Lambda
SELECT reg / rows AS refit_lambda FROM unlearn.models WHERE model = 'lsq' \gset
CREATE TABLE lsq_copy AS SELECT * FROM lsq;
SELECT model FROM unlearn_train('lsq_refit', 'lsq_copy', 'target', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
								loss => 'squared', lambda => :refit_lambda, sigma => 0, options => '{"preprocess": "none"}');
SELECT count(DISTINCT scale) AS one_row_map FROM unlearn.models WHERE model IN ('lsq', 'lsq_refit');
WITH a AS (SELECT unnest(unlearn_coef('lsq')) AS v, generate_subscripts(unlearn_coef('lsq'), 1) AS i),
	 b AS (SELECT unnest(unlearn_coef('lsq_refit')) AS v, generate_subscripts(unlearn_coef('lsq_refit'), 1) AS i)
SELECT sqrt(sum((a.v - b.v) ^ 2)) / sqrt(sum(b.v ^ 2)) < 1e-9 AS equal_to_1e9,
	   sqrt(sum((a.v - b.v) ^ 2)) / sqrt(sum(b.v ^ 2)) > 0 AS not_trivially_equal
FROM a JOIN b USING (i);
-- predictions agree too
SELECT max(abs(unlearn_predict('lsq', ARRAY[age,sex,bmi,bp,s1,s2,s3,s4,s5,s6])
			 - unlearn_predict('lsq_refit', ARRAY[age,sex,bmi,bp,s1,s2,s3,s4,s5,s6]))) < 1e-7 AS same_predictions
FROM diabetes;
-- unlearn_verify's retrain (same Lambda, same row map) agrees as well
SELECT retrain_distance / sqrt((SELECT sum(c ^ 2) FROM unnest(unlearn_coef('lsq')) c)) < 1e-9 AS verify_agrees,
	   round(accuracy::numeric, 6) = round(retrain_accuracy::numeric, 6) AS same_r2
FROM unlearn_verify('lsq');
SELECT unlearn_drop('lsq');
SELECT unlearn_drop('lsq_refit');
DROP TABLE lsq, lsq_copy;

-- The same at p = 65 (digits), where the down-date's factor spans three
-- chunks of 32 rows, the last one partial: statements of 150 rows (more than
-- one group of 64 down-dated rows), of 17 rows, and single rows, against a
-- refit.
CREATE TABLE lsq_wide AS SELECT id, label::float8 AS digit, pixels FROM digits;
SELECT model FROM unlearn_train('lsq_wide', 'lsq_wide', 'digit', '{pixels}',
								loss => 'squared', lambda => 1e-3, sigma => 0);
TRUNCATE widest;
INSERT INTO widest SELECT id FROM lsq_wide
ORDER BY (SELECT sum(v ^ 2) FROM unnest(pixels) v) DESC, id LIMIT 1;
DELETE FROM lsq_wide WHERE id <= 150 AND id NOT IN (SELECT id FROM widest);
DELETE FROM lsq_wide WHERE id > 150 AND id <= 167 AND id NOT IN (SELECT id FROM widest);
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN SELECT id FROM lsq_wide WHERE id % 7 = 0 AND id NOT IN (SELECT id FROM widest) ORDER BY id LIMIT 40 LOOP
		DELETE FROM lsq_wide WHERE id = r.id;
	END LOOP;
END $$;
SELECT removed, rows, (SELECT count(*) FROM lsq_wide) AS table_rows FROM unlearn.models WHERE model = 'lsq_wide';
SELECT reg / rows AS refit_lambda FROM unlearn.models WHERE model = 'lsq_wide' \gset
CREATE TABLE lsq_wide_copy AS SELECT * FROM lsq_wide;
SELECT model FROM unlearn_train('lsq_wide_refit', 'lsq_wide_copy', 'digit', '{pixels}',
								loss => 'squared', lambda => :refit_lambda, sigma => 0);
WITH a AS (SELECT unnest(unlearn_coef('lsq_wide')) AS v, generate_subscripts(unlearn_coef('lsq_wide'), 1) AS i),
	 b AS (SELECT unnest(unlearn_coef('lsq_wide_refit')) AS v, generate_subscripts(unlearn_coef('lsq_wide_refit'), 1) AS i)
SELECT count(*) AS p,
	   sqrt(sum((a.v - b.v) ^ 2)) / sqrt(sum(b.v ^ 2)) < 1e-9 AS equal_to_1e9,
	   sqrt(sum((a.v - b.v) ^ 2)) / sqrt(sum(b.v ^ 2)) > 0 AS not_trivially_equal
FROM a JOIN b USING (i);
SELECT unlearn_drop('lsq_wide');
SELECT unlearn_drop('lsq_wide_refit');
DROP TABLE lsq_wide, lsq_wide_copy;

-- an outlying label: one row with label 1e20, inserted and deleted.  The
-- step that removes it cancels terms twenty orders of magnitude larger than
-- the model; its rounding allowance makes the model measure its residual,
-- and a corrupted model retrains instead of staying.  Afterwards the model
-- equals a refit on the same rows.
CREATE TABLE lsq_outlier AS SELECT id, age, bmi, target FROM diabetes WHERE id <= 200;
SELECT model FROM unlearn_train('lsq_outlier', 'lsq_outlier', 'target', '{age,bmi}',
								loss => 'squared', lambda => 1e-4, sigma => 0);
INSERT INTO lsq_outlier VALUES (9999, 50, 25, 1e20);
\set VERBOSITY terse
DELETE FROM lsq_outlier WHERE id = 9999;
\set VERBOSITY default
SELECT rows, retrains + reanchors > 0 AS measured FROM unlearn.models WHERE model = 'lsq_outlier';
SELECT certified,
	   retrain_distance <= 1e-9 * (SELECT sqrt(sum(c ^ 2)) FROM unnest(unlearn_coef('lsq_outlier')) c) AS equal_to_refit
FROM unlearn_verify('lsq_outlier');
SELECT unlearn_drop('lsq_outlier');
DROP TABLE lsq_outlier;
