-- Every form of statement leaves each model reflecting exactly the table's
-- rows, with spent covering the true residual: upsert, MERGE, writable
-- CTEs, foreign-key cascades and COPY; a model with a row filter exactly
-- the rows that pass it, as statements move rows into and out of it; an
-- async model (its queue applied after each statement, each applied
-- version checked) as its immediate twin; a model that takes the
-- categories of grp from the rows has one per value its rows have.  A
-- query may fire the DELETE, INSERT and UPDATE triggers of one table
-- together; its rows are applied once.
\set SHOW_CONTEXT never
SET client_min_messages = warning;
CREATE TABLE sf_groups (grp int PRIMARY KEY);
INSERT INTO sf_groups SELECT g FROM generate_series(0, 9) g;
CREATE TABLE sf (id int PRIMARY KEY, grp int REFERENCES sf_groups ON DELETE CASCADE,
	age float8, sex float8, bmi float8, bp float8, s1 float8, s2 float8, s3 float8,
	s4 float8, s5 float8, s6 float8, target float8,
	high boolean GENERATED ALWAYS AS (target > 140) STORED);
INSERT INTO sf (id, grp, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target)
SELECT id, id % 10, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target FROM diabetes WHERE id <= 400;
-- least squares is exact (sigma 0); logistic with the exact bound, with
-- the default taylor bound, and with a budget so small that every
-- statement re-anchors or retrains (reading the table)
SELECT model FROM unlearn_train('sf_lsq', 'sf', 'target', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
								loss => 'squared', lambda => 1e-4, sigma => 0);
SELECT model FROM unlearn_train('sf_exact', 'sf', 'high', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
								lambda => 1e-2, sigma => 1, options => '{"bound": "exact"}');
SELECT model FROM unlearn_train('sf_taylor', 'sf', 'high', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
								lambda => 1e-2, sigma => 1);
SELECT model FROM unlearn_train('sf_tight', 'sf', 'high', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
								lambda => 1e-2, sigma => 1e-4);
-- the same least squares and taylor models on the rows of a filter
SELECT model FROM unlearn_train('sf_lsq_filtered', 'sf', 'target', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
								loss => 'squared', lambda => 1e-4, sigma => 0, filter => 'grp < 5 OR bmi > 0.03');
SELECT model FROM unlearn_train('sf_taylor_filtered', 'sf', 'high', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
								lambda => 1e-2, sigma => 1, filter => 'grp < 5 OR bmi > 0.03');
-- and with the categories of grp taken from the rows
SELECT model FROM unlearn_train('sf_lsq_groups', 'sf', 'target', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6,category(grp)}',
								loss => 'squared', lambda => 1e-4, sigma => 0);
-- and async: the worker is off here, unlearn_apply_pending applies
SELECT model FROM unlearn_train('sf_lsq_async', 'sf', 'target', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
								loss => 'squared', lambda => 1e-4, sigma => 0, options => '{"removal": "async"}');
SELECT model FROM unlearn_train('sf_taylor_async', 'sf', 'high', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
								lambda => 1e-2, sigma => 1, options => '{"removal": "async"}');

-- in_step: the model's row count is the table's (that of the rows the
-- filter passes, for a filtered model), and a model that takes grp's
-- categories has one per value (and "other"); certified: the exact
-- residual is within spent; refit: least squares equals a refit (same b,
-- Lambda and row map) to 1e-9 relative; an async model's queue is applied
-- first
CREATE FUNCTION pg_temp.check(what text) RETURNS TABLE (statement text, model text, in_step boolean,
	certified boolean, refit boolean) LANGUAGE sql AS $$
	SELECT count(unlearn._apply_pending(model)) FROM unlearn.models WHERE removal = 'async' AND model LIKE 'sf\_%';
	SELECT what, m.model, m.rows = (SELECT count(*) FROM sf WHERE m.filter IS NULL OR grp < 5 OR bmi > 0.03)
		   AND (m.taken_categories IS NULL OR m.dims = 11 + (SELECT count(DISTINCT grp) FROM sf)),
		   v.certified,
		   m.loss <> 'squared' OR v.retrain_distance <=
			   1e-9 * (SELECT sqrt(sum(c ^ 2)) FROM unnest(unlearn_coef(m.model)) c)
	FROM unlearn.models m, unlearn_verify(m.model) v
	WHERE m.model LIKE 'sf\_%' ORDER BY m.model
$$;
CREATE TEMP TABLE results AS SELECT * FROM pg_temp.check('trained');

-- upsert: conflicting rows are updated (the UPDATE trigger), the others
-- inserted (the INSERT trigger), in one query
INSERT INTO sf (id, grp, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target)
SELECT id, id % 10, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target + 7 FROM diabetes WHERE id BETWEEN 380 AND 420
ON CONFLICT (id) DO UPDATE SET target = excluded.target, bmi = excluded.bmi + 0.01;
INSERT INTO results SELECT * FROM pg_temp.check('upsert');

-- MERGE: delete, update and insert in one query
MERGE INTO sf USING (SELECT * FROM diabetes WHERE id BETWEEN 300 AND 442) d ON sf.id = d.id
WHEN MATCHED AND d.id % 3 = 0 THEN DELETE
WHEN MATCHED THEN UPDATE SET target = sf.target - 5
WHEN NOT MATCHED THEN INSERT (id, grp, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target)
	VALUES (d.id, d.id % 10, d.age, d.sex, d.bmi, d.bp, d.s1, d.s2, d.s3, d.s4, d.s5, d.s6, d.target);
INSERT INTO results SELECT * FROM pg_temp.check('merge');

