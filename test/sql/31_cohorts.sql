-- Cohorts (seed 003): a model trained with cohort => 'column' keeps each
-- cohort's statistics in step with every change; a statement that removes
-- all of a cohort's rows, unlearn_forget_cohort, and a partition DETACHed,
-- DROPped or TRUNCATEd erase it from them (ledger operation 'cohort'),
-- exactly for least squares and certified for the logistic loss.  Only
-- the model's owner sees the cohorts.
\set SHOW_CONTEXT never
SET client_min_messages = warning;
CREATE TABLE co (id int PRIMARY KEY, tenant text, site int, a float8, b float8, c float8,
	y float8, yes boolean);
INSERT INTO co SELECT i, 'tenant-' || (i % 6), i % 3, sin(i), cos(1.3 * i), sin(0.7 * i) * cos(i),
	2 * sin(i) - cos(1.3 * i) + 0.1 * (i % 7), sin(i) + cos(1.3 * i) > 0.2
FROM generate_series(1, 1800) i;
SELECT model FROM unlearn_train('co_ls', 'co', 'y', '{a,b,c}', loss => 'squared',
	sigma => 0, cohort => 'tenant');
SELECT model, rows, cohorts FROM unlearn.status WHERE model = 'co_ls';
SELECT model FROM unlearn_train('co_lg', 'co', 'yes', '{a,b,c}', lambda => 1e-2,
	sigma => 5, cohort => 'tenant');
SELECT model, rows, cohorts FROM unlearn.status WHERE model = 'co_lg';

-- after every statement: each kept cohort has the table's rows, and the
-- models are certified (least squares: a refit)
CREATE FUNCTION pg_temp.check(what text) RETURNS TABLE (statement text, model text,
	cohorts_in_step boolean, rows_in_step boolean, certified boolean, refit boolean)
LANGUAGE sql AS $$
	SELECT what, m.model,
		   (SELECT coalesce(bool_and(k.rows = (SELECT count(*) FROM co WHERE tenant = k.cohort)), true)
			FROM unlearn_cohorts(m.model) k),
		   m.rows = (SELECT count(*) FROM co), v.certified,
		   m.loss <> 'squared' OR v.retrain_distance <=
			   1e-9 * (SELECT sqrt(sum(x ^ 2)) FROM unnest(unlearn_coef(m.model)) x)
	FROM unlearn.models m, unlearn_verify(m.model) v
	WHERE m.model LIKE 'co\_%' ORDER BY m.model
$$;
CREATE TEMP TABLE results AS SELECT * FROM pg_temp.check('training');

-- 1. A DELETE of a whole cohort: one ledger line 'cohort' per model
DELETE FROM co WHERE tenant = 'tenant-1';
SELECT model, operation, rows_removed FROM unlearn.ledger
WHERE model LIKE 'co\_%' AND id > (SELECT max(id) - 2 FROM unlearn.ledger) ORDER BY model;
INSERT INTO results SELECT * FROM pg_temp.check('delete of a whole cohort');
-- a partial delete goes row by row and keeps the cohort in step
DELETE FROM co WHERE tenant = 'tenant-2' AND id % 5 = 0;
INSERT INTO results SELECT * FROM pg_temp.check('delete of part of a cohort');
-- a whole cohort and other rows in one statement
DELETE FROM co WHERE tenant = 'tenant-2' OR id IN (6, 12, 18);
INSERT INTO results SELECT * FROM pg_temp.check('a whole cohort and other rows');

