-- Feature expressions: a feature computed from the row (ln(bmi),
-- age * age, sex_code = 'f').  They are evaluated the same way at training,
-- in the triggers on the transition rows, and in scoring; after every
-- statement form the model reflects exactly the table's rows, least squares
-- equals a refit to 1e-9, and the certificate holds.  Only built-in
-- immutable functions and operators are accepted.

CREATE FUNCTION ex_in_step(model text, tbl regclass) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	ok boolean;
	n bigint;
BEGIN
	EXECUTE format('SELECT count(*) FROM %s', tbl) INTO n;
	SELECT m.rows = n INTO ok FROM unlearn.models m WHERE m.model = $1;
	RETURN CASE WHEN ok THEN 'in step' ELSE 'OUT OF STEP' END;
END $$;

-- least squares against a refit on a copy of the table's rows, at the same Lambda
CREATE FUNCTION ex_equals_refit(model text, tbl regclass) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	m unlearn.models;
	ok boolean;
BEGIN
	SELECT * INTO m FROM unlearn.models WHERE unlearn.models.model = $1;
	DROP TABLE IF EXISTS ex_refit_rows;
	EXECUTE format('CREATE TABLE ex_refit_rows AS SELECT * FROM %s', tbl);
	PERFORM unlearn_train('ex_refit', 'ex_refit_rows', m.label, m.features, loss => 'squared',
						  lambda => m.reg / m.rows, sigma => 0, replace => true);
	SELECT max(abs(a - b)) / max(abs(b)) < 1e-9 AND r.centre = m.centre AND r.spread = m.spread
	  INTO ok
	  FROM unnest(unlearn_coef($1), unlearn_coef('ex_refit')) AS u(a, b), unlearn.models r
	 WHERE r.model = 'ex_refit'
	 GROUP BY r.centre, r.spread;
	PERFORM unlearn_drop('ex_refit');
	RETURN CASE WHEN ok THEN 'equals refit' ELSE 'DIFFERS FROM REFIT' END;
END $$;

CREATE TABLE ex AS
	SELECT id, age::int AS age_years, CASE WHEN sex = 2 THEN 'f' ELSE 'm' END AS sex_code,
		   bmi, bp, s1, s5, target, NULL::text AS note
	FROM diabetes;
ALTER TABLE ex ADD PRIMARY KEY (id);

-- 1. training: columns and expressions, kept as canonical text
SELECT model FROM unlearn_train('ex', 'ex', 'target',
	ARRAY['age_years', 'ln(bmi)', 'age_years * age_years', 'sex_code = ''f''',
		  'greatest(s1 - 150, 0)', '"bp"', 'CASE WHEN s5 > 4.5 THEN 1 ELSE 0 END'],
	loss => 'squared', lambda => 1e-4, sigma => 0);
SELECT model, dims, rows FROM unlearn.status WHERE model = 'ex';
SELECT features, expressions, column_types FROM unlearn.models WHERE model = 'ex';
SELECT ex_equals_refit('ex', 'ex') AS trained;

-- 2. every statement form, including those that change only a column an
-- expression reads
DELETE FROM ex WHERE id % 37 = 0;
UPDATE ex SET bmi = bmi + 1 WHERE id BETWEEN 10 AND 14;				-- read by ln(bmi)
UPDATE ex SET sex_code = 'f' WHERE id BETWEEN 20 AND 22 AND sex_code = 'm';
UPDATE ex SET note = 'checked' WHERE id BETWEEN 30 AND 40;			-- no model column
INSERT INTO ex SELECT id + 1000, age_years, sex_code, bmi, bp, s1, s5, target FROM ex WHERE id <= 5;
INSERT INTO ex SELECT id + 2000, age_years, sex_code, bmi, bp, s1, s5, target FROM ex WHERE id BETWEEN 6 AND 8
	ON CONFLICT (id) DO UPDATE SET bmi = excluded.bmi;
INSERT INTO ex SELECT id, age_years, sex_code, bmi, bp, s1, s5, target FROM ex WHERE id BETWEEN 50 AND 52
	ON CONFLICT (id) DO UPDATE SET s1 = ex.s1 + 40;					-- upsert: greatest(s1 - 150, 0)
MERGE INTO ex t USING (SELECT generate_series(60, 64) AS id) s ON t.id = s.id
	WHEN MATCHED AND s.id % 2 = 0 THEN UPDATE SET s5 = t.s5 + 1
	WHEN MATCHED THEN DELETE;
