-- Feature expressions never make an ordinary write fail, and a model owner
-- who does not own the table cannot make its writers' statements slow.
--  1. a model owner who is not the table's owner may attach only
--     operations of linear cost, in at most 4096 bytes per expression;
--  2. a row for which an expression fails (ln of 0, a division by zero,
--     chr(0)) is
--     written in every statement form; it stays outside the model, counted,
--     and the model is suspended;
--  3. unlearn_train(..., replace => true) with the expression mended
--     brings the model back, certified;
--  4. a deferred model, a null under "nulls": "error", a ROLLBACK;
--  5. the table's owner may attach any built-in immutable expression.
\set VERBOSITY default
\set SHOW_CONTEXT never
CREATE ROLE ef_owner;
CREATE ROLE ef_modeler;
GRANT CREATE ON SCHEMA public TO ef_owner;
SET ROLE ef_owner;
CREATE TABLE ef (id int PRIMARY KEY, income float8, amount numeric, age int, region text, y boolean);
INSERT INTO ef SELECT g, 1 + g % 50, g % 90, 20 + g % 40,
	CASE WHEN g % 3 = 0 THEN 'north' ELSE 'south' END, g % 7 > 3
	FROM generate_series(1, 400) g;
GRANT SELECT, TRIGGER, INSERT, UPDATE, DELETE ON ef TO ef_modeler;
RESET ROLE;

-- 1. the issue's attack and its relatives, refused for the model owner
SET ROLE ef_modeler;
SELECT model FROM unlearn_train('ef_m', 'ef', 'y', ARRAY['income + 0 * length(repeat(region, 1000000))']);
SELECT model FROM unlearn_train('ef_m', 'ef', 'y', ARRAY['income + 0 * ascii(repeat(region, 1000000))']);
SELECT model FROM unlearn_train('ef_m', 'ef', 'y', ARRAY['region ~ ''(a+)+$''']);
SELECT model FROM unlearn_train('ef_m', 'ef', 'y', ARRAY['region LIKE ''%n%o%r%''']);
SELECT model FROM unlearn_train('ef_m', 'ef', 'y', ARRAY['(region || region) = ''x''']);
SELECT model FROM unlearn_train('ef_m', 'ef', 'y', ARRAY['(amount * amount * amount)::float8']);
SELECT model FROM unlearn_train('ef_m', 'ef', 'y',
	ARRAY['income + 0 * (' || repeat('1 + ', 1100) || '1)']);
\set VERBOSITY terse
-- linear operations are accepted: arithmetic on numbers, comparisons of
-- text and numeric, IN, casts from and to numeric, CASE, GREATEST, NULLIF
SELECT model, rows FROM unlearn_train('ef_m', 'ef', 'y',
	ARRAY['ln(income)', '1 / (age - 19)', 'region = ''north''', 'region IN (''east'', ''west'')',
		  'amount > 45', 'amount::float8 / 90', 'income::numeric > 3',
		  'CASE WHEN age > 40 THEN 1.5 ELSE greatest(income, 2) END', 'NULLIF(region, ''x'') IS NULL'],
	sigma => 1);
SELECT state, rows, skipped FROM unlearn.models WHERE model = 'ef_m';

-- 2. rows the expressions fail for are written, in every statement form
-- the model owner writes one: a WARNING says the model is suspended
INSERT INTO ef VALUES (1001, 0, 1, 40, 'north', true);
SELECT state, rows, skipped, coef IS NULL AS withheld FROM unlearn.models WHERE model = 'ef_m';
SELECT operation FROM unlearn.ledger WHERE model = 'ef_m' ORDER BY id;
RESET ROLE;
-- the table owner writes, and sees nothing of the model
SET ROLE ef_owner;
UPDATE ef SET age = 19 WHERE id = 5;
DELETE FROM ef WHERE id = 1001;
INSERT INTO ef VALUES (1002, 0, 1, 19, 'south', false)
	ON CONFLICT (id) DO UPDATE SET income = 0;
INSERT INTO ef VALUES (1002, 3, 1, 30, 'south', false)
	ON CONFLICT (id) DO UPDATE SET income = 0;