-- 2. Every statement form keeps the cohorts in step
UPDATE co SET tenant = 'tenant-3' WHERE id BETWEEN 100 AND 130 AND tenant = 'tenant-4';
INSERT INTO results SELECT * FROM pg_temp.check('update moving rows between cohorts');
UPDATE co SET a = a + 0.5 WHERE tenant = 'tenant-5' AND id < 400;
INSERT INTO results SELECT * FROM pg_temp.check('update of features');
INSERT INTO co VALUES (5000, 'tenant-new', 0, 0.1, 0.2, 0.3, 1, true), (5001, 'tenant-3', 0, 0.3, 0.2, 0.1, 0, false)
ON CONFLICT (id) DO UPDATE SET tenant = excluded.tenant;
INSERT INTO co VALUES (5001, 'tenant-4', 0, 0.3, 0.2, 0.1, 0, false)
ON CONFLICT (id) DO UPDATE SET tenant = excluded.tenant;
INSERT INTO results SELECT * FROM pg_temp.check('upsert');
MERGE INTO co USING (SELECT id FROM co WHERE tenant = 'tenant-5' AND id % 7 = 0) s ON co.id = s.id
WHEN MATCHED AND s.id % 2 = 0 THEN DELETE
WHEN MATCHED THEN UPDATE SET tenant = 'tenant-0';
INSERT INTO results SELECT * FROM pg_temp.check('merge');
WITH gone AS (DELETE FROM co WHERE tenant = 'tenant-new' RETURNING *)
INSERT INTO co SELECT id + 10000, 'tenant-0', site, a, b, c, y, yes FROM gone;
INSERT INTO results SELECT * FROM pg_temp.check('writable CTE');
COPY co FROM STDIN;
7000	tenant-3	1	0.5	0.5	0.5	1	true
7001	tenant-4	1	-0.5	0.5	-0.5	0	false
\.
INSERT INTO results SELECT * FROM pg_temp.check('copy');

-- 3. ROLLBACK restores the models and their cohorts bit for bit
CREATE FUNCTION pg_temp.fingerprint() RETURNS text LANGUAGE sql AS $$
	SELECT md5(string_agg(row(m.*)::text, ',' ORDER BY m.model) ||
			   (SELECT string_agg(row(k.*)::text, ',' ORDER BY k.model, k.cohort) FROM unlearn.cohorts k))
	FROM unlearn.models m WHERE m.model LIKE 'co\_%'
$$;
SELECT pg_temp.fingerprint() AS before \gset
BEGIN;
DELETE FROM co WHERE tenant = 'tenant-3';
UPDATE co SET tenant = 'tenant-0' WHERE tenant = 'tenant-4' AND id < 900;
SELECT count(*) AS cohort_lines FROM unlearn.ledger WHERE operation = 'cohort'
	AND xact = pg_current_xact_id();
ROLLBACK;
SELECT pg_temp.fingerprint() = :'before' AS rolled_back;

-- 4. unlearn_forget_cohort deletes the cohort's rows with the caller's rights
SELECT unlearn_forget_cohort('co_lg', 'tenant-3') AS deleted;
SELECT count(*) AS left_in_table FROM co WHERE tenant = 'tenant-3';
INSERT INTO results SELECT * FROM pg_temp.check('unlearn_forget_cohort');
SELECT unlearn_forget_cohort('co_lg', 'no such tenant') AS deleted;

-- 5. Only the owner sees cohorts; a grantee can erase only what it may delete
CREATE ROLE co_reader;
CREATE ROLE co_stranger;
GRANT SELECT ON co TO co_reader;
SELECT unlearn_grant('co_lg', 'co_reader', 'read');
SET ROLE co_reader;
SELECT count(*) AS cohorts_seen FROM unlearn_cohorts('co_lg');
SELECT count(*) AS rows_seen FROM unlearn.cohorts;
SELECT model, cohorts, cohort_bytes FROM unlearn.status WHERE model = 'co_lg';
SELECT unlearn_forget_cohort('co_lg', 'tenant-4');
SET ROLE co_stranger;
SELECT unlearn_forget_cohort('co_lg', 'tenant-4');
RESET ROLE;
SELECT count(*) > 0 AS owner_sees_cohorts FROM unlearn_cohorts('co_lg');
SELECT cohorts > 0 AND cohort_bytes > 0 AS owner_sees_figures FROM unlearn.status WHERE model = 'co_lg';

-- 6. The cohort column keeps its name and type
ALTER TABLE co RENAME COLUMN tenant TO customer;
ALTER TABLE co ALTER COLUMN tenant TYPE varchar(40);
ALTER TABLE co DROP COLUMN tenant;

