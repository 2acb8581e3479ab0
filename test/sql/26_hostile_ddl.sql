-- A table owner who renames or impersonates the extension's triggers, and a
-- model owner who lost its rights on the table: neither can stop erasure on
-- that table, nor DDL anywhere else.
\set VERBOSITY default
\set SHOW_CONTEXT never
CREATE ROLE hd_owner;
CREATE ROLE hd_modeler;
GRANT CREATE ON SCHEMA public TO hd_owner;
SET ROLE hd_owner;
CREATE TABLE hd (id int PRIMARY KEY, y boolean, a float8, b float8);
INSERT INTO hd SELECT g, g % 3 = 0, sin(g), cos(g) FROM generate_series(1, 300) g;
GRANT SELECT, TRIGGER ON hd TO hd_modeler;
CREATE FUNCTION hd_noop() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NULL; END';
RESET ROLE;
SET ROLE hd_modeler;
SELECT model FROM unlearn_train('hd_m', 'hd', 'y', '{a,b}', sigma => 5);
RESET ROLE;

-- 1. the table owner's attack of the issue: rename the DELETE trigger and
-- put its own under the name; both are refused at the DDL
SET ROLE hd_owner;
ALTER TRIGGER unlearn_after_delete ON hd RENAME TO parked;
CREATE TRIGGER unlearn_after_row AFTER DELETE ON hd FOR EACH STATEMENT EXECUTE FUNCTION hd_noop();
DROP TRIGGER unlearn_after_delete ON hd;
-- its own triggers under its own names are its business
CREATE TRIGGER mine AFTER DELETE ON hd FOR EACH STATEMENT EXECUTE FUNCTION hd_noop();
ALTER TRIGGER mine ON hd RENAME TO mine2;
DROP TRIGGER mine2 ON hd;
-- erasure goes on, and the model follows it
DELETE FROM hd WHERE id <= 3;
RESET ROLE;
SELECT rows = (SELECT count(*) FROM hd) AS in_step FROM unlearn.models WHERE model = 'hd_m';

-- 2. a table whose triggers were broken (here by a superuser's catalog
-- edit) stops no DDL on other objects: the check looks at the tables the
-- DDL touched only
BEGIN;
UPDATE pg_catalog.pg_trigger SET tgname = 'parked'
WHERE tgrelid = 'hd'::regclass AND tgname = 'unlearn_after_delete';
CREATE TABLE hd_other (x int);
DROP TABLE hd_other;
CREATE FUNCTION hd_f() RETURNS int LANGUAGE sql AS 'SELECT 1';
DROP FUNCTION hd_f();
ROLLBACK;

-- 3. a model owner who may no longer read the table cannot lock it (and
-- hold erasure up in an open transaction): its table's owner acts instead
SET ROLE hd_owner;
REVOKE ALL ON hd FROM hd_modeler;
RESET ROLE;
SET ROLE hd_modeler;
SELECT unlearn_drop('hd_m');
RESET ROLE;
SET ROLE hd_owner;
SELECT unlearn_drop('hd_m');
RESET ROLE;
SELECT count(*) AS models FROM unlearn.models WHERE model = 'hd_m';

DROP TABLE hd;
DROP FUNCTION hd_noop();
REVOKE CREATE ON SCHEMA public FROM hd_owner;
DELETE FROM unlearn.ledger WHERE model = 'hd_m';
DROP ROLE hd_owner;
DROP ROLE hd_modeler;

