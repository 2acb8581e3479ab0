-- Asynchronous removal ("removal": "async"): writers queue their changes in
-- unlearn.pending, as for a deferred model, and the model serves the
-- version of its last apply meanwhile (the maintenance worker applies the
-- queue: test/t/012_async.pl; it is off here, so unlearn_apply_pending
-- applies it).
--
-- 1. While changes are queued the model keeps its weights and serves them,
--    to its owner and to a read grantee; unlearn.status shows the queue.
-- 2. ROLLBACK and ROLLBACK TO SAVEPOINT take queued entries back.
-- 3. Random statements, some undone by a savepoint, each followed by an
--    apply: every applied version of the least-squares model equals a
--    refit to 1e-9, and the logistic one is certified.
-- 4. unlearn_wait: without a worker it refuses, naming the fix; it refuses
--    a deferred model, REPEATABLE READ, and a role that may not read the
--    model; an immediate model has nothing to wait for.
-- 5. A row queued while the model released nothing carries only its count;
--    met by an apply after the model became ready (an async apply that
--    retrained it while writers queued), it makes the apply read the table
--    again: the model retrains, and is not quarantined.  The entry is
--    written here by hand, as such a writer would have queued it.
-- 6. A table whose models are all async keeps its row trigger: dropping or
--    disabling it is refused.
\set VERBOSITY default
\set SHOW_CONTEXT never
SET client_min_messages = warning;
CREATE TABLE aq (id int PRIMARY KEY, target float8, p1 float8, p2 float8, p3 float8,
				 p4 float8, p5 float8, p6 float8, p7 float8, p8 float8, three boolean);
INSERT INTO aq SELECT id, label, pixels[20], pixels[21], pixels[27], pixels[28], pixels[36],
	   pixels[37], pixels[43], pixels[44], label = 3
FROM digits WHERE id <= 600;
SELECT model FROM unlearn_train('aq_lsq', 'aq', 'target', '{p1,p2,p3,p4,p5,p6,p7,p8}',
								loss => 'squared', sigma => 0, options => '{"removal": "async"}');
SELECT model FROM unlearn_train('aq_log', 'aq', 'three', '{p1,p2,p3,p4,p5,p6,p7,p8}',
								sigma => 1, options => '{"removal": "async"}');
SELECT model, removal, rows, pending, pending_since, apply_error FROM unlearn.status WHERE model LIKE 'aq\_%' ORDER BY model;

-- least squares equals a refit (same b, Lambda and row map) to 1e-9
-- relative; the logistic model's exact residual is within spent
CREATE FUNCTION pg_temp.applied_version_holds() RETURNS boolean LANGUAGE sql AS $$
	SELECT bool_and(m.rows = (SELECT count(*) FROM aq) AND v.certified AND
					(m.loss <> 'squared' OR v.retrain_distance <=
					 1e-9 * (SELECT sqrt(sum(c ^ 2)) FROM unnest(unlearn_coef(m.model)) c)))
	FROM unlearn.models m, unlearn_verify(m.model) v WHERE m.model LIKE 'aq\_%'
$$;

-- 1.
CREATE TEMP TABLE before AS SELECT model, coef FROM unlearn.models;
DELETE FROM aq WHERE id % 13 = 0;
UPDATE aq SET p1 = p1 + 1 WHERE id % 17 = 0;
INSERT INTO aq SELECT id + 1000, target, p1, p2, p3, p4, p5, p6, p7, p8, three FROM aq WHERE id < 30;
SELECT model, pending, pending_since IS NOT NULL AS since, rows FROM unlearn.status WHERE model LIKE 'aq\_%' ORDER BY model;
SELECT model, m.coef = b.coef AS weights_unchanged FROM unlearn.models m JOIN before b USING (model)
WHERE model LIKE 'aq\_%' ORDER BY model;
-- (a deferred model raises 55000 here)
SELECT unlearn_predict('aq_lsq', ARRAY[1, 2, 3, 4, 5, 6, 7, 8]::float8[]) IS NOT NULL AS serves;
CREATE ROLE aq_reader;
CREATE ROLE aq_stranger;
SELECT unlearn_grant('aq_log', 'aq_reader', 'read');
SET ROLE aq_reader;
SELECT unlearn_predict_class('aq_log', ARRAY[0, 0, 0, 0, 0, 0, 0, 0]::float8[]) IS NOT NULL AS grantee_reads;
SELECT array_agg(model) AS catalog_rows_seen FROM unlearn.models;
SELECT unlearn_apply_pending('aq_log');
RESET ROLE;
SELECT model, rows, pending FROM unlearn_apply_pending('aq_lsq');
SELECT model, rows, pending FROM unlearn_apply_pending('aq_log');
SELECT pg_temp.applied_version_holds();
SELECT operation, rows_removed, rows_added FROM unlearn.ledger WHERE model = 'aq_lsq' ORDER BY id;

