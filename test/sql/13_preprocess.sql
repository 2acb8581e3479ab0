-- The row map's column statistics ("preprocess": "standardize", the
-- default): public centre and spread that are always what a retrain on
-- the current rows would compute, so that they reveal no deleted row.

-- centre and spread from the rows, recomputed in SQL, on a grid of k = 4
-- steps per power of two: s = 2^(round(k log2 sd*) / k), c = (s/4)
-- round(mean / (s/4)), sd* = max(sd, 2^-20 max(|mean|, 1))
CREATE FUNCTION pp_expected(tbl regclass, col text, OUT centre float8, OUT spread float8)
LANGUAGE plpgsql AS $$
DECLARE
	m float8;
	sd float8;
	step int;
BEGIN
	EXECUTE format('SELECT avg(%I), stddev_pop(%I) FROM %s', col, col, tbl) INTO m, sd;
	step := round(4 * log(2, greatest(sd, 2 ^ -20 * greatest(abs(m), 1))::numeric));
	-- as the server computes it: 2^octave times pow(2, r / 4), 0 <= r < 4
	spread := 2::float8 ^ floor(step / 4.0)::float8
			  * 2::float8 ^ ((step - 4 * floor(step / 4.0)) / 4.0)::float8;
	centre := (spread / 4) * round((m / (spread / 4))::numeric);
END $$;
CREATE FUNCTION pp_matches(model text, tbl regclass, cols text[]) RETURNS boolean
LANGUAGE sql AS $$
	SELECT bool_and(e.centre = m.centre[i] AND e.spread = m.spread[i])
	FROM unlearn.models m, generate_subscripts(cols, 1) i, pp_expected(tbl, cols[i]) e
	WHERE m.model = $1
$$;

-- 1. Training standardizes each column; the divisor is sqrt(p), not a row's norm.
CREATE TABLE pp AS SELECT * FROM diabetes;
ALTER TABLE pp ADD PRIMARY KEY (id);
SELECT model FROM unlearn_train('pp', 'pp', 'target', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
								loss => 'squared', lambda => 1e-4, sigma => 0);
SELECT preprocess, scale = 2 * sqrt(11) AS data_independent_divisor,
	   pp_matches('pp', 'pp', features) AS centre_spread_from_rows,
	   spread[1] AS age_spread, centre[1] AS age_centre, intercept_scaling, spread_steps
FROM unlearn.models WHERE model = 'pp';
-- the column sums behind it are the owner's only
CREATE ROLE pp_stranger;
SET ROLE pp_stranger;
SELECT count(*) AS stranger_sees_sums FROM unlearn.model_state WHERE model = 'pp';
-- nor can a stranger set a model's map, or reach the C function with a
-- null preprocess
UPDATE unlearn.models SET centre = '{0,0,0,0,0,0,0,0,0,0}' WHERE model = 'pp';
SELECT unlearn._train('pp_x', 'pp', 'target', '{age}', 'squared', 1e-3, 0, 1, 1e-4, true,
					  'taylor', 'retrain', 'statement', false, false, NULL, NULL, NULL, 'error', NULL, 'immediate', 'newton',
					  NULL, NULL, NULL, NULL, NULL, NULL, NULL);
RESET ROLE;

-- 2. After every statement, whatever its form, centre and spread are those
-- of the rows left; a statement that moves one to another grid step
-- retrains (counted in the ledger), the others take the Newton step.
SET client_min_messages = warning;
CREATE TABLE pp_log (step int, ok boolean);
DO $$
DECLARE
	r record;
	k int := 0;
BEGIN
	FOR r IN SELECT id FROM pp WHERE id % 4 = 1 ORDER BY id LOOP
		DELETE FROM pp WHERE id = r.id;
		k := k + 1;
		INSERT INTO pp_log SELECT k, pp_matches('pp', 'pp', features) FROM unlearn.models WHERE model = 'pp';
	END LOOP;
