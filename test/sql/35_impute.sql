-- "nulls": "impute": a missing feature value (a null, a null element, or a
-- value that is not a finite number) is the column's centre, so its
-- standardised coordinate is 0; a row with a null label is outside the
-- model.  The centre and spread of a column are those of its present
-- values, and the model keeps their count beside the column sums.
--
-- 1. A least-squares model with nulls in float8, numeric, integer and
--    date columns equals, bit for bit, one trained with the same map
--    declared on a copy whose nulls are replaced by the centres.  Each
--    centre is within an eighth of a spread of the column's mean over its
--    present values (avg ignores nulls), each spread within 2^(1/8) of
--    their standard deviation.
-- 2. Every statement form (DELETE, UPDATE to and from null, INSERT of
--    null, NaN and infinity, COPY, upsert, MERGE, a writable CTE) keeps
--    the model a refit to 1e-9 (a fresh training on the rows left at the
--    same Lambda), with the fresh training's centre, spread and counts.
-- 3. A statement that moves a column's mean out of its grid cell
--    retrains; a column with no value at all trains (centre 0) and
--    retrains when a value arrives.  ROLLBACK restores the stored state.
-- 4. An array feature: null elements and a null array are imputed.
-- 5. Predicting imputes a null or NaN element; the export says so.
-- 6. A logistic model stays certified through the same statements.
-- 7. Errors: an unknown policy names the three.
SET client_min_messages = warning;
CREATE TABLE imp (id int PRIMARY KEY, a float8, b numeric, c int, d date, y float8);
INSERT INTO imp SELECT i, CASE WHEN i % 7 = 0 THEN NULL ELSE 3 * sin(i) + 1 END,
	   CASE WHEN i % 11 = 0 THEN NULL ELSE (i % 13)::numeric / 4 END,
	   CASE WHEN i % 5 = 0 THEN NULL ELSE (i * 37) % 100 END,
	   CASE WHEN i % 9 = 0 THEN NULL ELSE date '2020-01-01' + (i * 53) % 700 END,
	   CASE WHEN i % 31 = 0 THEN NULL ELSE sin(i) + (i % 13) * 0.1 + ((i * 37) % 100) / 50.0 END
FROM generate_series(1, 400) i;
ALTER TABLE imp ADD COLUMN high boolean GENERATED ALWAYS AS (y > 1.5) STORED;

-- the stored model against a fresh training on the rows left, at the same Lambda
CREATE FUNCTION imp_check(m text) RETURNS TABLE (rows_match bool, refit bool, same_map bool, same_counts bool)
LANGUAGE plpgsql AS $$
DECLARE
	r unlearn.models;
	f unlearn.models;
	s float8[];
	fs float8[];
BEGIN
	SELECT * INTO r FROM unlearn.models WHERE model = m;
	PERFORM unlearn_train(m || '_fresh', r.source::text, 'y', r.features, loss => 'squared', sigma => 0,
						  lambda => r.reg / r.rows, options => '{"nulls": "impute"}');
	SELECT * INTO f FROM unlearn.models WHERE model = m || '_fresh';
	SELECT column_sums INTO s FROM unlearn.model_state WHERE model = m;
	SELECT column_sums INTO fs FROM unlearn.model_state WHERE model = m || '_fresh';
	rows_match := r.rows = (SELECT count(*) FROM imp WHERE y IS NOT NULL);
	refit := (SELECT max(abs(x - z)) < 1e-9 FROM unnest(r.coef, f.coef) AS t (x, z));
	same_map := r.centre = f.centre AND r.spread = f.spread;
	same_counts := (SELECT bool_and(x = z) FROM unnest(s, fs) WITH ORDINALITY AS t (x, z, i) WHERE i % 3 = 0);
	PERFORM unlearn_drop(m || '_fresh');
	RETURN NEXT;
END $$;