WITH gone AS (DELETE FROM ex WHERE id BETWEEN 70 AND 72 RETURNING *)
INSERT INTO ex SELECT id + 3000, age_years + 1, sex_code, bmi, bp, s1, s5, target FROM gone;
COPY ex (id, age_years, sex_code, bmi, bp, s1, s5, target) FROM STDIN;
5001	40	f	25.5	90	180	4.9	150
5002	55	m	31.2	101	210	4.2	220
\.
SELECT ex_in_step('ex', 'ex') AS after_statements, ex_equals_refit('ex', 'ex') AS after_statements;
SELECT certified FROM unlearn_verify('ex');
SELECT rows = (SELECT count(*) FROM ex) AS rows_match, removed > 0 AND inserted > 0 AS moved
FROM unlearn.models WHERE model = 'ex';

-- 3. a ROLLBACK restores the model bit for bit
SELECT md5(coef::text) AS coef_before, rows FROM unlearn.models WHERE model = 'ex' \gset
BEGIN;
UPDATE ex SET bmi = bmi * 2 WHERE id < 100;
DELETE FROM ex WHERE sex_code = 'm';
ROLLBACK;
SELECT md5(coef::text) = :'coef_before' AS same_coef, rows = :rows AS same_rows
FROM unlearn.models WHERE model = 'ex';

-- 4. scoring evaluates them the same way: unlearn_score_row over a row
-- equals unlearn_predict on the features computed in SQL
SELECT max(abs((unlearn_score_row('ex', e)).score -
			   unlearn_predict('ex', ARRAY[age_years, ln(bmi), age_years * age_years,
										   (sex_code = 'f')::int, greatest(s1 - 150, 0), bp,
										   CASE WHEN s5 > 4.5 THEN 1 ELSE 0 END]::float8[]))) < 1e-12 AS same_scores
FROM ex e;
SELECT count(*) AS scored FROM unlearn_score('ex', 'ex');
-- a held-out relation with the same columns, in another column order
CREATE TABLE ex_held AS SELECT target, s5, s1, bp, bmi, sex_code, age_years, id FROM ex WHERE id % 5 = 0;
ALTER TABLE ex_held ADD PRIMARY KEY (id);
SELECT rows, r2 > 0.3 AS fits FROM unlearn_evaluate('ex', 'ex_held');
SELECT count(*) AS scored FROM unlearn_score('ex', 'ex_held');
SELECT count(*) = count(s.score) AS all_scored FROM ex_held h, unlearn_score_row('ex', h) s;
-- in parallel workers
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT sum((unlearn_score_row('ex', e)).score) IS NOT NULL AS parallel_scored FROM ex e;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- 5. through partitions whose columns are in another order
CREATE TABLE ex_part (id int, age_years int, sex_code text, bmi float8, target float8)
	PARTITION BY LIST (sex_code);
CREATE TABLE ex_part_f (target float8, bmi float8, sex_code text, age_years int, id int);
ALTER TABLE ex_part ATTACH PARTITION ex_part_f FOR VALUES IN ('f');
CREATE TABLE ex_part_m PARTITION OF ex_part FOR VALUES IN ('m');
INSERT INTO ex_part SELECT id, age_years, sex_code, bmi, target FROM ex;
SELECT rows FROM unlearn_train('ex_part', 'ex_part', 'target', ARRAY['ln(bmi)', 'age_years / 10.0', 'sex_code = ''f'''],
							   loss => 'squared', lambda => 1e-4, sigma => 0);
DELETE FROM ex_part_f WHERE id % 11 = 0;
UPDATE ex_part SET sex_code = 'f' WHERE id BETWEEN 100 AND 110 AND sex_code = 'm';	-- moves partition
UPDATE ex_part_f SET bmi = bmi + 2 WHERE id BETWEEN 200 AND 230;
SELECT ex_in_step('ex_part', 'ex_part') AS partitions, ex_equals_refit('ex_part', 'ex_part') AS partitions;

-- 6. "nulls": "skip": an expression that is null (a category first seen
-- after training) leaves the row outside the model; under 'error' it is an
-- error naming the expression, never the row
CREATE TABLE ex_cat (id int PRIMARY KEY, colour text, x float8, y float8);
INSERT INTO ex_cat SELECT i, (ARRAY['red', 'green', 'blue'])[1 + i % 3], i % 17, (i % 17) * 0.5 + i % 3
FROM generate_series(1, 200) i;
SELECT model FROM unlearn_train('ex_cat', 'ex_cat', 'y',
	ARRAY['x', 'CASE colour WHEN ''red'' THEN 1 WHEN ''green'' THEN 0 END', 'colour = ''blue'''],
	loss => 'squared', sigma => 0, options => '{"nulls": "skip"}');