END $$;
DELETE FROM pp WHERE id IN (2, 6, 10);
INSERT INTO pp_log SELECT 1000, pp_matches('pp', 'pp', features) FROM unlearn.models WHERE model = 'pp';
UPDATE pp SET age = age + 30 WHERE id % 7 = 0;
INSERT INTO pp_log SELECT 1001, pp_matches('pp', 'pp', features) FROM unlearn.models WHERE model = 'pp';
INSERT INTO pp SELECT * FROM diabetes WHERE id % 4 = 1 AND id < 200;
INSERT INTO pp_log SELECT 1002, pp_matches('pp', 'pp', features) FROM unlearn.models WHERE model = 'pp';
RESET client_min_messages;
SELECT count(*) AS statements, count(*) FILTER (WHERE NOT ok) AS stale_maps FROM pp_log;
SELECT count(*) FILTER (WHERE retrained) AS map_retrains,
	   count(*) FILTER (WHERE NOT retrained) AS newton_steps
FROM unlearn.ledger WHERE model = 'pp' AND operation IN ('delete', 'insert', 'update');
-- and the model equals a refit on the rows left (same Lambda, same map)
SELECT reg / rows AS refit_lambda FROM unlearn.models WHERE model = 'pp' \gset
CREATE TABLE pp_copy AS SELECT * FROM pp;
SELECT model FROM unlearn_train('pp_refit', 'pp_copy', 'target', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
								loss => 'squared', lambda => :refit_lambda, sigma => 0);
SELECT a.centre = b.centre AND a.spread = b.spread AS same_map
FROM unlearn.models a, unlearn.models b WHERE a.model = 'pp' AND b.model = 'pp_refit';
WITH a AS (SELECT unnest(unlearn_coef('pp')) AS v, generate_subscripts(unlearn_coef('pp'), 1) AS i),
	 b AS (SELECT unnest(unlearn_coef('pp_refit')) AS v, generate_subscripts(unlearn_coef('pp_refit'), 1) AS i)
SELECT sqrt(sum((a.v - b.v) ^ 2)) / sqrt(sum(b.v ^ 2)) < 1e-9 AS equal_to_1e9
FROM a JOIN b USING (i);
SELECT unlearn_drop('pp_refit');

-- 3. The row that sets a statistic: one extreme row among ordinary ones.
-- Deleting it retrains, and nothing public still shows it: centre, spread
-- and divisor are those of a model trained without it.
CREATE TABLE pp_leak (id int PRIMARY KEY, x float8, z float8, y boolean);
INSERT INTO pp_leak SELECT i, (i % 10) / 10.0, (i % 7) - 3, i % 3 = 0 FROM generate_series(1, 60) i;
INSERT INTO pp_leak VALUES (61, 1e6, 0, true);
SELECT model FROM unlearn_train('pp_leak', 'pp_leak', 'y', '{x,z}', sigma => 0.1);
SELECT spread[1] AS x_spread_with_outlier FROM unlearn.models WHERE model = 'pp_leak';
DELETE FROM pp_leak WHERE id = 61;
CREATE TABLE pp_clean AS SELECT * FROM pp_leak;
SELECT model FROM unlearn_train('pp_clean', 'pp_clean', 'y', '{x,z}', sigma => 0.1);
SELECT a.centre = b.centre AND a.spread = b.spread AND a.scale = b.scale AS same_as_without_it,
	   a.spread[1] AS x_spread_now
FROM unlearn.models a, unlearn.models b WHERE a.model = 'pp_leak' AND b.model = 'pp_clean';
SELECT operation, retrained FROM unlearn.ledger WHERE model = 'pp_leak' ORDER BY id;
SELECT unlearn_drop('pp_clean');

-- 4. ROLLBACK of a statement that retrained for its map restores the model
-- bit for bit.
SELECT md5(m::text) AS before FROM (SELECT centre, spread, coef, spent FROM unlearn.models WHERE model = 'pp_leak') m \gset
BEGIN;
INSERT INTO pp_leak VALUES (62, -1e9, 5, false);
SELECT retrained AS insert_retrained FROM unlearn.ledger WHERE model = 'pp_leak' ORDER BY id DESC LIMIT 1;
ROLLBACK;
SELECT md5(m::text) = :'before' AS restored
FROM (SELECT centre, spread, coef, spent FROM unlearn.models WHERE model = 'pp_leak') m;

