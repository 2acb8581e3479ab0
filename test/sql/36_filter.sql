-- filter => '<boolean expression over the row>': the model reflects the
-- rows where the expression is true.  It follows the rules of feature
-- expressions (built-in immutable functions, no subquery), is kept as
-- canonical text, and the columns it reads are protected from DDL as a
-- model's columns are.  A row outside the filter is no row of the model:
-- it is not counted among the skipped.
--
-- 1. Training reads the filter's rows only; an UPDATE that moves a row into
--    or out of the filter adds or removes it; least squares stays a refit
--    (to 1e-9, a fresh training at the same Lambda), logistic certified.
-- 2. With "nulls": "skip", skipped counts only the rows inside the filter.
-- 3. Deferred removal, TRUNCATE, partitions (ATTACH and DETACH) and a
--    cohort erasure keep the count.  ROLLBACK restores the model.
-- 4. A filter that fails for a row (a division by zero) leaves the row
--    out and suspends the model, never failing the write.
-- 5. unlearn_evaluate on the model's table reads the filter's rows;
--    unlearn_export carries the filter.
-- 6. Errors: a filter that is not boolean, a subquery, an unknown column,
--    DDL on a column the filter reads, an audit.
SET client_min_messages = warning;
CREATE TABLE fl (id int PRIMARY KEY, region text, active boolean, visits float8, spend float8, y float8,
	churned boolean GENERATED ALWAYS AS (y > 3) STORED);
INSERT INTO fl (id, region, active, visits, spend, y)
SELECT i, (ARRAY['eu', 'us', 'asia'])[i % 3 + 1], i % 4 <> 0, (i * 7) % 23,
	   CASE WHEN i % 29 = 0 THEN NULL ELSE sin(i) * 10 END, (i * 7) % 23 * 0.3 + sin(i)
FROM generate_series(1, 600) i;

CREATE FUNCTION fl_check(m text, pass text) RETURNS TABLE (rows_match bool, refit bool)
LANGUAGE plpgsql AS $$
DECLARE
	r unlearn.models;
BEGIN
	SELECT * INTO r FROM unlearn.models WHERE model = m;
	EXECUTE format('SELECT count(*) = $1 FROM fl WHERE %s', pass) INTO rows_match USING r.rows;
	PERFORM unlearn_train(m || '_fresh', 'fl', 'y', r.features, loss => 'squared', sigma => 0,
						  lambda => r.reg / r.rows, filter => pass);
	refit := (SELECT max(abs(x - z)) < 1e-9 FROM unnest(r.coef, (SELECT coef FROM unlearn.models
																 WHERE model = m || '_fresh')) AS t (x, z));
	PERFORM unlearn_drop(m || '_fresh');
	RETURN NEXT;
END $$;

-- 1.
SELECT model, rows FROM unlearn_train('fl_ls', 'fl', 'y', '{visits}', loss => 'squared', sigma => 0,
									  filter => 'region = ''eu'' AND active');
SELECT model, rows FROM unlearn_train('fl_lr', 'fl', 'churned', '{visits,spend}', sigma => 10,
									  filter => 'region = ''eu'' AND active', options => '{"nulls": "skip"}');
SELECT model, filter, rows, skipped FROM unlearn.models WHERE model LIKE 'fl\_%' ORDER BY model;
SELECT * FROM fl_check('fl_ls', 'region = ''eu'' AND active');
UPDATE fl SET active = NOT active WHERE id % 7 = 0;
UPDATE fl SET region = 'eu' WHERE id % 13 = 1;
DELETE FROM fl WHERE id % 11 = 0;
INSERT INTO fl (id, region, active, visits, spend, y) VALUES (1001, 'eu', true, 3, 4, 1), (1002, 'us', true, 3, 4, 1),
	(1003, 'eu', NULL, 1, 1, 1), (1004, 'eu', true, 5, NULL, 2);
SELECT * FROM fl_check('fl_ls', 'region = ''eu'' AND active');

-- 2.
SELECT rows = (SELECT count(*) FROM fl WHERE region = 'eu' AND active AND spend IS NOT NULL) AS rows_match,
	   skipped = (SELECT count(*) FROM fl WHERE region = 'eu' AND active AND spend IS NULL) AS skipped_match