-- 7. Errors, locked
SELECT unlearn_train('co_x', 'co', 'y', '{a}', loss => 'squared', cohort => 'nope');
SELECT unlearn_train('co_x', 'co', 'y', '{a}', loss => 'squared', cohort => 'a');
SELECT unlearn_train('co_x', 'co', 'y', '{a,b}', loss => 'squared', cohort => 'b');
SELECT unlearn_train('co_x', 'co', 'yes', '{a,b}', mechanism => 'noisy_gd', cohort => 'tenant');
SELECT unlearn_train('co_x', 'co', 'yes', '{a,b}', cohort => 'tenant', options => '{"bound": "guo"}');
SELECT unlearn_forget_cohort('no_model', 'x');
SELECT model FROM unlearn_train('co_plain', 'co', 'y', '{a}', loss => 'squared');
SELECT model, cohorts FROM unlearn.status WHERE model = 'co_plain';
SELECT unlearn_forget_cohort('co_plain', 'tenant-0');
SELECT unlearn_drop('co_plain');

-- 8. Past unlearn.cohort_memory the smallest cohorts go row by row
SET unlearn.cohort_memory = 0;
SELECT model FROM unlearn_retrain('co_ls');
SELECT model, cohorts FROM unlearn.status WHERE model = 'co_ls';
DELETE FROM co WHERE tenant = 'tenant-5';
SELECT operation, rows_removed > 0 AS removed FROM unlearn.ledger WHERE model = 'co_ls' ORDER BY id DESC LIMIT 1;
INSERT INTO results SELECT * FROM pg_temp.check('a cohort not kept');
RESET unlearn.cohort_memory;
SELECT model FROM unlearn_retrain('co_ls');
SELECT model, cohorts FROM unlearn.status WHERE model = 'co_ls';

-- 9. A deferred model queues each row with its cohort key; the apply
-- erases a cohort whose rows are all in the queue from its statistics
CREATE TABLE cq AS SELECT id, 'q-' || (id % 3) AS q, a, b, y FROM co;
SELECT model FROM unlearn_train('cq_ls', 'cq', 'y', '{a,b}', loss => 'squared', sigma => 0,
	cohort => 'q', options => '{"removal": "deferred"}');
SELECT model, cohorts FROM unlearn.status WHERE model = 'cq_ls';
DELETE FROM cq WHERE q = 'q-1';
UPDATE cq SET q = 'q-0' WHERE id IN (SELECT id FROM cq WHERE q = 'q-2' ORDER BY id LIMIT 10);
SELECT model, pending > 0 AS queued FROM unlearn.status WHERE model = 'cq_ls';
SELECT model, pending, cohorts FROM unlearn_apply_pending('cq_ls');
SELECT operation, rows_removed > 0 AS removed FROM unlearn.ledger WHERE model = 'cq_ls' ORDER BY id;
SELECT bool_and(k.rows = (SELECT count(*) FROM cq WHERE q = k.cohort)) AS cohorts_in_step,
	   count(*) AS cohorts
FROM unlearn_cohorts('cq_ls') k;
SELECT certified, retrain_distance <= 1e-9 * (SELECT sqrt(sum(x ^ 2)) FROM unnest(unlearn_coef('cq_ls')) x) AS refit
FROM unlearn_verify('cq_ls');
SELECT unlearn_drop('cq_ls');
DROP TABLE cq;

-- 10. Partitions: DETACH, DROP and TRUNCATE of a partition erase its cohorts
CREATE TABLE cp (id int, site int, grp int, a float8, b float8, y float8, yes boolean)
	PARTITION BY LIST (site);
CREATE TABLE cp0 PARTITION OF cp FOR VALUES IN (0);
CREATE TABLE cp1 PARTITION OF cp FOR VALUES IN (1);
CREATE TABLE cp2 PARTITION OF cp FOR VALUES IN (2);
CREATE TABLE cp3 PARTITION OF cp FOR VALUES IN (3, 4);
CREATE TABLE cp5 PARTITION OF cp FOR VALUES IN (5);
INSERT INTO cp SELECT i, i % 6, i % 4, sin(i), cos(1.3 * i), 2 * sin(i) - cos(1.3 * i),
	sin(i) + cos(1.3 * i) > 0.2
