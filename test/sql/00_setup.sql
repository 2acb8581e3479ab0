-- Real data sets shipped by Debian's python3-sklearn: digits (1797 x 64,
-- ten classes) and diabetes (442 x 10, a numeric target).
CREATE TABLE digits (id serial PRIMARY KEY, label int, pixels float8[]);
\copy digits (pixels, label) FROM PROGRAM 'zcat /usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz | awk -F, ''{ s = $1; for (i = 2; i < NF; i++) s = s "," $i; print "{" s "}\t" $NF }'''
CREATE TABLE diabetes (id serial PRIMARY KEY, age float8, sex float8, bmi float8, bp float8,
	s1 float8, s2 float8, s3 float8, s4 float8, s5 float8, s6 float8, target float8);
\copy diabetes (age, sex, bmi, bp, s1, s2, s3, s4, s5, s6) FROM PROGRAM 'zcat /usr/lib/python3/dist-packages/sklearn/datasets/data/diabetes_data_raw.csv.gz | tr " " "\t"'
CREATE TEMP TABLE t (id serial, target float8);
\copy t (target) FROM PROGRAM 'zcat /usr/lib/python3/dist-packages/sklearn/datasets/data/diabetes_target.csv.gz'
UPDATE diabetes d SET target = t.target FROM t WHERE t.id = d.id;
SELECT count(*), count(target), min(array_length(pixels, 1)) FROM digits
	LEFT JOIN diabetes USING (id);
-- ones against sevens, with a boolean label
CREATE TABLE ones_sevens AS SELECT id, label = 1 AS is_one, pixels FROM digits WHERE label IN (1, 7);
ALTER TABLE ones_sevens ADD PRIMARY KEY (id);
SELECT is_one, count(*) FROM ones_sevens GROUP BY 1 ORDER BY 1;