-- 1.
SELECT model, rows FROM unlearn_train('imp_ls', 'imp', 'y', '{a,b,c,d}', loss => 'squared', sigma => 0,
									  options => '{"nulls": "impute"}');
SELECT rows, skipped, nulls, rows = (SELECT count(*) FROM imp WHERE y IS NOT NULL) AS rows_match
FROM unlearn.models WHERE model = 'imp_ls';
SELECT bool_and(abs(centre[i] - mean) <= spread[i] / 8) AS centres_of_present_values,
	   bool_and(spread[i] BETWEEN sd * 2 ^ (-1 / 8.0) AND sd * 2 ^ (1 / 8.0)) AS spreads_of_present_values
FROM unlearn.models, LATERAL (VALUES
	(1, (SELECT avg(a) FROM imp WHERE y IS NOT NULL), (SELECT stddev_pop(a) FROM imp WHERE y IS NOT NULL)),
	(2, (SELECT avg(b)::float8 FROM imp WHERE y IS NOT NULL), (SELECT stddev_pop(b)::float8 FROM imp WHERE y IS NOT NULL)),
	(3, (SELECT avg(c)::float8 FROM imp WHERE y IS NOT NULL), (SELECT stddev_pop(c)::float8 FROM imp WHERE y IS NOT NULL)),
	(4, (SELECT avg(d - date '1970-01-01')::float8 FROM imp WHERE y IS NOT NULL),
		(SELECT stddev_pop(d - date '1970-01-01')::float8 FROM imp WHERE y IS NOT NULL))) AS v (i, mean, sd)
WHERE model = 'imp_ls';
CREATE TABLE imp_filled AS
SELECT id, coalesce(a, centre[1]) AS a, coalesce(b::float8, centre[2]) AS b, coalesce(c::float8, centre[3]) AS c,
	   coalesce((d - date '1970-01-01')::float8, centre[4]) AS d, y
FROM imp, unlearn.models WHERE model = 'imp_ls';
SELECT format('{"preprocess": "declared", "centre": %s, "spread": %s, "nulls": "skip"}', to_json(centre),
			  to_json(spread)) AS declared
FROM unlearn.models WHERE model = 'imp_ls' \gset
SELECT model, rows FROM unlearn_train('imp_filled', 'imp_filled', 'y', '{a,b,c,d}', loss => 'squared', sigma => 0,
									  options => :'declared');
SELECT bool_and(x = z) AS same_bits FROM unlearn.models r, unlearn.models f, unnest(r.coef, f.coef) AS t (x, z)
WHERE r.model = 'imp_ls' AND f.model = 'imp_filled';
SELECT * FROM imp_check('imp_ls');

-- 2.
SELECT model, rows FROM unlearn_train('imp_lr', 'imp', 'high', '{a,b,c,d}', sigma => 10,
									  options => '{"nulls": "impute"}');
DELETE FROM imp WHERE id % 10 = 3;
SELECT * FROM imp_check('imp_ls');
UPDATE imp SET a = NULL WHERE id % 17 = 1;
UPDATE imp SET b = 2.5 WHERE b IS NULL AND id < 200;
SELECT * FROM imp_check('imp_ls');
INSERT INTO imp VALUES (1001, NULL, NULL, NULL, NULL, 1.5), (1002, 'NaN', 'Infinity', 4, 'infinity', 0.5),
	(1003, '-Infinity', 1, NULL, date '2021-05-05', 2), (1004, 1, 1, 1, date '2021-01-01', NULL);