-- 4. a model trained on a table while a statement of the session is changing
-- it would be maintained by AFTER triggers whose BEFORE trigger never locked
-- it: refused, and the statement and its model stay in step
CREATE TABLE hd_mid AS SELECT id, is_one, pixels FROM ones_sevens;
SELECT count(*) FROM unlearn_train('hd_mid', 'hd_mid', 'is_one', '{pixels}');
CREATE FUNCTION pg_temp.train_mid() RETURNS bool LANGUAGE sql AS
$$ SELECT count(*) > 0 FROM unlearn_train('hd_mid2', 'hd_mid', 'is_one', '{pixels}') $$;
DELETE FROM hd_mid WHERE id = (SELECT min(id) FROM hd_mid) AND pg_temp.train_mid();
SELECT count(*) AS models FROM unlearn.models WHERE model LIKE 'hd_mid%';
DELETE FROM hd_mid WHERE id = (SELECT min(id) FROM hd_mid);
SELECT rows = (SELECT count(*) FROM hd_mid) AS in_step FROM unlearn.models WHERE model = 'hd_mid';
-- nor may a statement retrain its model, or drop it and train its name on
-- another table (whose model would get this statement's rows), nor train a
-- model on a table whose models are all queued (no statement trigger there)
CREATE TABLE hd_other AS SELECT * FROM hd_mid;
CREATE FUNCTION pg_temp.retrain_mid(i int) RETURNS int LANGUAGE plpgsql AS
$$ BEGIN PERFORM unlearn_retrain('hd_mid'); RETURN i; END $$;
CREATE FUNCTION pg_temp.move_mid(i int) RETURNS int LANGUAGE plpgsql AS
$$ BEGIN PERFORM unlearn_drop('hd_mid');
   PERFORM unlearn_train('hd_mid', 'hd_other', 'is_one', '{pixels}'); RETURN i; END $$;
INSERT INTO hd_mid SELECT pg_temp.retrain_mid(id + 10000), is_one, pixels FROM hd_mid WHERE id < 20;
INSERT INTO hd_mid SELECT pg_temp.move_mid(id + 10000), is_one, pixels FROM hd_mid WHERE id < 20;
SELECT model, source, rows = (SELECT count(*) FROM hd_mid) AS in_step, retrains
FROM unlearn.models WHERE model LIKE 'hd_mid%';
SELECT count(*) FROM unlearn_train('hd_queued', 'hd_other', 'is_one', '{pixels}',
								   options => '{"removal": "deferred"}');
-- (at the third row, once the statement has queued two: a model trained
-- before the statement changes a row follows all of its rows)
CREATE FUNCTION pg_temp.train_queued(i int) RETURNS int LANGUAGE plpgsql AS
$$ BEGIN IF i = 20003 THEN
	PERFORM unlearn_train('hd_queued2', 'hd_other', 'is_one', '{pixels}',
						  options => '{"removal": "deferred"}');
   END IF; RETURN i; END $$;
INSERT INTO hd_other SELECT pg_temp.train_queued(g), true, (SELECT pixels FROM hd_other LIMIT 1)
FROM generate_series(20001, 20005) g;
SELECT count(*) AS models FROM unlearn.models WHERE model LIKE 'hd_queued%';
-- a deferred constraint's pending check is no statement in progress: a
-- DELETE, then the apply, in one transaction
ALTER TABLE hd_other ADD PRIMARY KEY (id);
CREATE TABLE hd_child (ref int REFERENCES hd_other (id) DEFERRABLE INITIALLY DEFERRED);
BEGIN;
DELETE FROM hd_other WHERE id = 5;
SELECT model, pending, rows = (SELECT count(*) FROM hd_other) AS in_step
FROM unlearn_apply_pending('hd_queued');
COMMIT;
-- COPY, which the executor's hooks do not see, is a statement changing it
-- too, deferrable constraints or not
CREATE FUNCTION pg_temp.retrain_copy() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN IF NEW.id = 30003 THEN PERFORM unlearn_retrain('hd_queued'); END IF; RETURN NEW; END $$;
CREATE TRIGGER hd_copy_mid BEFORE INSERT ON hd_other FOR EACH ROW EXECUTE FUNCTION pg_temp.retrain_copy();
COPY hd_other (id, is_one, pixels) FROM STDIN;
30001	t	{0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0}
30002	f	{0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0}
30003	t	{0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0}
30004	f	{0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0}
\.
SELECT model, pending, rows = (SELECT count(*) FROM hd_other) AS in_step
FROM unlearn_apply_pending('hd_queued');
SELECT unlearn_drop('hd_queued');
SELECT unlearn_drop('hd_mid');
DROP TABLE hd_mid, hd_other, hd_child;

-- the same COPY run again inside itself (a cached plan, the same statement)
-- and failing there leaves the outer COPY recorded
CREATE TABLE hd_copy AS SELECT id, is_one, pixels FROM ones_sevens;
SELECT count(*) FROM unlearn_train('hd_copy', 'hd_copy', 'is_one', '{pixels}',
								   options => '{"removal": "deferred"}');
CREATE FUNCTION pg_temp.copy_two() RETURNS void LANGUAGE plpgsql AS
$$ BEGIN COPY hd_copy FROM PROGRAM 'printf "500\tt\t{%s}\n501\tt\t{%s}\n" $(seq -s, 64) $(seq -s, 64)'; END $$;
CREATE FUNCTION pg_temp.copy_mid() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.id = 500 AND current_setting('hd.depth', true) IS DISTINCT FROM '1' THEN
		PERFORM set_config('hd.depth', '1', true);
		BEGIN
			PERFORM pg_temp.copy_two();
		EXCEPTION WHEN raise_exception THEN
			NULL;
		END;
		PERFORM set_config('hd.depth', '0', true);
	ELSIF NEW.id = 500 THEN
		RAISE EXCEPTION 'the inner COPY fails';
	ELSIF NEW.id = 501 THEN
		PERFORM unlearn_retrain('hd_copy');
	END IF;
	RETURN NEW;
END $$;
CREATE TRIGGER hd_copy_mid BEFORE INSERT ON hd_copy FOR EACH ROW EXECUTE FUNCTION pg_temp.copy_mid();
SELECT pg_temp.copy_two();
SELECT model, pending, rows = (SELECT count(*) FROM hd_copy) AS in_step
FROM unlearn_apply_pending('hd_copy');
SELECT unlearn_drop('hd_copy');
DROP TABLE hd_copy;

-- a partition dropped or truncated inside a statement writing its tree
-- would retrain the models on rows the statement then applies again
CREATE TABLE hd_parts (id int, is_one bool, pixels float8[]) PARTITION BY RANGE (id);
CREATE TABLE hd_parts_1 PARTITION OF hd_parts FOR VALUES FROM (0) TO (100000);
CREATE TABLE hd_parts_2 PARTITION OF hd_parts FOR VALUES FROM (100000) TO (200000);
INSERT INTO hd_parts SELECT id, is_one, pixels FROM ones_sevens;
INSERT INTO hd_parts SELECT id + 100000, is_one, pixels FROM ones_sevens WHERE id < 50;
SELECT count(*) FROM unlearn_train('hd_parts', 'hd_parts', 'is_one', '{pixels}');
CREATE FUNCTION pg_temp.drop_part(i int) RETURNS int LANGUAGE plpgsql AS
$$ BEGIN IF i = 50003 THEN DROP TABLE hd_parts_2; END IF; RETURN i; END $$;
CREATE FUNCTION pg_temp.truncate_part(i int) RETURNS int LANGUAGE plpgsql AS
$$ BEGIN IF i = 50003 THEN TRUNCATE hd_parts_2; END IF; RETURN i; END $$;
INSERT INTO hd_parts SELECT pg_temp.drop_part(g), true, (SELECT pixels FROM ones_sevens LIMIT 1)
FROM generate_series(50001, 50005) g;
INSERT INTO hd_parts SELECT pg_temp.truncate_part(g), true, (SELECT pixels FROM ones_sevens LIMIT 1)
FROM generate_series(50001, 50005) g;
DROP TABLE hd_parts_2;
SELECT rows = (SELECT count(*) FROM hd_parts) AS in_step, retrains
FROM unlearn.models WHERE model = 'hd_parts';
SELECT unlearn_drop('hd_parts');
DROP TABLE hd_parts;
