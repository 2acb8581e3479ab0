-- Partitioned tables: a model trained on the root follows DML through any
-- partition, and a change of the partition set (CREATE ... PARTITION OF,
-- ATTACH, DETACH, DROP) and TRUNCATE of a partition retrain it on the
-- table's rows, unless the rows that left are whole cohorts (the key of a
-- table partitioned BY LIST is the default cohort column: 31_cohorts).
-- Inheritance is refused.
\set SHOW_CONTEXT never
SET client_min_messages = warning;
CREATE TABLE pt (id int, grp int, age float8, sex float8, bmi float8, bp float8, s1 float8,
	s2 float8, s3 float8, s4 float8, s5 float8, s6 float8, target float8) PARTITION BY LIST (grp);
CREATE TABLE pt_a PARTITION OF pt FOR VALUES IN (0);
-- a partition whose columns are in another order than its root's
CREATE TABLE pt_b (target float8, grp int, id int, age float8, sex float8, bmi float8, bp float8,
	s1 float8, s2 float8, s3 float8, s4 float8, s5 float8, s6 float8);
ALTER TABLE pt ATTACH PARTITION pt_b FOR VALUES IN (1);
INSERT INTO pt SELECT id, id % 2, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target FROM diabetes;
SELECT model FROM unlearn_train('pt_lsq', 'pt', 'target', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
								loss => 'squared', lambda => 1e-4, sigma => 0);
SELECT model FROM unlearn_train('pt_log', 'pt', 'sex', '{age,bmi,bp,s1,s2,s3,s4,s5,s6}',
								lambda => 1e-2, sigma => 1);
-- a budget so small that every statement re-anchors or retrains (reading the table)
SELECT model FROM unlearn_train('pt_tight', 'pt', 'sex', '{age,bmi,bp,s1,s2,s3,s4,s5,s6}',
								lambda => 1e-2, sigma => 1e-4);
CREATE FUNCTION pg_temp.check(what text) RETURNS TABLE (statement text, model text, state text,
	in_step boolean, certified boolean, refit boolean) LANGUAGE sql AS $$
	SELECT what, m.model, m.state, m.rows = (SELECT count(*) FROM pt), v.certified,
		   m.loss <> 'squared' OR v.retrain_distance <=
			   1e-9 * (SELECT sqrt(sum(c ^ 2)) FROM unnest(unlearn_coef(m.model)) c)
	FROM unlearn.models m, unlearn_verify(m.model) v
	WHERE m.model LIKE 'pt\_%' ORDER BY m.model
$$;
CREATE TEMP TABLE results AS SELECT * FROM pg_temp.check('trained');

-- every partition carries the triggers
SELECT c.relname, count(*) AS triggers FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
WHERE t.tgname LIKE 'unlearn\_%' AND c.relname LIKE 'pt%' GROUP BY 1 ORDER BY 1;

-- DML through the partitions
DELETE FROM pt_a WHERE id < 60;
INSERT INTO results SELECT * FROM pg_temp.check('delete from a partition');
UPDATE pt_b SET bmi = bmi + 0.1 WHERE id < 80;
INSERT INTO results SELECT * FROM pg_temp.check('update of a partition');
INSERT INTO pt_a SELECT id + 1000, 0, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target FROM diabetes WHERE id < 20;
INSERT INTO results SELECT * FROM pg_temp.check('insert into a partition');
-- a row that moves between partitions through the root
UPDATE pt SET grp = 1 - grp, target = target + 1 WHERE id BETWEEN 100 AND 110;
INSERT INTO results SELECT * FROM pg_temp.check('cross-partition update');
TRUNCATE pt_b;
INSERT INTO results SELECT * FROM pg_temp.check('truncate of a partition');
INSERT INTO pt SELECT id + 4000, 1, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target FROM diabetes WHERE id >= 100;
-- one query that writes a partition directly and the root: its parts are
-- applied together
WITH gone AS (DELETE FROM pt_b WHERE id BETWEEN 120 AND 160 RETURNING *)
INSERT INTO pt SELECT id + 5000, grp, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target FROM gone;
INSERT INTO results SELECT * FROM pg_temp.check('partition and root in one query');

-- changes of the partition set retrain
CREATE TABLE pt_c PARTITION OF pt FOR VALUES IN (2);
INSERT INTO pt_c SELECT id + 2000, 2, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target FROM diabetes WHERE id < 30;
INSERT INTO results SELECT * FROM pg_temp.check('insert into a new partition');
CREATE TABLE pt_d (LIKE pt);
INSERT INTO pt_d SELECT id + 3000, 3, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target FROM diabetes WHERE id < 40;
ALTER TABLE pt ATTACH PARTITION pt_d FOR VALUES IN (3);
INSERT INTO results SELECT * FROM pg_temp.check('attach');
ALTER TABLE pt DETACH PARTITION pt_c;
INSERT INTO results SELECT * FROM pg_temp.check('detach');
DROP TABLE pt_a;
INSERT INTO results SELECT * FROM pg_temp.check('drop partition');
SELECT operation, count(*) FROM unlearn.ledger WHERE model = 'pt_lsq' AND retrained GROUP BY 1 ORDER BY 1;
-- the triggers of a partition stay enabled
ALTER TABLE pt_b DISABLE TRIGGER unlearn_after_delete;

RESET client_min_messages;
SELECT * FROM results ORDER BY model, statement;

-- models are trained on the root, not on a partition
SELECT unlearn_train('pt_part', 'pt_b', 'target', '{age}', loss => 'squared');

-- inheritance: a trained table cannot gain a child, nor a child be trained
CREATE TABLE ih (id int, x float8, y float8);
INSERT INTO ih SELECT i, i, i % 2 FROM generate_series(1, 20) i;
SELECT model FROM unlearn_train('ih', 'ih', 'y', '{x}');
CREATE TABLE ih_child () INHERITS (ih);
CREATE TABLE ih_other (id int, x float8, y float8);
ALTER TABLE ih_other INHERIT ih;
CREATE TABLE ih_parent (id int, x float8, y float8);
CREATE TABLE ih_kid () INHERITS (ih_parent);
SELECT unlearn_train('ih_kid', 'ih_kid', 'y', '{x}');
SELECT unlearn_train('ih_parent', 'ih_parent', 'y', '{x}');

SELECT unlearn_drop('pt_lsq'), unlearn_drop('pt_log'), unlearn_drop('pt_tight'), unlearn_drop('ih');
DROP TABLE pt, pt_c, ih, ih_other, ih_parent CASCADE;