SELECT * FROM imp_check('imp_ls');
COPY imp FROM stdin;
2001	\N	0.5	10	2020-03-03	1.1
2002	0.25	\N	\N	\N	0.9
2003	\N	\N	\N	\N	\N
\.
SELECT * FROM imp_check('imp_ls');
INSERT INTO imp VALUES (2001, 2, NULL, 3, NULL, 1.2), (2004, NULL, 0.5, NULL, date '2020-02-02', 1.3)
ON CONFLICT (id) DO UPDATE SET a = excluded.a, b = excluded.b, c = excluded.c, d = excluded.d, y = excluded.y;
MERGE INTO imp t USING (VALUES (2002, NULL::float8, 3.0), (2005, 1.0, NULL)) AS s (id, a, y) ON t.id = s.id
WHEN MATCHED THEN UPDATE SET a = s.a, c = NULL
WHEN NOT MATCHED THEN INSERT (id, a, y) VALUES (s.id, s.a, s.y);
WITH gone AS (DELETE FROM imp WHERE id % 10 = 7 RETURNING *)
INSERT INTO imp SELECT id + 5000, NULL, b, c, d, y FROM gone WHERE id < 100;
SELECT * FROM imp_check('imp_ls');
SELECT retrains FROM unlearn.models WHERE model = 'imp_ls';

-- 3. ROLLBACK; a move of a column's mean; a column without values
SELECT coef, centre, spread, rows FROM unlearn.models WHERE model = 'imp_ls' \gset before_
SELECT column_sums AS before_sums FROM unlearn.model_state WHERE model = 'imp_ls' \gset
BEGIN;
UPDATE imp SET c = NULL WHERE id % 3 = 0;
INSERT INTO imp VALUES (3001, NULL, NULL, NULL, NULL, 4);
ROLLBACK;
SELECT coef = :'before_coef' AND centre = :'before_centre' AND spread = :'before_spread' AND rows = :before_rows
	AS same_model,
	   (SELECT column_sums = :'before_sums' FROM unlearn.model_state WHERE model = 'imp_ls') AS same_sums
FROM unlearn.models WHERE model = 'imp_ls';
SELECT retrains AS retrains_before FROM unlearn.models WHERE model = 'imp_ls' \gset
UPDATE imp SET c = NULL WHERE c < 60;
SELECT retrains > :retrains_before AS retrained FROM unlearn.models WHERE model = 'imp_ls';
SELECT * FROM imp_check('imp_ls');
CREATE TABLE imp_empty (id int PRIMARY KEY, a float8, e float8, y float8);
INSERT INTO imp_empty SELECT i, sin(i), NULL, cos(i) FROM generate_series(1, 50) i;
SELECT model, rows FROM unlearn_train('imp_e', 'imp_empty', 'y', '{a,e}', loss => 'squared', sigma => 0,
									  options => '{"nulls": "impute"}');
SELECT centre[2] AS empty_centre, retrains FROM unlearn.models WHERE model = 'imp_e';
DELETE FROM imp_empty WHERE id = 1;
SELECT retrains AS still_not_retrained FROM unlearn.models WHERE model = 'imp_e';
UPDATE imp_empty SET e = 5 WHERE id = 2;
SELECT retrains AS retrained_for_a_value, centre[2] <> 0 AS centre_moved FROM unlearn.models WHERE model = 'imp_e';
SELECT certified FROM unlearn_verify('imp_e');

-- 4.
CREATE TABLE imp_arr (id int PRIMARY KEY, x float8[], y boolean);
INSERT INTO imp_arr SELECT i, CASE WHEN i % 19 = 0 THEN NULL
	ELSE ARRAY[sin(i), CASE WHEN i % 4 = 0 THEN NULL ELSE cos(i) END, (i % 7) / 7.0] END, sin(3 * i) > 0
FROM generate_series(1, 300) i;
SELECT model, rows FROM unlearn_train('imp_arr', 'imp_arr', 'y', '{x}', sigma => 10, options => '{"nulls": "impute"}');
SELECT rows, skipped, dims FROM unlearn.models WHERE model = 'imp_arr';
DELETE FROM imp_arr WHERE id % 5 = 0;
UPDATE imp_arr SET x = ARRAY[NULL, 'NaN', 0.5] WHERE id % 7 = 1;
UPDATE imp_arr SET x = NULL WHERE id % 11 = 2;
INSERT INTO imp_arr VALUES (1001, '{NULL,NULL,NULL}', true), (1002, NULL, false);
SELECT rows = (SELECT count(*) FROM imp_arr) AS rows_match FROM unlearn.models WHERE model = 'imp_arr';
SELECT certified FROM unlearn_verify('imp_arr');
-- an array of another length is still an error, as under every policy
UPDATE imp_arr SET x = '{1,2}' WHERE id = 1;

