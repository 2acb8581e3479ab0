-- "nulls": "skip": a row with a null in a model column (the label, a
-- feature, or an element of the feature array) is outside the model.  Every
-- statement form moves rows in and out; after each, rows and skipped equal
-- counts of the table, the model stays certified, and least squares equals
-- a refit on the rows without nulls.

CREATE FUNCTION nl_in_step(model text, tbl regclass, cond text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	kept bigint;
	total bigint;
	ok boolean;
BEGIN
	EXECUTE format('SELECT count(*) FILTER (WHERE %s), count(*) FROM %s', cond, tbl) INTO kept, total;
	SELECT m.rows = kept AND m.skipped = total - kept INTO ok FROM unlearn.models m WHERE m.model = $1;
	RETURN CASE WHEN ok THEN 'in step' ELSE 'OUT OF STEP' END;
END $$;

CREATE TABLE nl AS SELECT id, label, pixels FROM digits WHERE id <= 600;
ALTER TABLE nl ADD PRIMARY KEY (id);
CREATE TABLE nl_lsq AS SELECT * FROM diabetes;
ALTER TABLE nl_lsq ADD PRIMARY KEY (id);
UPDATE nl SET label = NULL WHERE id % 50 = 1;
UPDATE nl SET pixels = NULL WHERE id % 50 = 2;
UPDATE nl SET pixels[7] = NULL WHERE id % 50 = 3;
UPDATE nl_lsq SET bmi = NULL WHERE id % 40 = 1;
UPDATE nl_lsq SET target = NULL WHERE id % 40 = 2;

-- 1. training leaves them out, and counts them
SELECT model FROM unlearn_train('nl', 'nl', 'label', '{pixels}', sigma => 20, options => '{"nulls": "skip"}');
SELECT model, rows, skipped FROM unlearn.status WHERE model = 'nl';
SELECT model FROM unlearn_train('nl_lsq', 'nl_lsq', 'target', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
											   loss => 'squared', lambda => 1e-4, sigma => 0, options => '{"nulls": "skip"}');
SELECT model, rows, skipped FROM unlearn.status WHERE model = 'nl_lsq';
SELECT nulls FROM unlearn.models WHERE model = 'nl';

-- 2. every statement form, with rows moving in and out of the models (how
-- much of the budget they spend depends on the noise: its NOTICEs are not
-- shown, the certificate is checked below)
SET client_min_messages = warning;
UPDATE nl SET label = 3 WHERE id = 1;						-- clears a null: the row joins
UPDATE nl SET pixels[1] = NULL WHERE id IN (10, 11);		-- sets one: the rows leave
DELETE FROM nl WHERE id IN (2, 3, 20);						-- two skipped rows and one in the model
INSERT INTO nl VALUES (1001, NULL, (SELECT pixels FROM digits WHERE id = 700)),
					  (1002, 4, (SELECT pixels FROM digits WHERE id = 701));
INSERT INTO nl SELECT 1003, 5, pixels FROM digits WHERE id = 702
	ON CONFLICT (id) DO UPDATE SET label = NULL;
INSERT INTO nl SELECT 1003, 5, pixels FROM digits WHERE id = 702
	ON CONFLICT (id) DO UPDATE SET label = NULL;			-- the upsert's update: it leaves
MERGE INTO nl t USING (VALUES (51, 2), (52, NULL::int), (1004, 6)) s(id, label) ON t.id = s.id
	WHEN MATCHED AND s.label IS NULL THEN DELETE
	WHEN MATCHED THEN UPDATE SET label = s.label
	WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.label, (SELECT pixels FROM digits WHERE id = 703));
WITH gone AS (DELETE FROM nl WHERE id IN (101, 102) RETURNING id)
UPDATE nl SET pixels = NULL WHERE id IN (SELECT id + 100 FROM gone);
SELECT nl_in_step('nl', 'nl', 'label IS NOT NULL AND pixels IS NOT NULL AND array_position(pixels, NULL) IS NULL') AS nl;
RESET client_min_messages;
SELECT removed > 0 AND inserted > 0 AS moved FROM unlearn.models WHERE model = 'nl';
SELECT certified FROM unlearn_verify('nl');
-- a retrain counts the same rows in and out
SELECT model FROM unlearn_retrain('nl');
SELECT rows, skipped FROM unlearn.status WHERE model = 'nl';
SELECT nl_in_step('nl', 'nl', 'label IS NOT NULL AND pixels IS NOT NULL AND array_position(pixels, NULL) IS NULL') AS after_retrain;
-- an array of another shape is refused whether or not it holds a null, so
-- that no such row can later stop a retrain
INSERT INTO nl VALUES (2001, 1, '{{1,NULL},{2,3}}');
INSERT INTO nl VALUES (2001, 1, '{{1,2},{2,3}}');

UPDATE nl_lsq SET bmi = 30 WHERE id IN (1, 41);				-- both join
UPDATE nl_lsq SET s3 = NULL WHERE id BETWEEN 100 AND 104;	-- five leave
UPDATE nl_lsq SET target = NULL, bmi = 25 WHERE id = 81;	-- one null for another
DELETE FROM nl_lsq WHERE id IN (2, 200);					-- one skipped, one in the model
INSERT INTO nl_lsq (id, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target)
	SELECT id + 1000, age, sex, bmi, bp, s1, s2, CASE WHEN id % 2 = 0 THEN s3 END, s4, s5, s6, target
	FROM diabetes WHERE id <= 6;
