-- Prediction of whole rows and tables: all-class probabilities, scoring a
-- row with one deform (unlearn_score_row, parallel safe), scoring a table by
-- its primary key (unlearn_score), and held-out evaluation
-- (unlearn_evaluate; test/python/check_metrics.py checks its numbers
-- against scikit-learn).

CREATE TABLE sc AS SELECT id, label, pixels FROM digits WHERE id <= 1200;
ALTER TABLE sc ADD PRIMARY KEY (id);
CREATE TABLE sc_held AS SELECT id, label, pixels FROM digits WHERE id > 1200;
SELECT model FROM unlearn_train('sc', 'sc', 'label', '{pixels}', sigma => 0.5);
SELECT model FROM unlearn_train('sc_one', 'ones_sevens', 'is_one', '{pixels}', sigma => 0.5);
SELECT model FROM unlearn_train('sc_lsq', 'diabetes', 'target', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
								loss => 'squared', lambda => 1e-4, sigma => 0);

-- 1. probabilities: one per class, summing to 1, the most probable being
-- unlearn_predict_class's (one-vs-rest: the class sigmoids, normalised;
-- unlearn_predict gives the top one before normalising); binary: 1 - p and
-- p of unlearn_predict
SELECT bool_and(array_length(p, 1) = 10) AS ten_each,
	   bool_and(abs((SELECT sum(v) FROM unnest(p) v) - 1) < 1e-12) AS sum_to_one,
	   bool_and((SELECT classes[array_position(p, (SELECT max(v) FROM unnest(p) v))]
				 FROM unlearn.models WHERE model = 'sc') = unlearn_predict_class('sc', pixels)) AS argmax_is_class
FROM (SELECT pixels, unlearn_predict_proba('sc', pixels) AS p FROM sc_held) x;
SELECT bool_and(p[2] = unlearn_predict('sc_one', pixels) AND p[1] = 1 - p[2]) AS binary_pair
FROM (SELECT pixels, unlearn_predict_proba('sc_one', pixels) AS p FROM ones_sevens) x;

-- 2. a row's score and label equal those of its feature array, for every
-- row, also in parallel workers, and on another table with the columns
SELECT count(*) AS rows,
	   bool_and(s.label = unlearn_predict_class('sc', t.pixels)) AS same_labels,
	   bool_and(s.score = unlearn_predict('sc', t.pixels)) AS same_scores
FROM sc t, unlearn_score_row('sc', t) s;
SELECT bool_and(s.score = unlearn_predict('sc', t.pixels)) AS held_out_rows
FROM sc_held t, unlearn_score_row('sc', t) s;
SELECT bool_and(s.label IS NULL AND abs(s.score - unlearn_predict('sc_lsq', ARRAY[age,sex,bmi,bp,s1,s2,s3,s4,s5,s6])) < 1e-12) AS regression_rows
FROM diabetes t, unlearn_score_row('sc_lsq', t) s;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT count(*), bool_and(s.score = unlearn_predict('sc', t.pixels))
FROM sc t, unlearn_score_row('sc', t) s;
SELECT count(*), bool_and(s.score = unlearn_predict('sc', t.pixels)) AS parallel_same_scores
FROM sc t, unlearn_score_row('sc', t) s;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- 3. a table by its primary key, a composite one too
SELECT count(*) AS rows, bool_and(s.score = unlearn_predict('sc', t.pixels)) AS same_scores,
	   bool_and(s.label = unlearn_predict_class('sc', t.pixels)) AS same_labels
FROM unlearn_score('sc') s JOIN sc t ON t.id = (s.key->>'id')::int;
CREATE TABLE "sc two-part" (part text, n int, pixels float8[], PRIMARY KEY (part, n));
INSERT INTO "sc two-part" SELECT CASE WHEN id % 2 = 0 THEN 'even' ELSE 'o''dd' END, id, pixels FROM sc_held;
SELECT s.key, s.label = unlearn_predict_class('sc', t.pixels) AS same_label
FROM unlearn_score('sc', '"sc two-part"') s
JOIN "sc two-part" t ON t.part = s.key->>'part' AND t.n = (s.key->>'n')::int
ORDER BY t.n LIMIT 2;

-- 4. evaluation: held out, on the training rows, and for regression
SELECT rows, skipped, accuracy > 0.85 AS accurate, log_loss > 0 AS log_loss, roc_auc > 0.95 AS roc_auc,
	   array_length(class_precision, 1) AS classes, array_dims(confusion) AS confusion
FROM unlearn_evaluate('sc', 'sc_held');
SELECT (SELECT sum(v) FROM unnest(confusion) v) = rows AS confusion_counts_rows,
	   accuracy = (SELECT avg((unlearn_predict_class('sc', pixels) = label::text)::int) FROM sc) AS accuracy