MERGE INTO ef t USING (SELECT generate_series(10, 14) AS id) s ON t.id = s.id
	WHEN MATCHED AND s.id % 2 = 0 THEN UPDATE SET income = 0
	WHEN MATCHED THEN DELETE;
COPY ef FROM STDIN;
1003	0	5	19	north	t
1004	2	5	33	north	f
\.
WITH d AS (DELETE FROM ef WHERE id IN (1003, 1004) RETURNING *)
INSERT INTO ef SELECT id + 1000, income, amount, age, region, y FROM d;
RESET ROLE;
-- every row is counted: in the model or skipped
SELECT m.rows + m.skipped AS counted, (SELECT count(*) FROM ef) AS in_table,
	   m.skipped AS outside
	FROM unlearn.models m WHERE model = 'ef_m';
SELECT count(*) AS failing FROM ef WHERE income = 0 OR age = 19;

-- 3. retraining fails on the same rows; the model trained again with the
-- expression mended reads them, a null being a missing value ("nulls":
-- "impute", the default), certified
-- (which failing row a retrain reads first, so which of the two errors it
-- raises, follows the rows' places in the table, which page pruning may
-- change: the test names either)
SET ROLE ef_modeler;
DO $$
BEGIN
	PERFORM unlearn_retrain('ef_m');
	RAISE NOTICE 'retrained';
EXCEPTION WHEN data_exception THEN
	RAISE NOTICE 'retrain failed: %', CASE WHEN SQLSTATE IN ('2201E', '22012')
		THEN 'ln of 0 or a division by zero' ELSE SQLSTATE END;
END $$;
SELECT model FROM unlearn_train('ef_m', 'ef', 'y',
	ARRAY['ln(NULLIF(income, 0))', '1 / NULLIF(age - 19, 0)', 'region = ''north'''],
	sigma => 1, replace => true);
SELECT model, rows, skipped FROM unlearn.status WHERE model = 'ef_m';
SELECT certified FROM unlearn_verify('ef_m');
DELETE FROM ef WHERE id IN (2003, 2004, 20, 21);
SELECT state, rows + skipped = (SELECT count(*) FROM ef) AS counted FROM unlearn.models WHERE model = 'ef_m';
SELECT certified FROM unlearn_verify('ef_m');

-- 4. a model whose expression cannot fail keeps working beside a
-- suspended one, and a ROLLBACK takes a suspension back
SELECT model FROM unlearn_train('ef_div', 'ef', 'y', ARRAY['income / age'], sigma => 1);
BEGIN;
UPDATE ef SET age = 0 WHERE id = 30;
SELECT state FROM unlearn.models WHERE model = 'ef_div';
ROLLBACK;
SELECT state FROM unlearn.models WHERE model = 'ef_div';
-- a deferred model is suspended the same way, in its row trigger
SELECT model FROM unlearn_train('ef_q', 'ef', 'y', ARRAY['income / age'], sigma => 1, options => '{"removal": "deferred"}');
UPDATE ef SET age = 0 WHERE id = 31;
SELECT model, state FROM unlearn.models WHERE model IN ('ef_div', 'ef_q') ORDER BY 1;
SELECT rows + skipped = (SELECT count(*) FROM ef) AS counted FROM unlearn.models WHERE model = 'ef_div';
SELECT unlearn_drop('ef_q');
SELECT unlearn_drop('ef_div');
-- a null under "nulls": "error" still refuses the write: that is the policy
SELECT model FROM unlearn_train('ef_strict', 'ef', 'y', ARRAY['income * 2'],
	sigma => 1, options => '{"nulls": "error"}');
INSERT INTO ef VALUES (3000, NULL, 1, 40, 'north', true);
SELECT unlearn_drop('ef_strict');
RESET ROLE;

-- 5. the table's owner may attach what a model owner may not
SET ROLE ef_owner;
SELECT model, rows FROM unlearn_train('ef_own', 'ef', 'y',
	ARRAY['length(repeat(region, 3))', '(amount * amount)::float8', 'region ~ ''^n'''], sigma => 1);