FROM unlearn.models WHERE model = 'fl_lr';
SELECT certified FROM unlearn_verify('fl_lr');

-- 3.
SELECT fingerprint AS before FROM (SELECT md5(m::text || s.column_sums::text || s.class_spent::text) AS fingerprint
	FROM unlearn.models m JOIN unlearn.model_state s USING (model) WHERE model = 'fl_lr') f \gset
BEGIN;
UPDATE fl SET active = true;
DELETE FROM fl WHERE region = 'eu';
ROLLBACK;
SELECT md5(m::text || s.column_sums::text || s.class_spent::text) = :'before' AS identical_after_rollback
FROM unlearn.models m JOIN unlearn.model_state s USING (model) WHERE model = 'fl_lr';
SELECT model, rows FROM unlearn_train('fl_deferred', 'fl', 'y', '{visits}', loss => 'squared', sigma => 0,
									  filter => 'active', options => '{"removal": "deferred"}');
UPDATE fl SET active = false WHERE id % 5 = 0;
INSERT INTO fl (id, region, active, visits, spend, y) VALUES (1005, 'asia', true, 2, 2, 2), (1006, 'asia', false, 2, 2, 2);
SELECT (unlearn_apply_pending('fl_deferred')).state AS applied;
SELECT * FROM fl_check('fl_deferred', 'active');
SELECT unlearn_drop('fl_deferred');

CREATE TABLE flp (id int, tenant text, active boolean, visits float8, y float8) PARTITION BY LIST (tenant);
CREATE TABLE flp_a PARTITION OF flp FOR VALUES IN ('a');
CREATE TABLE flp_b PARTITION OF flp FOR VALUES IN ('b');
INSERT INTO flp SELECT i, CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END, i % 3 <> 0, i % 17, (i % 17) * 0.5 + cos(i)
FROM generate_series(1, 300) i;
SELECT model, rows FROM unlearn_train('flp_ls', 'flp', 'y', '{visits}', loss => 'squared', sigma => 0,
									  filter => 'active');
SELECT cohort FROM unlearn.models WHERE model = 'flp_ls';
ALTER TABLE flp DETACH PARTITION flp_a;
SELECT rows = (SELECT count(*) FROM flp WHERE active) AS rows_match, skipped FROM unlearn.models WHERE model = 'flp_ls';
ALTER TABLE flp ATTACH PARTITION flp_a FOR VALUES IN ('a');
SELECT rows = (SELECT count(*) FROM flp WHERE active) AS rows_match, skipped FROM unlearn.models WHERE model = 'flp_ls';
DELETE FROM flp WHERE tenant = 'b';
SELECT rows = (SELECT count(*) FROM flp WHERE active) AS rows_match, skipped FROM unlearn.models WHERE model = 'flp_ls';
SELECT certified FROM unlearn_verify('flp_ls');
TRUNCATE flp_a;
SELECT rows, skipped, state FROM unlearn.models WHERE model = 'flp_ls';

-- 4.
SELECT model, rows FROM unlearn_train('fl_div', 'fl', 'y', '{visits}', loss => 'squared', sigma => 0,
									  filter => 'y / (visits + 1) > 0.2');
INSERT INTO fl (id, region, active, visits, spend, y) VALUES (2001, 'eu', true, -1, 1, 1);
SELECT state, rows = (SELECT count(*) FROM fl WHERE visits <> -1 AND y / (visits + 1) > 0.2) AS rows_match
FROM unlearn.models WHERE model = 'fl_div';
SELECT unlearn_drop('fl_div');
DELETE FROM fl WHERE id = 2001;

-- the filter is one condition in SQL, evaluated in its own order as the
-- triggers evaluate it: a part guarded by the one before it never fails
-- there (the planner would run the cheaper part of a plain AND first)
CREATE TABLE fl_guard (id int PRIMARY KEY, x float8, c text);
INSERT INTO fl_guard SELECT i, i % 17 + 1, CASE WHEN i % 17 > 8 THEN 'hi' ELSE 'lo' END FROM generate_series(1, 300) i;
SELECT model, rows FROM unlearn_train('fl_guard', 'fl_guard', 'c', '{x}',
	filter => 'CASE WHEN x = 0 THEN false ELSE x * 2 * 2 > 0 END AND 1 / x::int >= 0');