FROM unlearn_evaluate('sc');
SELECT round(r2::numeric, 9) = round((1 - sum(power(target - p, 2)) / sum(power(target - m, 2)))::numeric, 9) AS r2,
	   round(rmse::numeric, 9) = round(sqrt(avg(power(target - p, 2)))::numeric, 9) AS rmse,
	   round(mae::numeric, 9) = round(avg(abs(target - p))::numeric, 9) AS mae,
	   accuracy IS NULL AND confusion IS NULL AS no_class_metrics
FROM unlearn_evaluate('sc_lsq'),
	 (SELECT target, unlearn_predict('sc_lsq', ARRAY[age,sex,bmi,bp,s1,s2,s3,s4,s5,s6]) AS p,
			 avg(target) OVER () AS m FROM diabetes) d
GROUP BY r2, rmse, mae, accuracy, confusion;

-- 5. bad input
SELECT unlearn_predict_proba('sc_lsq', '{1,2,3,4,5,6,7,8,9,10}');
SELECT s.* FROM diabetes t, unlearn_score_row('sc', t) s LIMIT 1;
CREATE TABLE sc_text (id int, pixels text);
INSERT INTO sc_text VALUES (1, '{1,2}');
SELECT s.* FROM sc_text t, unlearn_score_row('sc', t) s;
SELECT * FROM unlearn_score('sc', 'sc_held');
SELECT * FROM unlearn_score('nope');
SELECT * FROM unlearn_evaluate('sc', 'sc_text');
CREATE TABLE sc_unknown AS SELECT id, label + 10 AS label, pixels FROM sc_held LIMIT 3;
SELECT rows FROM unlearn_evaluate('sc', 'sc_unknown');
SELECT * FROM unlearn_evaluate(NULL);
SELECT unlearn_score_row('nope', t) FROM sc t LIMIT 1;

-- 6. these read rows as the caller: a role granted the model may still
-- not score or evaluate a table it cannot read
CREATE ROLE sc_stranger;
SELECT unlearn_grant('sc', 'sc_stranger');
SET ROLE sc_stranger;
SELECT count(*) FROM unlearn_score('sc');
SELECT rows FROM unlearn_evaluate('sc');
RESET ROLE;
-- the features but not the key column: still refused
GRANT SELECT (pixels) ON sc TO sc_stranger;
SET ROLE sc_stranger;
SELECT count(*) FROM unlearn_score('sc');
RESET ROLE;
-- row-level security: the caller's policy decides which rows are scored
GRANT SELECT ON sc TO sc_stranger;
CREATE POLICY sc_first_ten ON sc FOR SELECT TO sc_stranger USING (id <= 10);
ALTER TABLE sc ENABLE ROW LEVEL SECURITY;
SET ROLE sc_stranger;
SELECT count(*) AS rows, min((key->>'id')::int) AS first, max((key->>'id')::int) AS last
FROM unlearn_score('sc');
RESET ROLE;
ALTER TABLE sc DISABLE ROW LEVEL SECURITY;
DROP POLICY sc_first_ten ON sc;
REVOKE SELECT ON sc FROM sc_stranger;
SELECT unlearn_revoke('sc', 'sc_stranger');
DROP ROLE sc_stranger;

-- a key's text does not depend on the session's DateStyle or TimeZone, and
-- a scan in parallel workers scores every row once
CREATE TABLE sc_times (at timestamptz PRIMARY KEY, y int, u float8, v float8);
INSERT INTO sc_times SELECT timestamptz '2024-03-01 12:00:00+00' + i * interval '1 day', i % 2, i, i * i % 7
FROM generate_series(1, 300) i;
SELECT model FROM unlearn_train('sc_times', 'sc_times', 'y', '{u,v}', sigma => 0.5);
SET TimeZone = 'America/New_York';
SET DateStyle = 'SQL, DMY';
SELECT key FROM unlearn_score('sc_times') ORDER BY key->>'at' LIMIT 1;
RESET TimeZone;
RESET DateStyle;
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT count(*) AS rows, count(DISTINCT key) AS keys,
	   bool_and(s.score = unlearn_predict('sc_times', ARRAY[t.u, t.v])) AS same_scores