SELECT rows, skipped FROM unlearn.status WHERE model = 'ex_cat';
UPDATE ex_cat SET colour = 'purple' WHERE id IN (1, 2);			-- first seen: the rows leave
SELECT rows, skipped FROM unlearn.models WHERE model = 'ex_cat';
UPDATE ex_cat SET colour = 'red' WHERE id = 1;					-- known again: the row joins
SELECT rows, skipped FROM unlearn.models WHERE model = 'ex_cat';
SELECT certified FROM unlearn_verify('ex_cat');
UPDATE ex_cat SET colour = 'green' WHERE id = 2;
SELECT rows FROM unlearn_train('ex_cat_strict', 'ex_cat', 'y',
	ARRAY['x', 'CASE colour WHEN ''red'' THEN 1 WHEN ''green'' THEN 0 WHEN ''blue'' THEN 0 END'],
	loss => 'squared', sigma => 0, options => '{"nulls": "error"}');
UPDATE ex_cat SET colour = 'purple' WHERE id = 3;
INSERT INTO ex_cat VALUES (9999, 'teal', 1, 1);

-- 7. what is refused, with the expression and the model named
SELECT unlearn_train('bad', 'ex', 'target', ARRAY['bmi * random()'], loss => 'squared');
SELECT unlearn_train('bad', 'ex', 'target', ARRAY['extract(epoch FROM now()) - bmi'], loss => 'squared');
-- names resolve in pg_catalog only; a user's function or operator named
-- with its schema is refused as not built in
CREATE FUNCTION ex_double(float8) RETURNS float8 IMMUTABLE LANGUAGE sql AS 'SELECT $1 * 2';
SELECT unlearn_train('bad', 'ex', 'target', ARRAY['ex_double(bmi)'], loss => 'squared');
SELECT unlearn_train('bad', 'ex', 'target', ARRAY['public.ex_double(bmi)'], loss => 'squared');
CREATE OPERATOR ### (LEFTARG = float8, RIGHTARG = float8, FUNCTION = float8pl);
SELECT unlearn_train('bad', 'ex', 'target', ARRAY['bmi ### bp'], loss => 'squared');
SELECT unlearn_train('bad', 'ex', 'target', ARRAY['bmi OPERATOR(public.###) bp'], loss => 'squared');
CREATE DOMAIN ex_positive AS float8 CHECK (VALUE > 0);
SELECT unlearn_train('bad', 'ex', 'target', ARRAY['bmi::public.ex_positive'], loss => 'squared');
SELECT unlearn_train('bad', 'ex', 'target', ARRAY['bmi COLLATE "C"'], loss => 'squared');
CREATE COLLATION ex_coll (provider = libc, locale = 'C');
SELECT unlearn_train('bad', 'ex', 'target', ARRAY['sex_code COLLATE public.ex_coll < ''g'''], loss => 'squared');
-- a column whose own collation is not built in (the DELETE's parse would refuse it)
CREATE TABLE ex_uc (id int PRIMARY KEY, code text COLLATE ex_coll, y float8);
INSERT INTO ex_uc SELECT i, (ARRAY['a', 'h'])[1 + i % 2], i FROM generate_series(1, 20) i;
SELECT unlearn_train('bad', 'ex_uc', 'y', ARRAY['code < ''g'''], loss => 'squared');
DROP TABLE ex_uc;
SELECT unlearn_train('bad', 'ex', 'target', ARRAY['(SELECT max(bmi) FROM ex)'], loss => 'squared');
SELECT unlearn_train('bad', 'ex', 'target', ARRAY['bmi FROM ex'], loss => 'squared');
SELECT unlearn_train('bad', 'ex', 'target', ARRAY['bmi; DROP TABLE ex'], loss => 'squared');
SELECT unlearn_train('bad', 'ex', 'target', ARRAY['sum(bmi)'], loss => 'squared');
SELECT unlearn_train('bad', 'ex', 'target', ARRAY['ex.bmi'], loss => 'squared');
SELECT unlearn_train('bad', 'ex', 'target', ARRAY['*'], loss => 'squared');
SELECT unlearn_train('bad', 'ex', 'target', ARRAY['xmin::text::int'], loss => 'squared');
SELECT unlearn_train('bad', 'ex', 'target', ARRAY['bmi::text::float8'], loss => 'squared');
SELECT unlearn_train('bad', 'ex', 'target', ARRAY['sex_code || ''x'''], loss => 'squared');
SELECT unlearn_train('bad', 'ex', 'target', ARRAY['ln(weight)'], loss => 'squared');
SELECT unlearn_train('bad', 'ex', 'target', ARRAY['generate_series(1, 2)'], loss => 'squared');
SELECT unlearn_train('bad', 'ex', 'target', ARRAY['bmi AS b'], loss => 'squared');
-- types whose built-in functions still depend on a setting or name an
-- object a role can drop: bytea (bytea_output), cstring, reg* constants
SELECT unlearn_train('bad', 'ex', 'target', ARRAY['length(textin(byteaout(int4send(id))))'], loss => 'squared');
SELECT unlearn_train('bad', 'ex', 'target', ARRAY['bmi * (''public.ex''::regclass::oid::int8 % 7)'], loss => 'squared');
SELECT unlearn_train('bad', 'ex', 'target', ARRAY['length(to_tsvector(''english''::regconfig, sex_code))'], loss => 'squared');
-- nesting deep enough to reach max_stack_depth when a DELETE parses it again
SELECT unlearn_train('bad', 'ex', 'target', ARRAY['bmi' || repeat(' + bmi', 150)], loss => 'squared');
SELECT count(*) AS no_bad_model FROM unlearn.models WHERE model = 'bad';

-- 8. a hostile overload in a schema ahead of pg_catalog does not change
-- what an expression calls, at training or in another role's DELETE
CREATE SCHEMA ex_hostile;
CREATE FUNCTION ex_hostile.ln(integer) RETURNS float8 IMMUTABLE LANGUAGE sql AS 'SELECT 0::float8';
CREATE ROLE ex_deleter;
GRANT USAGE ON SCHEMA ex_hostile TO ex_deleter;
GRANT SELECT, DELETE ON ex TO ex_deleter;
SET search_path = ex_hostile, public, pg_catalog;
SELECT rows FROM unlearn_train('ex_ln', 'ex', 'target', ARRAY['ln(age_years)', 'bmi'],
							   loss => 'squared', lambda => 1e-4, sigma => 0);
SELECT features FROM unlearn.models WHERE model = 'ex_ln';
SET ROLE ex_deleter;
SET client_min_messages = warning;
DELETE FROM ex WHERE id % 41 = 1;
RESET client_min_messages;
RESET ROLE;
RESET search_path;
SELECT ex_equals_refit('ex_ln', 'ex') AS hostile_overload;

-- a session with standard_conforming_strings off reads a backslash in an
-- expression's string constant as the model does: its UPDATE and DELETE
-- reach the model
SELECT rows FROM unlearn_train('ex_bs', 'ex', 'target', ARRAY['bmi', 'sex_code || ''\'' = ''f\'''],
							   loss => 'squared', lambda => 1e-4, sigma => 0);
SELECT features FROM unlearn.models WHERE model = 'ex_bs';
SET standard_conforming_strings = off;
SET escape_string_warning = off;
UPDATE ex SET sex_code = 'm' WHERE id BETWEEN 300 AND 305 AND sex_code = 'f';
DELETE FROM ex WHERE id % 47 = 3;
RESET escape_string_warning;
RESET standard_conforming_strings;
SELECT ex_in_step('ex_bs', 'ex') AS backslash, ex_equals_refit('ex_bs', 'ex') AS backslash;

-- 9. the table cannot drop or retype a column an expression reads
ALTER TABLE ex DROP COLUMN s5;
ALTER TABLE ex ALTER COLUMN bmi TYPE numeric;
ALTER TABLE ex RENAME COLUMN s1 TO s1_mg;
ALTER TABLE ex DROP COLUMN note;
-- a retype to the same type (USING rewrites every value, a typmod rounds
-- them) and a drop with a column of the same name added back are refused
ALTER TABLE ex ALTER COLUMN bmi TYPE float8 USING bmi * 2;
ALTER TABLE ex ALTER COLUMN age_years TYPE int;
ALTER TABLE ex DROP COLUMN bp, ADD COLUMN bp float8 DEFAULT 5;
ALTER TABLE ex DROP COLUMN s1, ADD COLUMN s1 float8 DEFAULT 5;
ALTER TABLE ex ADD COLUMN note2 text;
ALTER TABLE ex ALTER COLUMN note2 TYPE varchar(20);			-- no model reads it
SELECT ex_in_step('ex', 'ex') AS after_ddl;
-- a text column is read under the collation it had at training, named in
-- the expression's text; changing the column's collation is a retype, and
-- refused
SELECT rows FROM unlearn_train('ex_collate', 'ex', 'target', ARRAY['sex_code < ''g''', 'upper(sex_code) = ''F''', 'bmi'],
							   loss => 'squared', lambda => 1e-4, sigma => 0);
SELECT features FROM unlearn.models WHERE model = 'ex_collate';
ALTER TABLE ex ALTER COLUMN sex_code TYPE text COLLATE "C";
DELETE FROM ex WHERE id % 43 = 2;
SELECT ex_equals_refit('ex_collate', 'ex') AS collation_changed;

SELECT unlearn_drop(model) FROM unlearn.models WHERE model LIKE 'ex%' ORDER BY model;
DROP TABLE ex, ex_held, ex_part, ex_cat, ex_refit_rows;
DROP FUNCTION ex_in_step(text, regclass), ex_equals_refit(text, regclass), ex_double(float8);
DROP OPERATOR ### (float8, float8);
DROP DOMAIN ex_positive;
DROP COLLATION ex_coll;
DROP SCHEMA ex_hostile CASCADE;
DROP ROLE ex_deleter;
