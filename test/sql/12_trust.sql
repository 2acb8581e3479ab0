-- Hostile roles in one database: the catalog is the extension's, rows are
-- read in binary without user-defined code, labels mean the same in every
-- session, a table owner can always drop models on its table, erasure is
-- never refused, and stored values are checked (XX001, never a crash).
-- Models use sigma 100 (and the victim's, on its small table, lambda 0.1):
-- a budget far from its 90% NOTICE, whatever the noise.
\set SHOW_CONTEXT never
CREATE ROLE tr_victim;
CREATE ROLE tr_attacker;
CREATE TABLE tr_secret (id int PRIMARY KEY, x1 float8, x2 float8, y int);
INSERT INTO tr_secret SELECT i, (i * 37 % 101) / 10.0, (i * 53 % 97) / 10.0, i % 2 FROM generate_series(1, 200) i;
ALTER TABLE tr_secret OWNER TO tr_victim;
CREATE TABLE tr_own (id int PRIMARY KEY, x1 float8, x2 float8, y int);
INSERT INTO tr_own SELECT i, i % 7, i % 5, i % 2 FROM generate_series(1, 100) i;
ALTER TABLE tr_own OWNER TO tr_attacker;
GRANT CREATE ON SCHEMA public TO tr_attacker;
SET ROLE tr_victim;
SELECT model FROM unlearn_train('tr_victim_model', 'tr_secret', 'y', '{x1,x2}', sigma => 100, lambda => 0.1);
RESET ROLE;
SET ROLE tr_attacker;
SELECT model FROM unlearn_train('tr_attacker_model', 'tr_own', 'y', '{x1,x2}', sigma => 100);

-- 1. pointing its own model at another role's table, or editing its
-- definition, dimensions or classes: no role but the extension writes
UPDATE unlearn.models SET source = 'tr_secret'::regclass WHERE model = 'tr_attacker_model';
UPDATE unlearn.models SET features = '{x1,x2,x1,x2,x1}' WHERE model = 'tr_attacker_model';
UPDATE unlearn.models SET classes = '{0}' WHERE model = 'tr_attacker_model';
DELETE FROM unlearn.model_state WHERE model = 'tr_attacker_model';
-- 2. a forged or erased audit trail
INSERT INTO unlearn.ledger (model, owner, operation, spent) VALUES ('tr_victim_model', 'tr_victim', 'forged', 0);
DELETE FROM unlearn.ledger WHERE model = 'tr_attacker_model';
-- 3. blocking the victim's writers with a row lock on the catalog
SELECT model FROM unlearn.models WHERE model = 'tr_victim_model' FOR UPDATE;
-- 4. the victim's state stays invisible; its own is visible
SELECT count(*) AS visible_states FROM unlearn.model_state;
-- 5. attaching the maintenance function to a table of its own
CREATE TRIGGER sneak AFTER DELETE ON tr_own REFERENCING OLD TABLE AS o
	FOR EACH STATEMENT EXECUTE FUNCTION unlearn._maintain();
-- 6. training on a table it may read but not attach triggers to
RESET ROLE;
GRANT SELECT ON tr_secret TO tr_attacker;
SET ROLE tr_attacker;
SELECT unlearn_train('tr_steal', 'tr_secret', 'y', '{x1,x2}');
-- 7. a label type it owns, with a cast to text that would run as whoever
-- maintains the model: such labels are refused, not cast
CREATE TYPE tr_mood AS ENUM ('sad', 'happy');
CREATE TABLE tr_enum (id int, x1 float8, m tr_mood);
INSERT INTO tr_enum SELECT i, i, CASE WHEN i % 2 = 0 THEN 'sad' ELSE 'happy' END::tr_mood FROM generate_series(1, 20) i;
CREATE FUNCTION tr_evil(tr_mood) RETURNS text LANGUAGE sql AS $$ SELECT 'x' $$;
CREATE CAST (tr_mood AS text) WITH FUNCTION tr_evil(tr_mood);
SELECT unlearn_train('tr_enum', 'tr_enum', 'm', '{x1}');
CREATE TABLE tr_dates (id int, x1 float8, d date);
SELECT unlearn_train('tr_dates', 'tr_dates', 'd', '{x1}');
-- 8. a temporary table would leave an orphan model behind
CREATE TEMP TABLE tr_tmp AS SELECT * FROM tr_own;
SELECT unlearn_train('tr_tmp', 'tr_tmp', 'y', '{x1,x2}');
RESET ROLE;
-- unrelated DDL by any role is never blocked by a model
SET ROLE tr_attacker;
CREATE TABLE tr_scratch (a int);
DROP TABLE tr_scratch;
RESET ROLE;

-- 9. a model owner who does not own the table cannot lock its owner out:
-- the table owner drops the squatting model
GRANT TRIGGER ON tr_secret TO tr_attacker;
SET ROLE tr_attacker;
SELECT model FROM unlearn_train('tr_squat', 'tr_secret', 'y', '{x1,x2}', sigma => 1e-6, options => '{"on_exhausted": "suspend"}');
RESET ROLE;
-- (the table owner holds no grant on tr_squat: the notice that it ran out
-- of budget goes to the server log only)
SET ROLE tr_victim;
\set VERBOSITY terse
DELETE FROM tr_secret WHERE id <= 3;
\set VERBOSITY default
RESET ROLE;
SELECT model, state FROM unlearn.models WHERE model IN ('tr_squat', 'tr_victim_model') ORDER BY model;
SET ROLE tr_victim;
SELECT unlearn_drop('tr_squat');
RESET ROLE;
-- rights revoked after training also stop a retrain
SET ROLE tr_attacker;
SELECT model FROM unlearn_train('tr_lease', 'tr_secret', 'y', '{x1,x2}', sigma => 100);
RESET ROLE;
REVOKE TRIGGER ON tr_secret FROM tr_attacker;
SET ROLE tr_attacker;
SELECT unlearn_retrain('tr_lease');
RESET ROLE;
-- and a model whose owner lost SELECT stops moving with new rows: the
-- owner reads its factor, which every row would move (the warning goes to
-- the server log: the inserting role may not read the model)
REVOKE SELECT ON tr_secret FROM tr_attacker;
SET ROLE tr_victim;
\set VERBOSITY terse
INSERT INTO tr_secret VALUES (1001, 3.3, 4.4, 1);
\set VERBOSITY default
RESET ROLE;
SET ROLE tr_attacker;
SELECT m.state, m.rows = 198 AS counts_rows, count(s.model) AS state_rows
FROM unlearn.models m LEFT JOIN unlearn.model_state s USING (model)
WHERE m.model = 'tr_lease' GROUP BY m.state, m.rows;
RESET ROLE;

-- 10. session settings do not change what a label or a target is
CREATE TABLE tr_float (id int, x1 float8, x2 float8, y float8);
INSERT INTO tr_float SELECT i, i % 7, i % 5, CASE WHEN i % 3 = 0 THEN 0.1 ELSE 1e-7 END FROM generate_series(1, 60) i;
SELECT model FROM unlearn_train('tr_float', 'tr_float', 'y', '{x1,x2}', sigma => 100);
SELECT classes FROM unlearn.models WHERE model = 'tr_float';
-- a NaN label of a float column is a class of its own, sorted last
CREATE TABLE tr_nan AS SELECT i AS id, (i % 7)::float8 AS x1,
	CASE i % 3 WHEN 0 THEN 'NaN'::float8 WHEN 1 THEN 0.1 ELSE 1e-7 END AS y FROM generate_series(1, 60) i;
SELECT model FROM unlearn_train('tr_nan', 'tr_nan', 'y', '{x1}', sigma => 100);
SELECT classes FROM unlearn.models WHERE model = 'tr_nan';
SET extra_float_digits = -15;
DELETE FROM tr_float WHERE id <= 5;
INSERT INTO tr_float VALUES (100, 1, 1, 1e-7);
RESET extra_float_digits;
SELECT rows = (SELECT count(*) FROM tr_float) AS in_step FROM unlearn.models WHERE model = 'tr_float';
SELECT model FROM unlearn_train('tr_lsq', 'tr_float', 'y', '{x1,x2}', loss => 'squared', sigma => 0);
SET extra_float_digits = -15;
DELETE FROM tr_float WHERE id BETWEEN 6 AND 20;
RESET extra_float_digits;
SELECT v.retrain_distance <= 1e-9 * (SELECT sqrt(sum(c ^ 2)) FROM unnest(unlearn_coef('tr_lsq')) c) AS exact
FROM unlearn_verify('tr_lsq') v;

-- 11. erasure is never refused: down to fewer rows than weights, and to none
SELECT model FROM unlearn_train('tr_exact', 'tr_float', 'y', '{x1,x2}', sigma => 100, options => '{"bound": "exact"}');
DELETE FROM tr_float WHERE id > 22;
SELECT model, state, rows, coef IS NULL AS withheld FROM unlearn.models
WHERE source = 'tr_float'::regclass ORDER BY model;
SELECT count(*) AS state_rows FROM unlearn.model_state s JOIN unlearn.models m USING (model)
WHERE m.source = 'tr_float'::regclass;
SELECT unlearn_predict('tr_exact', ARRAY[1, 1]::float8[]);
DELETE FROM tr_float;
SELECT model, state, rows FROM unlearn.models WHERE source = 'tr_float'::regclass ORDER BY model;
-- inserts bring the models back
INSERT INTO tr_float SELECT i, i % 7, i % 5, CASE WHEN i % 3 = 0 THEN 0.1 ELSE 1e-7 END FROM generate_series(1, 30) i;
SELECT model, state, rows FROM unlearn.models WHERE source = 'tr_float'::regclass ORDER BY model;
SELECT unlearn_predict('tr_exact', ARRAY[1, 1]::float8[]) BETWEEN 0 AND 1 AS predicts;

-- 12. corrupted stored values (by a superuser or a damaged page) give
-- XX001 naming the model, never a crash or an out-of-bounds read
-- the catalog has no CHECK constraints: what they refused is refused when read
BEGIN;
UPDATE unlearn.models SET state = 'bogus' WHERE model = 'tr_victim_model';
SELECT unlearn_coef('tr_victim_model');
ROLLBACK;
BEGIN;
UPDATE unlearn.models SET dims = -3 WHERE model = 'tr_victim_model';
SELECT unlearn_coef('tr_victim_model');
ROLLBACK;
BEGIN;
UPDATE unlearn.models SET scale = 0 WHERE model = 'tr_victim_model';
SELECT unlearn_coef('tr_victim_model');
ROLLBACK;
BEGIN;
UPDATE unlearn.models SET spread_steps = 0 WHERE model = 'tr_victim_model';
SELECT unlearn_coef('tr_victim_model');
ROLLBACK;
BEGIN;
UPDATE unlearn.models SET given_parameters = 9 WHERE model = 'tr_victim_model';
SELECT unlearn_coef('tr_victim_model');
ROLLBACK;
BEGIN;
UPDATE unlearn.models SET nats_spent = -1 WHERE model = 'tr_victim_model';
SELECT unlearn_coef('tr_victim_model');
ROLLBACK;
-- an unknown removal is an immediate model's: the next write quarantines it
BEGIN;
UPDATE unlearn.models SET removal = 'bogus' WHERE model = 'tr_victim_model';
\set VERBOSITY terse
DELETE FROM tr_secret WHERE id = 9;
\set VERBOSITY default
SELECT state FROM unlearn.models WHERE model = 'tr_victim_model';
ROLLBACK;
UPDATE unlearn.models SET classes = '{0}' WHERE model = 'tr_victim_model';
SELECT unlearn_predict_class('tr_victim_model', ARRAY[1, 1]::float8[]);
UPDATE unlearn.models SET classes = NULL WHERE model = 'tr_victim_model';
SELECT unlearn_predict('tr_victim_model', ARRAY[1, 1]::float8[]);
UPDATE unlearn.models SET classes = '{0,1}', coef = '{1,2}' WHERE model = 'tr_victim_model';
SELECT unlearn_coef('tr_victim_model');
UPDATE unlearn.models SET coef = '{1,2,NaN}' WHERE model = 'tr_victim_model';
SELECT unlearn_coef('tr_victim_model');
-- a change of the table goes on; the corrupt model withholds its weights
\set VERBOSITY terse
DELETE FROM tr_secret WHERE id = 9;
\set VERBOSITY default
SELECT state, coef IS NULL AS withheld FROM unlearn.models WHERE model = 'tr_victim_model';
SELECT operation FROM unlearn.ledger WHERE model = 'tr_victim_model' ORDER BY id DESC LIMIT 1;
-- replacing (or dropping) a corrupt model works
SELECT model FROM unlearn_train('tr_victim_model', 'tr_secret', 'y', '{x1,x2}', sigma => 100, replace => true);
UPDATE unlearn.model_state SET noise = '\x00' WHERE model = 'tr_victim_model';
SELECT certified FROM unlearn_verify('tr_victim_model');
-- rows per class that do not add up to the rows, or a class without rows
SELECT model FROM unlearn_train('tr_victim_model', 'tr_secret', 'y', '{x1,x2}', sigma => 100, replace => true);
UPDATE unlearn.model_state SET class_rows = '{1,1}' WHERE model = 'tr_victim_model';
SELECT certified FROM unlearn_verify('tr_victim_model');
UPDATE unlearn.model_state SET class_rows = ARRAY[0, (SELECT rows FROM unlearn.models WHERE model = 'tr_victim_model')]
WHERE model = 'tr_victim_model';
SELECT certified FROM unlearn_verify('tr_victim_model');
-- a ready model without its state row: a change goes through and
-- quarantines it
SELECT model FROM unlearn_train('tr_victim_model', 'tr_secret', 'y', '{x1,x2}', sigma => 100, replace => true);
DELETE FROM unlearn.model_state WHERE model = 'tr_victim_model';
\set VERBOSITY terse
DELETE FROM tr_secret WHERE id = 10;
\set VERBOSITY default
SELECT state, coef IS NULL AS withheld FROM unlearn.models
WHERE model = 'tr_victim_model';

-- 14. an index predicate calling a function of the table's owner: planning
-- a read of the rows evaluates it (in a new session, whose relation cache
-- is empty), and it must run as the table's owner, never as the
-- extension's superuser: at training, and at a rebuild inside another
-- role's DELETE
SET ROLE tr_attacker;
CREATE TABLE tr_pred (id int PRIMARY KEY, x1 float8, x2 float8, y int);
INSERT INTO tr_pred SELECT i, i % 7, i % 5, i % 2 FROM generate_series(1, 100) i;
CREATE FUNCTION tr_probe(int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
		RAISE EXCEPTION 'tr_probe ran as a superuser';
	END IF;
	RETURN true;
END $$;
CREATE INDEX tr_pred_probe ON tr_pred (x1) WHERE tr_probe(1);
GRANT SELECT, DELETE ON tr_pred TO tr_victim;
RESET ROLE;
\c
SET ROLE tr_attacker;
SELECT model FROM unlearn_train('tr_pred_model', 'tr_pred', 'y', '{x1,x2}', sigma => 100);
SELECT unlearn_evict('tr_pred_model');
RESET ROLE;
\c
SET ROLE tr_victim;
DELETE FROM tr_pred WHERE id = 1;
RESET ROLE;
SELECT operation FROM unlearn.ledger WHERE model = 'tr_pred_model' ORDER BY id;

-- a model whose owner lost SELECT stays suspended when the table owner
-- adds a partition: the repartition counts the rows and trains nothing
GRANT CREATE ON SCHEMA public TO tr_victim;
SET ROLE tr_victim;
CREATE TABLE tr_parts (id int, y boolean, x float8[]) PARTITION BY RANGE (id);
CREATE TABLE tr_parts_1 PARTITION OF tr_parts FOR VALUES FROM (0) TO (10000);
INSERT INTO tr_parts SELECT g, g % 3 = 0, ARRAY[sin(g), cos(g * 1.7)] FROM generate_series(1, 300) g;
GRANT SELECT, DELETE, TRIGGER ON tr_parts TO tr_attacker;
RESET ROLE;
SET ROLE tr_attacker;
SELECT model FROM unlearn_train('tr_parts_model', 'tr_parts', 'y', '{x}', sigma => 100);
RESET ROLE;
SET ROLE tr_victim;
REVOKE SELECT ON tr_parts FROM tr_attacker;
DELETE FROM tr_parts WHERE id = 1;
CREATE TABLE tr_parts_2 PARTITION OF tr_parts FOR VALUES FROM (10000) TO (20000);
INSERT INTO tr_parts_2 SELECT g, g % 2 = 0, ARRAY[sin(g), cos(g)] FROM generate_series(10000, 10009) g;
RESET ROLE;
SELECT state, rows, coef IS NULL AS no_weights FROM unlearn.models WHERE model = 'tr_parts_model';
SELECT operation, retrained FROM unlearn.ledger WHERE model = 'tr_parts_model' ORDER BY id;
DROP TABLE tr_parts;
REVOKE CREATE ON SCHEMA public FROM tr_victim;

SELECT unlearn_drop(model) FROM unlearn.models WHERE model LIKE 'tr\_%' ORDER BY model;
DROP TABLE tr_secret, tr_own, tr_enum, tr_dates, tr_float, tr_nan, tr_pred;
DROP FUNCTION tr_probe(int);
DROP CAST (tr_mood AS text);
DROP FUNCTION tr_evil(tr_mood);
DROP TYPE tr_mood;
REVOKE CREATE ON SCHEMA public FROM tr_attacker;
DROP ROLE tr_victim, tr_attacker;