FROM unlearn_score('sc_times') s JOIN sc_times t ON s.key->>'at' = to_char(t.at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS+00');
-- which form runs: scored in the workers when the plan has them, else in
-- the backend; the workers' rows are the serial form's, bit for bit, keys
-- in the same text under another TimeZone
SET client_min_messages = debug1;
SELECT count(*) FROM unlearn_score('sc_times');
RESET client_min_messages;
CREATE TABLE sc_times_parallel AS SELECT * FROM unlearn_score('sc_times');
SET max_parallel_workers_per_gather = 0;
SET TimeZone = 'Asia/Kolkata';
SET client_min_messages = debug1;
SELECT count(*) FROM unlearn_score('sc_times');
RESET client_min_messages;
CREATE TABLE sc_times_serial AS SELECT * FROM unlearn_score('sc_times');
RESET TimeZone;
SELECT (SELECT count(*) FROM sc_times_serial) AS rows,
	   (SELECT count(*) FROM (SELECT key, label, float8send(score) FROM sc_times_parallel
							  EXCEPT SELECT key, label, float8send(score) FROM sc_times_serial) d) AS differing;
DROP TABLE sc_times_parallel, sc_times_serial;
SET max_parallel_workers_per_gather = 2;
-- under "nulls": "skip", a row with a null feature has a null label and
-- score in the workers too
CREATE TABLE sc_times_gaps AS SELECT * FROM sc_times;
ALTER TABLE sc_times_gaps ADD PRIMARY KEY (at);
SELECT model FROM unlearn_train('sc_times_gaps', 'sc_times_gaps', 'y', '{u,v}', sigma => 0.5,
								options => '{"nulls": "skip"}');
UPDATE sc_times_gaps SET v = NULL WHERE y = 0 AND u < 20;
SET client_min_messages = debug1;
SELECT count(*) FILTER (WHERE label IS NULL AND score IS NULL) AS unscored,
	   count(*) FILTER (WHERE score IS NOT NULL) AS scored
FROM unlearn_score('sc_times_gaps');
RESET client_min_messages;
SELECT unlearn_drop('sc_times_gaps');
DROP TABLE sc_times_gaps;
-- a model whose features and key exceed a function's 100 arguments is
-- scored in the backend, with the same rows
DO $$
BEGIN
	EXECUTE format('CREATE TABLE sc_broad (id int PRIMARY KEY, y int, %s)',
				   (SELECT string_agg(format('c%s float8', j), ', ') FROM generate_series(1, 98) j));
	EXECUTE format('INSERT INTO sc_broad SELECT i, i %% 2, %s FROM generate_series(1, 150) i',
				   (SELECT string_agg(format('sin(i * %s)', j), ', ') FROM generate_series(1, 98) j));
END $$;
SELECT model FROM unlearn_train('sc_broad', 'sc_broad', 'y',
								(SELECT array_agg('c' || j ORDER BY j) FROM generate_series(1, 98) j),
								sigma => 0.5);
SET client_min_messages = debug1;
SELECT count(*) AS rows, count(DISTINCT key) AS keys FROM unlearn_score('sc_broad');
RESET client_min_messages;
SELECT unlearn_drop('sc_broad');
DROP TABLE sc_broad;
-- the per-row scorer, called by hand: only as unlearn_score calls it
SELECT (s).key, (s).label = unlearn_predict_class('sc_times', ARRAY[1.0, 2.0]) AS same_label,
	   (s).score = unlearn_predict('sc_times', ARRAY[1.0, 2.0]) AS same_score
FROM (SELECT unlearn._score_columns('sc_times', ARRAY['at'], 1.0::float8, 2.0::float8,
									timestamptz '2024-03-02 12:00:00+00') AS s) q;
SELECT unlearn._score_columns('sc_times', ARRAY['at'], 1.0::float8, now());
SELECT unlearn._score_columns('sc_times', ARRAY['at'], 'x'::text, 2.0::float8, now());
SELECT unlearn._score_columns('sc_times', ARRAY['at'], VARIADIC ARRAY[1.0, 2.0]);
SELECT unlearn._score_columns('sc_times', NULL, 1.0::float8, 2.0::float8);
-- and it reads no model its caller may not read
CREATE ROLE sc_prober;
SET ROLE sc_prober;
SELECT unlearn._score_columns('sc_times', ARRAY['at'], 1.0::float8, 2.0::float8, now());
RESET ROLE;
DROP ROLE sc_prober;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
SELECT unlearn_drop('sc_times');
DROP TABLE sc_times;

-- a numeric beyond double precision is an infinite feature: under
-- "nulls": "skip" its row is outside the model, in a trigger (skipped) and
-- in scoring (no score); under "error" the error names no value
CREATE TABLE sc_wide (id int PRIMARY KEY, y int, u numeric, v float8);
INSERT INTO sc_wide SELECT i, i % 2, i, i * i % 7 FROM generate_series(1, 40) i;
SELECT model FROM unlearn_train('sc_wide', 'sc_wide', 'y', '{u,v}', sigma => 0.5, options => '{"nulls": "skip"}');
SELECT model FROM unlearn_train('sc_wide_error', 'sc_wide', 'y', '{u,v}', sigma => 0.5,
								options => '{"nulls": "error"}');
INSERT INTO sc_wide VALUES (41, 1, 1e400, 1);
SELECT unlearn_drop('sc_wide_error');
INSERT INTO sc_wide VALUES (41, 1, 1e400, 1);
SELECT rows, skipped FROM unlearn.status WHERE model = 'sc_wide';
CREATE TABLE sc_wide_held (id int PRIMARY KEY, y int, u numeric, v float8);
INSERT INTO sc_wide_held VALUES (1, 1, -1e400, 1), (2, 0, 1e-400, 1);
SELECT key, score IS NULL AS no_score FROM unlearn_score('sc_wide', 'sc_wide_held');
SELECT unlearn_drop('sc_wide');
DROP TABLE sc_wide, sc_wide_held;

-- 7. the key is each column's output text, never a cast: a table owner's
-- cast to json or text does not run as whoever scores the table
CREATE ROLE sc_owner;
GRANT CREATE ON SCHEMA public TO sc_owner;
CREATE TABLE sc_loot (who text);
GRANT INSERT ON sc_loot TO sc_owner;
SET ROLE sc_owner;
CREATE TYPE sc_key AS ENUM ('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h');
CREATE TABLE sc_owned (id sc_key PRIMARY KEY, y int, u float8, v float8);
INSERT INTO sc_owned SELECT (enum_range(NULL::sc_key))[i], i % 2, i, i * i % 5 FROM generate_series(1, 8) i;
SELECT model FROM unlearn_train('sc_owned', 'sc_owned', 'y', '{u,v}', sigma => 1);
CREATE FUNCTION sc_steal(sc_key) RETURNS json LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO sc_loot VALUES (current_user);
	RETURN to_json($1::text);
END $$;
CREATE CAST (sc_key AS json) WITH FUNCTION sc_steal(sc_key);
CREATE FUNCTION sc_steal_text(sc_key) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO sc_loot VALUES (current_user);
	RETURN 'x';
END $$;
CREATE CAST (sc_key AS text) WITH FUNCTION sc_steal_text(sc_key);
GRANT SELECT ON sc_owned TO PUBLIC;
RESET ROLE;
SELECT s.key->>'id' AS id, s.label IS NOT NULL AS labelled FROM unlearn_score('sc_owned') s ORDER BY 1 LIMIT 3;
SELECT count(*) AS casts_run FROM sc_loot;
SELECT unlearn_drop('sc_owned');
DROP TABLE sc_owned, sc_loot;
DROP FUNCTION sc_steal, sc_steal_text CASCADE;
DROP TYPE sc_key;
REVOKE CREATE ON SCHEMA public FROM sc_owner;
DROP ROLE sc_owner;

SELECT unlearn_drop('sc'), unlearn_drop('sc_one'), unlearn_drop('sc_lsq');
DROP TABLE sc, sc_held, "sc two-part", sc_text, sc_unknown;

-- evaluation of many rows: the per-row arrays outlive the scan's SPI
-- context (they were read after SPI_finish freed them, and at this size
-- the backend crashed), a classifier and a regression
CREATE TABLE sc_many AS
SELECT i AS id, sin(i) AS a, cos(3 * i) AS b, (sin(i) + cos(3 * i) > 0)::int AS label FROM generate_series(1, 40000) i;
SELECT model FROM unlearn_train('sc_many', 'sc_many', 'label', '{a,b}', sigma => 0);
SELECT model FROM unlearn_train('sc_many_lsq', 'sc_many', 'a', '{b}', loss => 'squared', sigma => 0);
SELECT rows, accuracy > 0.9 AS accurate, roc_auc > 0.9 AS ranks FROM unlearn_evaluate('sc_many');
SELECT rows, rmse < 1 AS fits FROM unlearn_evaluate('sc_many_lsq');

-- one-vs-rest probabilities where every class's sigmoid underflows: huge
-- noise gives weights of about 1e12, the normalisation runs in logs, and
-- evaluation ends (NaN probabilities made its ROC AUC loop forever)
CREATE TABLE sc_huge AS SELECT i AS id, (i % 3)::text AS label, sin(i) AS a, cos(i) AS b FROM generate_series(1, 300) i;
SELECT model FROM unlearn_train('sc_huge', 'sc_huge', 'label', '{a,b}', sigma => 1e12);
SELECT bool_and(p = p AND p BETWEEN 0 AND 1) AS finite, bool_and(abs(s - 1) < 1e-12) AS sum_to_one
FROM (SELECT (SELECT array_agg(v) FROM unnest(unlearn_predict_proba('sc_huge', ARRAY[a, b])) v) AS ps,
			 (SELECT sum(v) FROM unnest(unlearn_predict_proba('sc_huge', ARRAY[a, b])) v) AS s
	  FROM sc_huge) q, unnest(ps) p;
SELECT rows, log_loss = log_loss AS log_loss_is_number FROM unlearn_evaluate('sc_huge');
SELECT unlearn_drop('sc_many'), unlearn_drop('sc_many_lsq'), unlearn_drop('sc_huge');
DROP TABLE sc_many, sc_huge;
