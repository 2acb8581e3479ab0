-- Fixture: sklearn's raw diabetes data, 442 rows, read straight from the
-- files that python3-sklearn ships.  Use from a pg_regress test (which runs
-- from the repository root) with:  \i test/data/diabetes.sql
-- Features and target are in two files; both are read with a row number and
-- joined on it.
CREATE TABLE diabetes (id serial PRIMARY KEY,
	age float8 NOT NULL, sex float8 NOT NULL, bmi float8 NOT NULL, bp float8 NOT NULL,
	s1 float8 NOT NULL, s2 float8 NOT NULL, s3 float8 NOT NULL, s4 float8 NOT NULL,
	s5 float8 NOT NULL, s6 float8 NOT NULL, target float8 NOT NULL);
CREATE TEMP TABLE diabetes_x (n serial, age float8, sex float8, bmi float8, bp float8,
	s1 float8, s2 float8, s3 float8, s4 float8, s5 float8, s6 float8);
CREATE TEMP TABLE diabetes_y (n serial, target float8);
\copy diabetes_x (age, sex, bmi, bp, s1, s2, s3, s4, s5, s6) FROM PROGRAM 'zcat /usr/lib/python3/dist-packages/sklearn/datasets/data/diabetes_data_raw.csv.gz' (FORMAT csv, DELIMITER ' ')
\copy diabetes_y (target) FROM PROGRAM 'zcat /usr/lib/python3/dist-packages/sklearn/datasets/data/diabetes_target.csv.gz'
INSERT INTO diabetes (age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target)
SELECT age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target
FROM diabetes_x JOIN diabetes_y USING (n) ORDER BY n;
DROP TABLE diabetes_x, diabetes_y;
ANALYZE diabetes;
