-- scripts/fingerprint_data.sql: the tables of scripts/fingerprint.sql and
-- scripts/compare_builds, in the current schema, from scikit-learn's
-- bundled data (Debian's python3-sklearn): cancer (569 x 30, a 0/1 label),
-- digits (1797 x 64, ten classes), diabetes (442 x 10, a numeric target).
CREATE TABLE cancer (id serial PRIMARY KEY, x float8[], y int);
\copy cancer (x, y) FROM PROGRAM 'tail -n +2 /usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv | awk -F, ''{ s = $1; for (i = 2; i < NF; i++) s = s "," $i; print "{" s "}\t" $NF }'''
CREATE TABLE digits (id serial PRIMARY KEY, x float8[], y int);
\copy digits (x, y) FROM PROGRAM 'zcat /usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz | awk -F, ''{ s = $1; for (i = 2; i < NF; i++) s = s "," $i; print "{" s "}\t" $NF }'''
CREATE TABLE diabetes (id serial PRIMARY KEY, x float8[], y float8);
CREATE TEMP TABLE raw (id serial, line text);
CREATE TEMP TABLE target (id serial, y float8);
\copy raw (line) FROM PROGRAM 'zcat /usr/lib/python3/dist-packages/sklearn/datasets/data/diabetes_data_raw.csv.gz'
\copy target (y) FROM PROGRAM 'zcat /usr/lib/python3/dist-packages/sklearn/datasets/data/diabetes_target.csv.gz'
INSERT INTO diabetes (x, y)
	SELECT string_to_array(trim(r.line), ' ')::float8[], t.y FROM raw r JOIN target t USING (id) ORDER BY id;