FROM generate_series(1, 3000) i;
SELECT model FROM unlearn_train('cp_ls', 'cp', 'y', '{a,b}', loss => 'squared', sigma => 0,
	cohort => 'site');
SELECT model, cohorts FROM unlearn.status WHERE model = 'cp_ls';
SELECT model FROM unlearn_train('cp_lg', 'cp', 'yes', '{a,b}', lambda => 1e-2, sigma => 5,
	cohort => 'site');
SELECT model, cohorts FROM unlearn.status WHERE model = 'cp_lg';
-- on a table partitioned BY LIST, the key is the default cohort column;
-- '' keeps none
SELECT model FROM unlearn_train('cp_default', 'cp', 'y', '{a,b}', loss => 'squared', sigma => 0);
SELECT model, cohorts FROM unlearn.status WHERE model = 'cp_default';
SELECT model FROM unlearn_train('cp_none', 'cp', 'y', '{a,b}', loss => 'squared', sigma => 0,
	cohort => '');
SELECT model, cohorts FROM unlearn.status WHERE model = 'cp_none';
SELECT model, coalesce(cohort, '(none)') AS cohort FROM unlearn.models WHERE model LIKE 'cp\_%' ORDER BY model;
SELECT unlearn_drop('cp_default'), unlearn_drop('cp_none');
-- cohorts that each partition holds only part of
SELECT model FROM unlearn_train('cp_grp', 'cp', 'y', '{a,b}', loss => 'squared', sigma => 0,
	cohort => 'grp');
SELECT model, cohorts FROM unlearn.status WHERE model = 'cp_grp';
CREATE FUNCTION pg_temp.check_cp(what text) RETURNS TABLE (statement text, model text, operation text,
	retrained boolean, rows_in_step boolean, certified boolean, refit boolean)
LANGUAGE sql AS $$
	SELECT what, m.model, l.operation, l.retrained,
		   m.rows = (SELECT count(*) FROM cp), v.certified,
		   m.loss <> 'squared' OR v.retrain_distance <=
			   1e-9 * (SELECT sqrt(sum(x ^ 2)) FROM unnest(unlearn_coef(m.model)) x)
	FROM unlearn.models m, unlearn_verify(m.model) v,
		 LATERAL (SELECT * FROM unlearn.ledger l WHERE l.model = m.model ORDER BY l.id DESC LIMIT 1) l
	WHERE m.model LIKE 'cp\_%' ORDER BY m.model
$$;
-- a row that moves to another partition (and cohort) through the root, and
-- a foreign-key cascade into the partitioned table
UPDATE cp SET site = 5 WHERE id IN (1, 7, 13);
SELECT * FROM pg_temp.check_cp('cross-partition update');
CREATE TABLE cp_owner (id int PRIMARY KEY);
INSERT INTO cp_owner SELECT generate_series(2000, 2100);
ALTER TABLE cp ADD COLUMN owner_id int REFERENCES cp_owner ON DELETE CASCADE;
UPDATE cp SET owner_id = id WHERE id BETWEEN 2000 AND 2100;
DELETE FROM cp_owner WHERE id < 2050;
SELECT * FROM pg_temp.check_cp('foreign-key cascade');
ALTER TABLE cp DETACH PARTITION cp1;
SELECT * FROM pg_temp.check_cp('detach');
DROP TABLE cp2;
SELECT * FROM pg_temp.check_cp('drop');
TRUNCATE cp3;
SELECT * FROM pg_temp.check_cp('truncate');
-- a DETACH and a TRUNCATE rolled back leave every model as it was
SELECT md5(string_agg(row(m.*)::text, ',' ORDER BY m.model)) AS before_cp
FROM unlearn.models m WHERE m.model LIKE 'cp\_%' \gset
BEGIN;
ALTER TABLE cp DETACH PARTITION cp5;
TRUNCATE cp0;
ROLLBACK;
SELECT md5(string_agg(row(m.*)::text, ',' ORDER BY m.model)) = :'before_cp' AS rolled_back
FROM unlearn.models m WHERE m.model LIKE 'cp\_%';
DROP TABLE cp1;
DROP TABLE cp;
DROP TABLE cp_owner;

