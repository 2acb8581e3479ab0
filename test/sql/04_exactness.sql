-- Least squares: after hundreds of single-row deletions the model equals a
-- refit on the remaining rows to 1e-9 relative.
CREATE TABLE lsq AS SELECT * FROM diabetes;
SELECT model FROM unlearn_train('lsq', 'lsq', 'target', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
								loss => 'squared', lambda => 1e-4, sigma => 0);
-- keep the row of largest norm, so that the refit's row map (its scale s)
-- is the same as the model's
SELECT id AS widest FROM lsq
ORDER BY sqrt(1 + age^2 + sex^2 + bmi^2 + bp^2 + s1^2 + s2^2 + s3^2 + s4^2 + s5^2 + s6^2) DESC LIMIT 1 \gset
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN SELECT id FROM lsq WHERE id % 3 <> 0 AND id <> :widest ORDER BY id LOOP
		DELETE FROM lsq WHERE id = r.id;
	END LOOP;
END $$;
-- and a few batch statements, an update and an insert
DELETE FROM lsq WHERE id IN (3, 6, 9, 12, 15) AND id <> :widest;
UPDATE lsq SET bmi = bmi + 1 WHERE id = 18;
INSERT INTO lsq SELECT * FROM diabetes WHERE id IN (1, 2);
SELECT removed, inserted, rows, (SELECT count(*) FROM lsq) AS table_rows FROM unlearn.models WHERE model = 'lsq';

-- the refit uses the same Lambda: lambda * rows = the frozen Lambda
SELECT reg / rows AS refit_lambda FROM unlearn.models WHERE model = 'lsq' \gset
CREATE TABLE lsq_copy AS SELECT * FROM lsq;
SELECT model FROM unlearn_train('lsq_refit', 'lsq_copy', 'target', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
								loss => 'squared', lambda => :refit_lambda, sigma => 0);
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
