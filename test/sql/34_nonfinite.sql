-- "nulls": "skip" also leaves out a row with a feature that
-- is not a finite number as the model reads it: NaN or ±Infinity in a
-- float or numeric column, a numeric beyond double precision, an infinite
-- date or timestamp, such an element of a feature array.  So no such value
-- makes an ordinary write fail; under "nulls": "error" it is an error, as
-- a null is.  (Under "nulls": "impute", the default, such a value is a
-- missing value: test 35_impute.)
--
-- 1. Training leaves such rows out and counts them in skipped.
-- 2. INSERT, UPDATE (into and out of the model), DELETE, upsert and COPY
--    of such rows go through; after each, rows and skipped equal counts of
--    the table, the classifier is certified and least squares equals a
--    refit to 1e-9.
-- 3. An array feature with an infinite element; more than 100 features;
--    "nulls": "error" refuses.
SET client_min_messages = warning;
CREATE TABLE nf (id int PRIMARY KEY, a float8, b numeric, d date, y float8, yes boolean);
INSERT INTO nf SELECT i, (i % 13) * 0.5, (i % 7) * 1.5, date '2020-01-01' + i % 50, (i % 13) + (i % 7) * 2 + i % 3,
	   (i % 13) + (i % 7) > 9 FROM generate_series(1, 400) i;
UPDATE nf SET a = 'NaN' WHERE id % 40 = 1;
UPDATE nf SET b = 1e400 WHERE id % 40 = 2;
UPDATE nf SET d = 'infinity' WHERE id % 40 = 3;
UPDATE nf SET a = '-Infinity' WHERE id % 40 = 4;
CREATE FUNCTION pg_temp.finite_rows() RETURNS bigint LANGUAGE sql AS $$
	SELECT count(*) FROM nf
	WHERE a NOT IN ('NaN', 'Infinity', '-Infinity') AND abs(b) < 1e300 AND isfinite(d)
$$;
CREATE FUNCTION pg_temp.check(what text) RETURNS TABLE (statement text, model text, in_step boolean,
	certified boolean, refit boolean) LANGUAGE sql AS $$
	SELECT what, m.model, m.rows = pg_temp.finite_rows() AND m.rows + m.skipped = (SELECT count(*) FROM nf),
		   v.certified,
		   m.loss <> 'squared' OR v.retrain_distance <=
			   1e-9 * (SELECT sqrt(sum(c ^ 2)) FROM unnest(unlearn_coef(m.model)) c)
	FROM unlearn.models m, unlearn_verify(m.model) v WHERE m.model LIKE 'nf\_%' ORDER BY m.model
$$;

-- 1.
SELECT model FROM unlearn_train('nf_lsq', 'nf', 'y', '{a,b,d}', loss => 'squared', sigma => 0,
											   lambda => 1e-4, options => '{"nulls": "skip"}');
SELECT model, rows, skipped FROM unlearn.status WHERE model = 'nf_lsq';
SELECT model FROM unlearn_train('nf_log', 'nf', 'yes', '{a,b,d}', sigma => 5,
											   options => '{"nulls": "skip"}');
SELECT model, rows, skipped FROM unlearn.status WHERE model = 'nf_log';
CREATE TEMP TABLE results AS SELECT * FROM pg_temp.check('trained');

-- 2.
INSERT INTO nf VALUES (401, 'Infinity', 1, date '2020-01-01', 3, true), (402, 1, 'NaN', date '2020-01-02', 4, false),
	(403, 2, 3, date '2020-02-02', 10, true);
INSERT INTO results SELECT * FROM pg_temp.check('insert');
UPDATE nf SET a = 'NaN' WHERE id IN (10, 11);
INSERT INTO results SELECT * FROM pg_temp.check('update out');
UPDATE nf SET a = 1.5 WHERE id IN (1, 41, 401);
INSERT INTO results SELECT * FROM pg_temp.check('update in');
DELETE FROM nf WHERE id IN (2, 3, 12);
INSERT INTO results SELECT * FROM pg_temp.check('delete');
INSERT INTO nf VALUES (403, 2, 3, 'infinity', 10, true), (404, 2, 3, '-infinity', 10, true)
ON CONFLICT (id) DO UPDATE SET d = excluded.d;
INSERT INTO results SELECT * FROM pg_temp.check('upsert');
COPY nf FROM stdin;
405	NaN	1	2020-01-01	3	t
406	1	2	2020-01-05	7	f
\.
INSERT INTO results SELECT * FROM pg_temp.check('copy');
SELECT * FROM results ORDER BY model, statement;