-- 11. What a hostile table owner tried (each once a crash or a model off
-- its table): an empty partition truncated or dropped; a BEFORE TRUNCATE
-- trigger that runs DDL of its own, or inserts into the partition being
-- truncated; TRUNCATE ... CASCADE into another trained table; a DELETE of
-- a whole cohort in the same change as an insert of its key; cohorts under
-- a case-insensitive collation
CREATE FUNCTION pg_temp.in_step(name text) RETURNS TABLE (model text, rows_in_step boolean,
	cohorts_in_step boolean, certified boolean)
LANGUAGE plpgsql AS $$
DECLARE src regclass; col text; n bigint; ok boolean;
BEGIN
	SELECT m.source, m.cohort INTO src, col FROM unlearn.models m WHERE m.model = name;
	EXECUTE format('SELECT count(*) FROM %s', src) INTO n;
	EXECUTE format('SELECT coalesce(bool_and(k.rows = (SELECT count(*) FROM %s t WHERE t.%I::text COLLATE "C" = k.cohort)), true) '
				   'FROM unlearn_cohorts(%L) k', src, col, name) INTO ok;
	RETURN QUERY SELECT m.model, m.rows = n, ok, v.certified
		FROM unlearn.models m, unlearn_verify(m.model) v WHERE m.model = name;
END $$;
CREATE TABLE hp (id int, tenant text, a float8, y float8) PARTITION BY LIST (tenant);
CREATE TABLE hp1 PARTITION OF hp FOR VALUES IN ('t1', 'tq');
CREATE TABLE hp2 PARTITION OF hp FOR VALUES IN ('t2');
CREATE TABLE hp3 PARTITION OF hp FOR VALUES IN ('t3');
CREATE TABLE hp4 PARTITION OF hp FOR VALUES IN ('t4');
CREATE TABLE hp5 PARTITION OF hp FOR VALUES IN ('t5');
INSERT INTO hp SELECT i, 't' || (1 + i % 3), sin(i), 2 * sin(i) + 0.1 * (i % 7) FROM generate_series(1, 600) i;
SELECT model FROM unlearn_train('hp_ls', 'hp', 'y', '{a}', loss => 'squared', sigma => 0);
TRUNCATE hp4;
DROP TABLE hp5;
SELECT * FROM pg_temp.in_step('hp_ls');
CREATE FUNCTION pg_temp.swallow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN BEGIN DROP TABLE no_such_table; EXCEPTION WHEN others THEN NULL; END; RETURN NULL; END $$;
CREATE TRIGGER z_swallow BEFORE TRUNCATE ON hp1 FOR EACH STATEMENT EXECUTE FUNCTION pg_temp.swallow();
TRUNCATE hp1;
SELECT * FROM pg_temp.in_step('hp_ls');
CREATE FUNCTION pg_temp.add_tq() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO hp SELECT 1000 + i, 'tq', sin(7 * i), 5 FROM generate_series(1, 2) i; RETURN NULL; END $$;
CREATE TRIGGER a_add BEFORE TRUNCATE ON hp2 FOR EACH STATEMENT EXECUTE FUNCTION pg_temp.add_tq();
CREATE TRIGGER a_add BEFORE TRUNCATE ON hp3 FOR EACH STATEMENT EXECUTE FUNCTION pg_temp.add_tq();
TRUNCATE hp2;
SELECT * FROM pg_temp.in_step('hp_ls');
CREATE TABLE ha (id int PRIMARY KEY, a float8, y float8);
CREATE TABLE hb (id int, ref int REFERENCES ha, a float8, y float8);
INSERT INTO ha SELECT i, sin(i), cos(i) FROM generate_series(1, 50) i;
INSERT INTO hb SELECT i, i, sin(i), cos(i) FROM generate_series(1, 50) i;
SELECT model FROM unlearn_train('ha_ls', 'ha', 'y', '{a}', loss => 'squared', sigma => 0);
SELECT model FROM unlearn_train('hb_ls', 'hb', 'y', '{a}', loss => 'squared', sigma => 0);
TRUNCATE ha CASCADE;
SELECT model, rows, state FROM unlearn.status WHERE model IN ('ha_ls', 'hb_ls') ORDER BY model;
CREATE TABLE hk (id int, tenant text, a float8, b float8, y float8);
INSERT INTO hk SELECT i, CASE WHEN i <= 30 THEN 'k' ELSE 'j' END, sin(i), cos(1.3 * i), sin(i) + 4 * (i % 2)
FROM generate_series(1, 130) i;
SELECT model FROM unlearn_train('hk_ls', 'hk', 'y', '{a,b}', loss => 'squared', sigma => 0, cohort => 'tenant',
	options => '{"nulls": "skip"}');