-- every row of a class (or of the table) with a null array: retraining
-- reads them as rows of missing values
CREATE TABLE imp_arr_null (id int PRIMARY KEY, x float8[], y float8);
INSERT INTO imp_arr_null SELECT i, CASE WHEN i = 1 THEN '{1,2}'::float8[] END, i FROM generate_series(1, 20) i;
SELECT model, rows FROM unlearn_train('imp_an', 'imp_arr_null', 'y', '{x}', loss => 'squared', sigma => 0,
									  options => '{"nulls": "impute"}');
DELETE FROM imp_arr_null WHERE id = 1;
SELECT rows, retrains, centre FROM unlearn.models WHERE model = 'imp_an';
CREATE TABLE imp_cls (id int PRIMARY KEY, x float8[], y boolean);
INSERT INTO imp_cls SELECT i, CASE WHEN i % 2 = 0 THEN ARRAY[(i % 10)::float8, ((i * 3) % 10)::float8] END, i % 2 = 0
FROM generate_series(1, 400) i;
SELECT model, rows FROM unlearn_train('imp_cls', 'imp_cls', 'y', '{x}', sigma => 10);
SELECT rows FROM unlearn_retrain('imp_cls');
-- a centre of 0 is +0, whichever side of 0 the mean was
CREATE TABLE imp_zero (id int PRIMARY KEY, a float8, y float8);
INSERT INTO imp_zero SELECT i, CASE WHEN i <= 50 THEN 1 ELSE -1 END, sin(i) FROM generate_series(1, 100) i;
INSERT INTO imp_zero VALUES (101, -0.05, 0), (102, 0.02, 1);
SELECT model, rows FROM unlearn_train('imp_zero', 'imp_zero', 'y', '{a}', loss => 'squared', sigma => 0);
SELECT centre::text AS zero_centre FROM unlearn.models WHERE model = 'imp_zero';

-- 5.
SELECT unlearn_predict('imp_ls', ARRAY[NULL, 1, 'NaN', NULL]::float8[]) =
	   unlearn_predict('imp_ls', ARRAY[centre[1], 1, centre[3], centre[4]]) AS imputes
FROM unlearn.models WHERE model = 'imp_ls';
SELECT unlearn_predict_proba('imp_arr', '{NULL,0.5,NULL}') = unlearn_predict_proba('imp_arr', ARRAY[centre[1], 0.5, centre[1]])
	AS imputes_elements
FROM unlearn.models WHERE model = 'imp_arr';
SELECT unlearn_export('imp_ls') -> 'map' -> 'impute' AS exported_impute,
	   unlearn_export('imp_filled') -> 'map' -> 'impute' AS declared_impute;

-- 6.
SELECT rows = (SELECT count(*) FROM imp WHERE y IS NOT NULL) AS rows_match, skipped, state
FROM unlearn.models WHERE model = 'imp_lr';
SELECT certified FROM unlearn_verify('imp_lr');

-- 7.
SELECT unlearn_train('imp_bad', 'imp', 'y', '{a}', loss => 'squared', options => '{"nulls": "fill"}');

RESET client_min_messages;
SELECT unlearn_drop(m) FROM unnest(ARRAY['imp_ls', 'imp_filled', 'imp_lr', 'imp_e', 'imp_arr', 'imp_an', 'imp_cls',
										 'imp_zero']) m;
DROP TABLE imp, imp_filled, imp_empty, imp_arr, imp_arr_null, imp_cls, imp_zero;
DROP FUNCTION imp_check(text);