INSERT INTO ef VALUES (3001, 2, 7, 50, 'north', true);
SELECT state, rows + skipped = (SELECT count(*) FROM ef) AS counted FROM unlearn.models WHERE model = 'ef_own';
SELECT unlearn_drop('ef_own');
-- an error of a value that is not a data exception (chr(0): 54000) is a
-- failure of the row too: the write goes on, the model is suspended
SELECT model, rows FROM unlearn_train('ef_chr', 'ef', 'y', ARRAY['chr(age + 1000) = ''A'''], sigma => 1);
INSERT INTO ef VALUES (3002, 2, 7, -1000, 'north', true);
SELECT state FROM unlearn.models WHERE model = 'ef_chr';
SELECT unlearn_drop('ef_chr');
DELETE FROM ef WHERE id = 3002;
RESET ROLE;

-- 6. through partitions (a row moved across them by an UPDATE) and an FK
-- cascade: the writes go through, every row is counted, and a ROLLBACK
-- leaves the model's released and secret state bit for bit as it was
CREATE TABLE efp (id int, income float8, y boolean) PARTITION BY RANGE (id);
CREATE TABLE efp_low PARTITION OF efp FOR VALUES FROM (MINVALUE) TO (200);
CREATE TABLE efp_high PARTITION OF efp FOR VALUES FROM (200) TO (MAXVALUE);
ALTER TABLE efp ADD PRIMARY KEY (id);
INSERT INTO efp SELECT g, 1 + g % 30, g % 5 > 1 FROM generate_series(1, 400) g;
CREATE TABLE efp_child (id int PRIMARY KEY REFERENCES efp ON DELETE CASCADE, income float8, y boolean);
INSERT INTO efp_child SELECT id, income, y FROM efp WHERE id <= 300;
SELECT model FROM unlearn_train('efp_m', 'efp', 'y', ARRAY['ln(income)'], sigma => 1);
SELECT model FROM unlearn_train('efp_c', 'efp_child', 'y', ARRAY['1 / income'], sigma => 1);
CREATE TEMP TABLE efp_before AS
	SELECT m.model, md5(m.coef::text) AS coef, md5(s.noise::text || s.anchor::text || s.factor_digest) AS state
	FROM unlearn.models m JOIN (SELECT model, noise, anchor, unlearn._matrices_digest(model)::text AS factor_digest
								FROM unlearn.model_state) s USING (model)
	WHERE m.model IN ('efp_m', 'efp_c');
BEGIN;
UPDATE efp SET income = 0 WHERE id = 10;
UPDATE efp_child SET income = 0 WHERE id = 11;
SELECT model, state FROM unlearn.models WHERE model IN ('efp_m', 'efp_c') ORDER BY 1;
ROLLBACK;
SELECT m.model, m.state, md5(m.coef::text) = b.coef AS coef_as_before,
	   md5(s.noise::text || s.anchor::text || unlearn._matrices_digest(m.model)::text) = b.state AS state_as_before
	FROM unlearn.models m JOIN unlearn.model_state s USING (model) JOIN efp_before b USING (model)
	ORDER BY 1;
-- a failing row inserted through a partition, moved to the other one, then
-- deleted with its child by the cascade
INSERT INTO efp_low VALUES (0, 0, true);
UPDATE efp SET id = 500 WHERE id = 0;
INSERT INTO efp_child VALUES (500, 0, false);
DELETE FROM efp WHERE id IN (500, 20, 21);
SELECT model, state, rows + skipped = (SELECT count(*) FROM efp) AS counted
	FROM unlearn.models WHERE model = 'efp_m';
SELECT model, state, rows + skipped = (SELECT count(*) FROM efp_child) AS counted
	FROM unlearn.models WHERE model = 'efp_c';
DROP TABLE efp_child, efp;

SELECT unlearn_drop('ef_m');
DROP TABLE ef;
REVOKE CREATE ON SCHEMA public FROM ef_owner;
DROP ROLE ef_owner;
DROP ROLE ef_modeler;