CREATE FUNCTION pg_temp.hk_trig() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO hk VALUES (9999, 'k', NULL, NULL, 0);
	DELETE FROM hk WHERE tenant = 'k' AND id <> 1;
	RETURN OLD;
END $$;
CREATE TRIGGER hk_b BEFORE DELETE ON hk FOR EACH ROW WHEN (OLD.id = 100) EXECUTE FUNCTION pg_temp.hk_trig();
DELETE FROM hk WHERE id = 100;
SELECT * FROM pg_temp.in_step('hk_ls');
CREATE COLLATION co_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE hc (id int, region int, tenant text COLLATE co_ci, a float8, y float8) PARTITION BY LIST (region);
CREATE TABLE hc1 PARTITION OF hc FOR VALUES IN (1);
CREATE TABLE hc2 PARTITION OF hc FOR VALUES IN (2);
INSERT INTO hc SELECT i, 1, CASE WHEN i <= 20 THEN 'a' ELSE 'A' END, sin(i), sin(i) + cos(2 * i) FROM generate_series(1, 50) i;
INSERT INTO hc SELECT i, 2, CASE WHEN i <= 130 THEN 'a' ELSE 'B' END, sin(i), sin(i) + cos(2 * i) FROM generate_series(101, 230) i;
SELECT model FROM unlearn_train('hc_ls', 'hc', 'y', '{a}', loss => 'squared', sigma => 0, cohort => 'tenant');
TRUNCATE hc1;
SELECT * FROM pg_temp.in_step('hc_ls');
-- the same cohort column, retyped between two models in one session
CREATE TABLE hr (id int, tenant text, a float8, y float8);
INSERT INTO hr SELECT i, (i % 3)::text, sin(i), cos(i) FROM generate_series(1, 300) i;
SELECT model FROM unlearn_train('hr_text', 'hr', 'y', '{a}', loss => 'squared', sigma => 0, cohort => 'tenant');
DELETE FROM hr WHERE id = 1;
SELECT unlearn_drop('hr_text');
ALTER TABLE hr ALTER COLUMN tenant TYPE int USING tenant::int;
SELECT model FROM unlearn_train('hr_ls', 'hr', 'y', '{a}', loss => 'squared', sigma => 0, cohort => 'tenant');
DELETE FROM hr WHERE tenant = 1;
SELECT * FROM pg_temp.in_step('hr_ls');
SELECT unlearn_drop(model) FROM unlearn.models WHERE model IN ('hp_ls', 'ha_ls', 'hb_ls', 'hk_ls', 'hc_ls', 'hr_ls');
DROP TABLE hp, hb, ha, hk, hc, hr;
DROP COLLATION co_ci;

RESET client_min_messages;
SELECT * FROM results ORDER BY model, statement;
SELECT unlearn_drop('co_ls'), unlearn_drop('co_lg');
SELECT count(*) AS cohorts_left FROM unlearn.cohorts;
DROP TABLE co;
DROP ROLE co_reader;
DROP ROLE co_stranger;