-- 5. No overflow: values near the largest float train and predict to
-- finite numbers.
CREATE TABLE pp_huge (id int PRIMARY KEY, x float8, y boolean);
INSERT INTO pp_huge SELECT i, i, i % 2 = 0 FROM generate_series(1, 20) i;
INSERT INTO pp_huge VALUES (21, 1e300, true), (22, -1.7e308, false);
SELECT model FROM unlearn_train('pp_huge', 'pp_huge', 'y', '{x}', sigma => 0.1);
SELECT bool_and(c < 'Infinity' AND c > '-Infinity') AS finite_weights FROM unnest(unlearn_coef('pp_huge')) c;
SELECT unlearn_predict('pp_huge', '{1.7e308}') BETWEEN 0 AND 1 AS finite_prediction,
	   unlearn_predict('pp_huge', '{-1.7e308}') BETWEEN 0 AND 1 AS finite_prediction_negative;
DELETE FROM pp_huge WHERE id = 22;
SELECT (unlearn_verify('pp_huge')).certified;
DELETE FROM pp_huge WHERE id = 21;
SELECT pp_matches('pp_huge', 'pp_huge', features) AS map_of_rows_left, spread
FROM unlearn.models WHERE model = 'pp_huge';
SELECT unlearn_drop('pp_huge');

-- 6. Declared centre and spread: used as given, and checked.
SELECT model FROM unlearn_train('pp_decl', 'pp_leak', 'y', '{x,z}', sigma => 0.1,
								options => '{"preprocess": "declared", "centre": [0.5, 0], "spread": [0.25, 2]}');
SELECT preprocess, centre, spread FROM unlearn.models WHERE model = 'pp_decl';
DELETE FROM pp_leak WHERE id = 1;
SELECT centre, spread, retrained FROM unlearn.models m, unlearn.ledger l
WHERE m.model = 'pp_decl' AND l.model = m.model ORDER BY l.id DESC LIMIT 1;
-- the map of a declared model, by hand: z = ((x - c) / s, a) / max(sqrt(3), ||.||)
-- with the intercept scaling a = 2
SELECT abs(unlearn_predict('pp_decl', '{0.75,4}') -
		   1 / (1 + exp(-(c[1] * 1 + c[2] * 2 + c[3] * 2) / greatest(sqrt(3), sqrt(1 + 4 + 4))))) < 1e-12 AS map_by_hand
FROM (SELECT unlearn_coef('pp_decl') AS c) w;
SELECT unlearn_train('pp_bad', 'pp_leak', 'y', '{x,z}', options => '{"preprocess": "declared", "centre": [0], "spread": [1]}');
SELECT unlearn_train('pp_bad', 'pp_leak', 'y', '{x,z}', options => '{"preprocess": "declared", "centre": [0, 0], "spread": [1, 0]}');
SELECT unlearn_train('pp_bad', 'pp_leak', 'y', '{x,z}', options => '{"preprocess": "declared", "centre": [0, "NaN"], "spread": [1, 1]}');
SELECT unlearn_train('pp_bad', 'pp_leak', 'y', '{x,z}', options => '{"centre": [0, 0], "spread": [1, 1]}');
SELECT unlearn_train('pp_bad', 'pp_leak', 'y', '{x,z}', options => '{"preprocess": "declared"}');
SELECT unlearn_train('pp_bad', 'pp_leak', 'y', '{x,z}', options => '{"preprocess": "minmax"}');
-- an array column takes one centre and spread for all its elements
SELECT model FROM unlearn_train('pp_arr', 'ones_sevens', 'is_one', '{pixels}', sigma => 0.1);
SELECT array_length(centre, 1) AS one_centre, array_length(spread, 1) AS one_spread,
	   (SELECT avg(v) FROM ones_sevens, unnest(pixels) v) BETWEEN centre[1] - spread[1] / 8 AND centre[1] + spread[1] / 8 AS centre_near_mean
FROM unlearn.models WHERE model = 'pp_arr';

SELECT unlearn_drop(model) FROM unlearn.models WHERE model LIKE 'pp%' ORDER BY model;
DROP TABLE pp, pp_copy, pp_log, pp_leak, pp_clean, pp_huge;
DROP FUNCTION pp_matches(text, regclass, text[]), pp_expected(regclass, text);
DROP ROLE pp_stranger;