SELECT nl_in_step('nl_lsq', 'nl_lsq', 'target IS NOT NULL AND age IS NOT NULL AND sex IS NOT NULL AND bmi IS NOT NULL AND bp IS NOT NULL
	AND s1 IS NOT NULL AND s2 IS NOT NULL AND s3 IS NOT NULL AND s4 IS NOT NULL AND s5 IS NOT NULL AND s6 IS NOT NULL') AS nl_lsq;
SELECT certified FROM unlearn_verify('nl_lsq');

-- 3. least squares equals a refit on the rows without nulls, to 1e-9
CREATE TABLE nl_lsq_refit AS SELECT * FROM nl_lsq
	WHERE target IS NOT NULL AND bmi IS NOT NULL AND s3 IS NOT NULL;
SELECT model FROM unlearn_train('nl_lsq_refit', 'nl_lsq_refit', 'target', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
								loss => 'squared', lambda => (SELECT reg / rows FROM unlearn.models WHERE model = 'nl_lsq'),
								sigma => 0, options => '{"nulls": "error"}');
SELECT max(abs(a - b)) / max(abs(b)) < 1e-9 AS equals_refit
FROM unnest(unlearn_coef('nl_lsq'), unlearn_coef('nl_lsq_refit')) AS u(a, b);
SELECT a.centre = b.centre AND a.spread = b.spread AS same_map
FROM unlearn.models a, unlearn.models b WHERE a.model = 'nl_lsq' AND b.model = 'nl_lsq_refit';

-- 4. a ROLLBACK restores rows, skipped and the weights bit for bit (the
-- budget NOTICEs depend on the noise and are not shown)
SELECT md5(coef::text) AS coef_before, rows, skipped FROM unlearn.models WHERE model = 'nl' \gset
SET client_min_messages = warning;
BEGIN;
UPDATE nl SET label = NULL WHERE id BETWEEN 200 AND 210;
DELETE FROM nl WHERE label IS NULL;
ROLLBACK;
RESET client_min_messages;
SELECT md5(coef::text) = :'coef_before' AS same_coef, rows = :rows AS same_rows,
	   skipped = :skipped AS same_skipped
FROM unlearn.models WHERE model = 'nl';

-- 5. scoring and evaluation leave such rows out too
SELECT count(*) AS scored, count(s.label) AS with_label FROM nl t, unlearn_score_row('nl', t) s;
SELECT rows, skipped FROM unlearn_evaluate('nl');
-- "nulls": "error" refuses them, naming the column, not the row
UPDATE nl_lsq_refit SET bmi = NULL WHERE id = 3;
SELECT unlearn_predict('nl_lsq', ARRAY[1, 2, NULL, 4, 5, 6, 7, 8, 9, 10]::float8[]);

-- 6. through partitions: a cross-partition UPDATE that sets a NULL, one
-- that clears it, and a DELETE through a partition
CREATE TABLE nl_part (id int, label int, pixels float8[]) PARTITION BY RANGE (id);
CREATE TABLE nl_part_low PARTITION OF nl_part FOR VALUES FROM (MINVALUE) TO (300);
CREATE TABLE nl_part_high PARTITION OF nl_part FOR VALUES FROM (300) TO (MAXVALUE);
INSERT INTO nl_part SELECT id, label, pixels FROM digits WHERE id <= 600;
UPDATE nl_part SET label = NULL WHERE id % 40 = 1;
SELECT model FROM unlearn_train('nl_part', 'nl_part', 'label', '{pixels}', sigma => 20, options => '{"nulls": "skip"}');
SELECT model, rows, skipped FROM unlearn.status WHERE model = 'nl_part';
SET client_min_messages = warning;
UPDATE nl_part SET id = id + 300, label = NULL WHERE id IN (5, 6, 7);
UPDATE nl_part SET id = id - 300, label = 1 WHERE id IN (41, 81);
DELETE FROM nl_part_high WHERE id IN (305, 401, 402);
RESET client_min_messages;
SELECT nl_in_step('nl_part', 'nl_part', 'label IS NOT NULL AND pixels IS NOT NULL AND array_position(pixels, NULL) IS NULL') AS nl_part;
SELECT certified FROM unlearn_verify('nl_part');

-- 7. bad input
SELECT unlearn_train('nl_x', 'nl', 'label', '{pixels}', options => '{"nulls": "ignore"}');
SELECT unlearn_train('nl_x', 'nl', 'label', '{pixels}', options => '{"nulls": null}');
CREATE TABLE nl_empty (id int, y int, a float8);
INSERT INTO nl_empty VALUES (1, 1, NULL), (2, NULL, 2);
SELECT unlearn_train('nl_x', 'nl_empty', 'y', '{a}', options => '{"nulls": "skip"}');
SELECT unlearn_train('nl_x', 'nl_empty', 'y', '{a}', options => '{"nulls": "error"}');

-- 8. erasure is never refused: every row but one deleted
DELETE FROM nl_lsq WHERE id <> 1;
SELECT rows, skipped, state FROM unlearn.models WHERE model = 'nl_lsq';

SELECT unlearn_drop(model) FROM unlearn.models WHERE model LIKE 'nl%' ORDER BY model;
DROP TABLE nl, nl_lsq, nl_lsq_refit, nl_empty, nl_part;
DROP FUNCTION nl_in_step;