INSERT INTO fl_guard VALUES (1000, 0, 'lo');
DELETE FROM fl_guard WHERE c = 'hi';
SELECT rows = (SELECT count(*) FROM fl_guard WHERE x <> 0) AS rows_match FROM unlearn.models WHERE model = 'fl_guard';
-- a feature expression the filter guards is evaluated only for the rows
-- it passes, in SQL as in the triggers, whatever a pass's other conditions
CREATE TABLE fl_guard3 (id int PRIMARY KEY, x int, c text);
INSERT INTO fl_guard3 SELECT i, i % 5 + 1, (ARRAY['a', 'b', 'c'])[i % 3 + 1] FROM generate_series(1, 30) i;
INSERT INTO fl_guard3 VALUES (100, 1, 'd');
SELECT model, rows FROM unlearn_train('fl_guard3', 'fl_guard3', 'c', ARRAY['id', '1 / x'],
	options => '{"nulls": "skip"}', filter => 'x <> 0');
INSERT INTO fl_guard3 VALUES (101, 0, 'a');
DELETE FROM fl_guard3 WHERE id = 100;
SELECT state, rows = (SELECT count(*) FROM fl_guard3 WHERE x <> 0) AS rows_match FROM unlearn.models
WHERE model = 'fl_guard3';
SELECT unlearn_drop('fl_guard3');
DROP TABLE fl_guard3;
-- and a part that fails before its guard fails at training, not later
SELECT model, rows FROM unlearn_train('fl_guard2', 'fl_guard', 'x', '{id}', loss => 'squared',
	filter => '1 / x::int >= 0 AND x <> 0');
-- a partition attached with a row the filter fails for: the model is
-- suspended, the command goes on
CREATE TABLE flq (id int, k int, x float8, y float8) PARTITION BY LIST (k);
CREATE TABLE flq_1 PARTITION OF flq FOR VALUES IN (1);
INSERT INTO flq SELECT i, 1, i % 5 + 1, i FROM generate_series(1, 100) i;
SELECT model, rows FROM unlearn_train('flq', 'flq', 'y', '{x}', loss => 'squared', sigma => 0,
	filter => '1 / x::int >= 0');
CREATE TABLE flq_2 (id int, k int, x float8, y float8);
INSERT INTO flq_2 VALUES (1000, 2, 0, 1);
ALTER TABLE flq ATTACH PARTITION flq_2 FOR VALUES IN (2);
SELECT state FROM unlearn.models WHERE model = 'flq';
SELECT unlearn_drop('flq'), unlearn_drop('fl_guard');
DROP TABLE flq, fl_guard;

-- 5.
SELECT rows = (SELECT count(*) FROM fl WHERE region = 'eu' AND active) AS evaluates_filter_rows
FROM unlearn_evaluate('fl_ls');
SELECT unlearn_export('fl_ls') -> 'filter' AS exported;

-- 6.
SELECT unlearn_train('fl_bad', 'fl', 'y', '{visits}', loss => 'squared', filter => 'visits');
SELECT unlearn_train('fl_bad', 'fl', 'y', '{visits}', loss => 'squared', filter => 'id IN (SELECT 1)');
SELECT unlearn_train('fl_bad', 'fl', 'y', '{visits}', loss => 'squared', filter => 'no_such > 1');
SELECT unlearn_train('fl_bad', 'fl', 'y', '{visits}', loss => 'squared', filter => 'active; DROP TABLE fl');
ALTER TABLE fl DROP COLUMN active;
ALTER TABLE fl ALTER COLUMN region TYPE varchar;
SELECT * FROM unlearn_audit('fl_lr', canaries => 200, attack => 'analytic');

RESET client_min_messages;
SELECT unlearn_drop(model) FROM unlearn.models WHERE model LIKE 'fl%' ORDER BY model;
DROP TABLE fl, flp;
DROP FUNCTION fl_check(text, text);