-- 2.
BEGIN;
DELETE FROM aq WHERE id < 50;
SELECT count(*) > 0 AS queued FROM unlearn.pending WHERE model LIKE 'aq\_%';
ROLLBACK;
SELECT count(*) AS after_rollback FROM unlearn.pending WHERE model LIKE 'aq\_%';
BEGIN;
DELETE FROM aq WHERE id BETWEEN 50 AND 54;
SAVEPOINT s;
DELETE FROM aq WHERE id BETWEEN 55 AND 90;
UPDATE aq SET target = target + 1 WHERE id BETWEEN 91 AND 95;
ROLLBACK TO SAVEPOINT s;
INSERT INTO aq SELECT id + 2000, target, p1, p2, p3, p4, p5, p6, p7, p8, three FROM aq WHERE id BETWEEN 100 AND 102;
COMMIT;
SELECT model, pending FROM unlearn.status WHERE model LIKE 'aq\_%' ORDER BY model;
SELECT count(*) AS applied FROM unlearn.models m, unlearn_apply_pending(m.model) WHERE m.model LIKE 'aq\_%';
SELECT rows = (SELECT count(*) FROM aq) AS in_step FROM unlearn.models WHERE model LIKE 'aq\_%' ORDER BY model;
SELECT pg_temp.applied_version_holds();

-- 3.
SELECT setseed(0.5);
CREATE TEMP TABLE checks (i int, holds boolean);
DO $$
DECLARE
	i int;
	k int;
	first int;
BEGIN
	FOR i IN 1 .. 25 LOOP
		k := 1 + (random() * 20)::int;
		SELECT min(id) + (random() * 300)::int INTO first FROM aq;
		CASE (random() * 3)::int
			WHEN 0 THEN DELETE FROM aq WHERE id BETWEEN first AND first + k;
			WHEN 1 THEN UPDATE aq SET p2 = p2 + random(), three = NOT three WHERE id BETWEEN first AND first + k;
			ELSE INSERT INTO aq SELECT id + 10000 * i, target + 1, p1, p2, p3, p4, p5, p6, p7, p8, three
				 FROM aq WHERE id BETWEEN first AND first + k AND id < 10000;
		END CASE;
		BEGIN
			DELETE FROM aq WHERE id BETWEEN first + k + 1 AND first + 2 * k;
			IF random() < 0.5 THEN
				RAISE EXCEPTION 'undone';
			END IF;
		EXCEPTION WHEN raise_exception THEN NULL;
		END;
		PERFORM unlearn_apply_pending(model) FROM unlearn.models WHERE model LIKE 'aq\_%';
		INSERT INTO checks SELECT i, pg_temp.applied_version_holds();
	END LOOP;
END $$;
SELECT count(*) AS applied_versions, count(*) FILTER (WHERE holds) AS holding FROM checks;

-- 4.
DELETE FROM aq WHERE id = 200;
SELECT unlearn_wait('aq_lsq');
SELECT model FROM unlearn_train('aq_deferred', 'aq', 'target', '{p1,p2}', loss => 'squared',
								options => '{"removal": "deferred"}');
SELECT unlearn_wait('aq_deferred');
SELECT model FROM unlearn_train('aq_now', 'aq', 'target', '{p1,p2}', loss => 'squared');
SELECT unlearn_wait('aq_now');
SELECT unlearn_wait('aq_lsq', -1);
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT unlearn_wait('aq_lsq');
ROLLBACK;
SET ROLE aq_stranger;
SELECT unlearn_wait('aq_lsq');
SELECT unlearn._wait('aq_lsq', 0);
-- nor can a stranger forge a queue entry, or call the catalog's trigger
INSERT INTO unlearn.pending (model, owner, change, contribution) VALUES ('aq_lsq', 'aq_stranger', -1, NULL);
SELECT unlearn._catalog_written();
RESET ROLE;

-- 5.
SELECT count(*) AS applied FROM unlearn.models m, unlearn_apply_pending(m.model) WHERE m.model = 'aq_lsq';
INSERT INTO unlearn.pending (model, owner, change, contribution)
SELECT 'aq_lsq', owner, -1, '\x00000000000000000000000000000000'::bytea FROM unlearn.models WHERE model = 'aq_lsq';
SELECT model, rows, pending, state FROM unlearn_apply_pending('aq_lsq');
SELECT operation, retrained FROM unlearn.ledger WHERE model = 'aq_lsq' ORDER BY id DESC LIMIT 1;
SELECT rows = (SELECT count(*) FROM aq) AS in_step, certified, retrain_distance < 1e-9 AS refit
FROM unlearn.models, unlearn_verify('aq_lsq') WHERE model = 'aq_lsq';

-- 6. a table whose models are all async keeps its row trigger
CREATE TABLE aq_only AS SELECT id, target, p1, p2 FROM aq;
SELECT model FROM unlearn_train('aq_only', 'aq_only', 'target', '{p1,p2}', loss => 'squared',
								options => '{"removal": "async"}');
DROP TRIGGER unlearn_after_row ON aq_only;
ALTER TABLE aq_only DISABLE TRIGGER unlearn_after_row;
SELECT unlearn_drop('aq_only');
DROP TABLE aq_only;

RESET client_min_messages;
SELECT unlearn_drop(model) FROM unlearn.models WHERE model LIKE 'aq\_%' ORDER BY model;
DROP TABLE aq;
DROP ROLE aq_reader, aq_stranger;