-- a writable CTE that deletes while the main statement inserts
WITH gone AS (DELETE FROM sf WHERE id < 30 RETURNING *)
INSERT INTO sf (id, grp, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target)
SELECT id + 1000, grp, age, sex, bmi + 0.5, bp, s1, s2, s3, s4, s5, s6, target FROM gone;
INSERT INTO results SELECT * FROM pg_temp.check('cte');

-- and one that updates while the main statement deletes
WITH moved AS (UPDATE sf SET bp = bp + 1 WHERE id BETWEEN 30 AND 40 RETURNING id)
DELETE FROM sf WHERE id BETWEEN 41 AND 45;
INSERT INTO results SELECT * FROM pg_temp.check('cte update+delete');

-- a foreign-key cascade deletes the rows of a group
DELETE FROM sf_groups WHERE grp = 7;
INSERT INTO results SELECT * FROM pg_temp.check('fk cascade');

-- COPY
COPY sf (id, grp, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target) FROM STDIN;
5001	1	50	1	25.5	90	180	100	50	4	4.5	90	150
5002	2	30	2	21.0	80	160	90	60	3	4.2	85	80
5003	3	65	1	30.2	100	200	120	40	5	5.0	95	250
\.
INSERT INTO results SELECT * FROM pg_temp.check('copy');

-- a user's trigger that writes the same table while the query's parts are
-- pending: its nested query joins them
CREATE FUNCTION sf_echo() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF pg_trigger_depth() = 1 THEN
		INSERT INTO sf (id, grp, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target)
		SELECT id + 20000, grp, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target + 1 FROM echoed;
	END IF;
	RETURN NULL;
END $$;
CREATE TRIGGER a_echo AFTER INSERT ON sf REFERENCING NEW TABLE AS echoed
	FOR EACH STATEMENT EXECUTE FUNCTION sf_echo();
MERGE INTO sf USING (SELECT * FROM diabetes WHERE id BETWEEN 200 AND 260) d ON sf.id = d.id
WHEN MATCHED AND d.id % 4 = 0 THEN DELETE
WHEN NOT MATCHED THEN INSERT (id, grp, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target)
	VALUES (d.id, d.id % 5, d.age, d.sex, d.bmi, d.bp, d.s1, d.s2, d.s3, d.s4, d.s5, d.s6, d.target);
SELECT count(*) > 0 AS echoed FROM sf WHERE id > 20000;
INSERT INTO results SELECT * FROM pg_temp.check('merge with a nested insert');
DROP TRIGGER a_echo ON sf;
DROP FUNCTION sf_echo();

-- and one whose nested insert is undone by its exception block: the
-- undone rows must not reach the models
CREATE FUNCTION sf_try() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF pg_trigger_depth() = 1 THEN
		BEGIN
			INSERT INTO sf (id, grp, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target)
			SELECT id + 30000, grp, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target FROM tried;
			RAISE EXCEPTION 'undone';
		EXCEPTION WHEN raise_exception THEN NULL;
		END;
	END IF;
	RETURN NULL;
END $$;
CREATE TRIGGER a_try AFTER INSERT ON sf REFERENCING NEW TABLE AS tried
	FOR EACH STATEMENT EXECUTE FUNCTION sf_try();
INSERT INTO sf (id, grp, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target)
SELECT id + 40000, id % 5, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target FROM diabetes WHERE id <= 20;
SELECT count(*) AS undone_rows FROM sf WHERE id > 30000 AND id < 40000;
INSERT INTO results SELECT * FROM pg_temp.check('insert with an undone nested insert');
DROP TRIGGER a_try ON sf;
DROP FUNCTION sf_try();

-- an UPDATE of no model column changes no model, and spends nothing
SELECT spent AS spent_before FROM unlearn.models WHERE model = 'sf_exact' \gset
UPDATE sf SET grp = 1 WHERE grp = 2;
SELECT spent = :spent_before AS unchanged FROM unlearn.models WHERE model = 'sf_exact';
INSERT INTO results SELECT * FROM pg_temp.check('update other column');

-- ROLLBACK of a MERGE restores the stored models bit for bit, and leaves
-- their resident matrices as they were
CREATE FUNCTION pg_temp.fingerprint() RETURNS text LANGUAGE sql AS $$
	SELECT string_agg(md5(m::text) || coalesce(md5(s.noise::text || s.anchor::text || s.class_spent::text), '')
					  || coalesce(unlearn._matrices_digest(m.model), 'not resident'), ',' ORDER BY m.model)
	FROM unlearn.models m LEFT JOIN unlearn.model_state s USING (model) WHERE m.model LIKE 'sf\_%'
$$;
SELECT pg_temp.fingerprint() AS before_merge \gset
BEGIN;
MERGE INTO sf USING (SELECT * FROM diabetes WHERE id BETWEEN 100 AND 200) d ON sf.id = d.id
WHEN MATCHED AND d.id % 2 = 0 THEN DELETE
WHEN MATCHED THEN UPDATE SET target = sf.target + 1;
SELECT count(*) > 0 AS queued FROM unlearn.pending WHERE model = 'sf_lsq_async';
ROLLBACK;
SELECT pg_temp.fingerprint() = :'before_merge' AS identical_after_rollback,
	   (SELECT count(*) FROM unlearn.pending) AS queued_after_rollback;

RESET client_min_messages;
SELECT statement, model, in_step, certified, refit FROM results ORDER BY model, statement;
SELECT retrains + reanchors > 3 AS tight_read_the_table FROM unlearn.models WHERE model = 'sf_tight';
SELECT model, operation, rows_removed, rows_added FROM unlearn.ledger
WHERE model = 'sf_lsq' AND operation NOT IN ('train') ORDER BY id;

SELECT unlearn_drop(model) FROM unlearn.models WHERE model LIKE 'sf\_%';
DROP TABLE sf, sf_groups;