-- 3.
CREATE TABLE nf_arr AS SELECT id, label = 8 AS eight, pixels FROM digits WHERE label IN (3, 8) AND id <= 400;
ALTER TABLE nf_arr ADD PRIMARY KEY (id);
UPDATE nf_arr SET pixels[5] = 'Infinity' WHERE id % 30 = 1;
SELECT model FROM unlearn_train('nf_arr', 'nf_arr', 'eight', '{pixels}', sigma => 5,
											   options => '{"nulls": "skip"}');
SELECT model, rows, skipped FROM unlearn.status WHERE model = 'nf_arr';
UPDATE nf_arr SET pixels[9] = '-Infinity' WHERE id % 30 = 2;
SELECT rows, skipped, rows = (SELECT count(*) FROM nf_arr WHERE pixels[5] <> 'Infinity' AND pixels[9] <> '-Infinity')
	   AS in_step
FROM unlearn.models WHERE model = 'nf_arr';
-- a one-dimensional array with an element that is not finite is outside
-- the model whatever its length, written before a retrain (the census
-- counts it) or after the training; an array of another length or shape
-- with finite elements is an error, as before
CREATE TABLE nf_len (id int PRIMARY KEY, x float8[], y boolean);
INSERT INTO nf_len SELECT i, ARRAY[(i % 7) * 0.3, (i % 5) * 0.2], (i % 7) + (i % 5) > 5 FROM generate_series(1, 200) i;
SELECT model FROM unlearn_train('nf_len', 'nf_len', 'y', '{x}', sigma => 5,
											   options => '{"nulls": "skip"}');
SELECT model, rows, skipped FROM unlearn.status WHERE model = 'nf_len';
INSERT INTO nf_len VALUES (1001, ARRAY[1, 2, 'NaN']::float8[], true), (1004, ARRAY[1, 'Infinity']::float8[], false);
SELECT rows, skipped FROM unlearn.status WHERE model = 'nf_len';
SELECT count(*) FROM unlearn_retrain('nf_len');
SELECT rows, skipped, (SELECT certified FROM unlearn_verify('nf_len')) AS certified
FROM unlearn.status WHERE model = 'nf_len';
DELETE FROM nf_len WHERE id IN (1001, 1004, 6);
SELECT rows, skipped, rows = (SELECT count(*) FROM nf_len) AS in_step FROM unlearn.status WHERE model = 'nf_len';
INSERT INTO nf_len VALUES (1002, ARRAY[1, 2, 3]::float8[], false);
INSERT INTO nf_len VALUES (1005, '{{1,2},{3,4}}', true);
-- more than 100 features: the finite check goes in calls of 90
CREATE TABLE nf_wide AS SELECT i AS id, (i % 7 > 3) AS y FROM generate_series(1, 400) i;
DO $$ BEGIN
	FOR j IN 0..119 LOOP
		EXECUTE format('ALTER TABLE nf_wide ADD COLUMN c%s float8', j);
		EXECUTE format('UPDATE nf_wide SET c%s = ((id * %s) %% 11) * 0.1', j, j + 1);
	END LOOP;
END $$;
UPDATE nf_wide SET c110 = 'NaN' WHERE id = 3;
SELECT model FROM unlearn_train('nf_wide', 'nf_wide', 'y',
	(SELECT array_agg('c' || j ORDER BY j) FROM generate_series(0, 119) j), sigma => 5, lambda => 1e-2,
	options => '{"nulls": "skip"}');
SELECT model, rows, skipped FROM unlearn.status WHERE model = 'nf_wide';
UPDATE nf_wide SET c115 = 'Infinity' WHERE id = 4;
SELECT rows, skipped FROM unlearn.status WHERE model = 'nf_wide';
\set VERBOSITY default
SELECT count(*) FROM unlearn_train('nf_error', 'nf', 'yes', '{a,b,d}', options => '{"nulls": "error"}');
DELETE FROM nf WHERE NOT (a NOT IN ('NaN', 'Infinity', '-Infinity') AND abs(b) < 1e300 AND isfinite(d));
SELECT count(*) FROM unlearn_train('nf_error', 'nf', 'yes', '{a,b,d}', options => '{"nulls": "error"}');
INSERT INTO nf VALUES (500, 'NaN', 1, date '2020-01-01', 3, true);
\set VERBOSITY terse

SELECT unlearn_drop(model) FROM unlearn.models WHERE model LIKE 'nf\_%' ORDER BY model;
DROP TABLE nf, nf_arr, nf_len, nf_wide;
