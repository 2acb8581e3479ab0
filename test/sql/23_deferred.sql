-- Deferred removal ("removal": "deferred"): the row trigger queues every
-- changed row in unlearn.pending, the model withholds its weights while the
-- queue is not empty, and unlearn_apply_pending applies the queue as one
-- statement.  Least squares equals a refit after every DML form; a logistic
-- model stays certified against the exact residual; ROLLBACK takes queued
-- rows back; a retrain or a drop empties the queue; strangers see nothing.
\set VERBOSITY default
\set SHOW_CONTEXT never
CREATE FUNCTION pg_temp.max_diff(a float8[], b float8[]) RETURNS float8 LANGUAGE sql AS $$
	SELECT max(abs(x - y)) FROM unnest(a, b) u(x, y)
$$;

-- digits: a regression target and eight pixels, with a key for upserts
CREATE TABLE dq (id int PRIMARY KEY, target float8, p1 float8, p2 float8, p3 float8,
				 p4 float8, p5 float8, p6 float8, p7 float8, p8 float8, three boolean);
INSERT INTO dq SELECT id, label, pixels[20], pixels[21], pixels[27], pixels[28], pixels[36],
	   pixels[37], pixels[43], pixels[44], label = 3
FROM digits WHERE id <= 600;

-- bad input
SELECT model FROM unlearn_train('dq_bad', 'dq', 'target', '{p1,p2}', loss => 'squared', options => '{"removal": "later"}');
SELECT model FROM unlearn_train('dq_bad', 'dq', 'target', '{p1,p2}', loss => 'squared', options => '{"removal": null}');

SELECT model FROM unlearn_train('dq_lsq', 'dq', 'target',
	'{p1,p2,p3,p4,p5,p6,p7,p8}', loss => 'squared', sigma => 0, options => '{"preprocess": "none", "removal": "deferred"}');
SELECT model, rows, removal, pending FROM unlearn.status WHERE model = 'dq_lsq';
SELECT model FROM unlearn_train('dq_log', 'dq', 'three',
	'{p1,p2,p3,p4,p5,p6,p7,p8}', sigma => 1, options => '{"preprocess": "none", "removal": "deferred"}');
SELECT model, rows, removal, pending FROM unlearn.status WHERE model = 'dq_log';
-- an immediate model on the same table keeps applying at once
SELECT model FROM unlearn_train('dq_now', 'dq', 'target',
	'{p1,p2,p3,p4,p5,p6,p7,p8}', loss => 'squared', sigma => 0, options => '{"preprocess": "none"}');
SELECT model, rows, removal, pending FROM unlearn.status WHERE model = 'dq_now';
SELECT tgname, tgenabled, tgtype & 1 = 1 AS for_each_row FROM pg_trigger
WHERE tgrelid = 'dq'::regclass ORDER BY tgname;
SELECT unlearn_apply_pending('dq_now');

-- every DML form queues its rows: DELETE, UPDATE of a feature, of the label,
-- of nothing the models read, INSERT, upsert, MERGE, a writable CTE, COPY
DELETE FROM dq WHERE id % 17 = 0;
UPDATE dq SET p3 = p3 + 1 WHERE id % 23 = 0;
UPDATE dq SET target = 9 - target, three = NOT three WHERE id % 29 = 0;
UPDATE dq SET p1 = p1 WHERE id % 31 = 0;
INSERT INTO dq SELECT id + 1000, label, pixels[20], pixels[21], pixels[27], pixels[28],
	   pixels[36], pixels[37], pixels[43], pixels[44], label = 3
FROM digits WHERE id BETWEEN 601 AND 640;
INSERT INTO dq SELECT id, 1, 2, 3, 4, 5, 6, 7, 8, 9, false FROM generate_series(1, 10) id
ON CONFLICT (id) DO UPDATE SET p8 = excluded.p8;
MERGE INTO dq USING (SELECT id FROM generate_series(11, 30) id) s ON dq.id = s.id
WHEN MATCHED AND s.id % 2 = 0 THEN DELETE
WHEN MATCHED THEN UPDATE SET p2 = dq.p2 + 2;
WITH gone AS (DELETE FROM dq WHERE id BETWEEN 31 AND 40 RETURNING *)
INSERT INTO dq SELECT id + 5000, target, p1, p2, p3, p4, p5, p6, p7, p8, three FROM gone WHERE id % 3 = 0;
COPY dq FROM stdin;
7001	4	1	2	3	4	5	6	7	8	f
7002	3	8	7	6	5	4	3	2	1	t
\.
SELECT model, rows, pending FROM unlearn.status WHERE model LIKE 'dq%' ORDER BY model;
SELECT change, count(*), count(contribution) AS decoded FROM unlearn.pending
WHERE model = 'dq_lsq' GROUP BY change ORDER BY change;

-- while changes are queued, the model withholds its weights
SELECT unlearn_predict('dq_lsq', '{1,2,3,4,5,6,7,8}');
SELECT unlearn_coef('dq_log');
SELECT count(*) FROM unlearn_score('dq_lsq');

-- ROLLBACK takes queued rows back, with their table rows
BEGIN;
DELETE FROM dq WHERE id BETWEEN 100 AND 150;
SAVEPOINT s;
DELETE FROM dq WHERE id BETWEEN 151 AND 160;
ROLLBACK TO SAVEPOINT s;
SELECT pending FROM unlearn.status WHERE model = 'dq_lsq';
ROLLBACK;
SELECT pending FROM unlearn.status WHERE model = 'dq_lsq';

-- apply: one ledger line each, the queue emptied, the model equal to a
-- refit (least squares) and to the immediate model, and certified
SELECT model, rows = (SELECT count(*) FROM dq) AS rows_match, pending, state
FROM unlearn_apply_pending('dq_lsq');
SELECT model, rows = (SELECT count(*) FROM dq) AS rows_match, pending, state
FROM unlearn_apply_pending('dq_log');
SELECT operation, rows_removed, rows_added, retrained FROM unlearn_ledger('dq_lsq') ORDER BY id;
SELECT count(*) AS left_in_queue FROM unlearn.pending;
-- the refit uses the same Lambda: lambda * rows = the frozen Lambda
SELECT reg / rows AS refit_lambda FROM unlearn.models WHERE model = 'dq_lsq' \gset
SELECT model FROM unlearn_train('dq_refit', 'dq', 'target', '{p1,p2,p3,p4,p5,p6,p7,p8}',
	loss => 'squared', lambda => :refit_lambda, sigma => 0, options => '{"preprocess": "none"}');
SELECT count(DISTINCT scale) AS one_row_map FROM unlearn.models WHERE model IN ('dq_lsq', 'dq_refit');
SELECT pg_temp.max_diff(unlearn_coef('dq_lsq'), unlearn_coef('dq_refit'))
	   / (SELECT max(abs(v)) FROM unnest(unlearn_coef('dq_refit')) v) < 1e-9 AS equals_refit,
	   pg_temp.max_diff(unlearn_coef('dq_lsq'), unlearn_coef('dq_now')) < 1e-9 AS equals_immediate;
SELECT certified, residual <= spent AS within_spent FROM unlearn_verify('dq_log');
SELECT unlearn_drop('dq_refit');
-- an empty queue applies nothing and writes no ledger line
SELECT pending FROM unlearn_apply_pending('dq_lsq');
SELECT count(*) FROM unlearn_ledger('dq_lsq');

-- a retrain reflects the table: its queue goes
DELETE FROM dq WHERE id = 2;
SELECT pending FROM unlearn.status WHERE model = 'dq_log';
SELECT model FROM unlearn_retrain('dq_log');
SELECT model, pending FROM unlearn.status WHERE model = 'dq_log';
SELECT certified FROM unlearn_verify('dq_log');
-- a small queue takes the certified Newton step, and its bound covers the
-- exact residual
DELETE FROM dq WHERE id IN (6, 7, 8);
UPDATE dq SET p4 = p4 + 3 WHERE id = 9;
SELECT model, pending FROM unlearn_apply_pending('dq_log');
SELECT operation, rows_removed, rows_added, retrained, bound > 0 AS spends
FROM unlearn_ledger('dq_log') ORDER BY id DESC LIMIT 1;
SELECT certified, residual <= spent AS within_spent FROM unlearn_verify('dq_log');

-- who may apply, and what others see
CREATE ROLE dq_owner;
CREATE ROLE dq_stranger;
CREATE ROLE dq_reader;
GRANT SELECT ON dq TO dq_owner;
GRANT TRIGGER ON dq TO dq_owner;
GRANT DELETE, SELECT ON dq TO dq_stranger;
SET ROLE dq_owner;
SELECT model FROM unlearn_train('dq_theirs', 'dq', 'target', '{p1,p2,p3}',
	loss => 'squared', sigma => 0, options => '{"removal": "deferred"}');
SELECT model, removal FROM unlearn.status WHERE model = 'dq_theirs';
SELECT unlearn_grant('dq_theirs', 'dq_reader');
RESET ROLE;
SET ROLE dq_stranger;
DELETE FROM dq WHERE id = 3;
SELECT count(*) AS queue_rows_seen FROM unlearn.pending;
SELECT unlearn_apply_pending('dq_theirs');
RESET ROLE;
-- a grantee reads a deferred model through the functions only, never its catalog row
SET ROLE dq_reader;
SELECT count(*) AS catalog_rows_seen FROM unlearn.models WHERE model = 'dq_theirs';
SELECT unlearn_predict('dq_theirs', '{1,2,3}');
RESET ROLE;
SET ROLE dq_owner;
SELECT count(*) AS own_queue_rows FROM unlearn.pending;
SELECT model, pending FROM unlearn_apply_pending('dq_theirs');
RESET ROLE;
SET ROLE dq_reader;
SELECT unlearn_predict('dq_theirs', '{1,2,3}') IS NOT NULL AS predicts;
RESET ROLE;
-- the table's owner may apply too
DELETE FROM dq WHERE id = 4;
SELECT model, pending FROM unlearn_apply_pending('dq_theirs');
-- nobody but the extension writes the queue
SET ROLE dq_owner;
INSERT INTO unlearn.pending (model, owner, change) VALUES ('dq_theirs', 'dq_owner', -1);
UPDATE unlearn.pending SET change = 1;
DELETE FROM unlearn.pending;
RESET ROLE;
-- a queued change that is neither -1 nor 1 (which only a superuser could
-- write) is reported as corrupt when applied, and stays queued
DELETE FROM dq WHERE id = 5;
UPDATE unlearn.pending SET change = 2 WHERE model = 'dq_theirs';
SELECT unlearn_apply_pending('dq_theirs');
SELECT change, count(*) FROM unlearn.pending WHERE model = 'dq_theirs' GROUP BY 1;
UPDATE unlearn.pending SET change = -1 WHERE model = 'dq_theirs';
SELECT model, pending FROM unlearn_apply_pending('dq_theirs');
-- an owner who may no longer read the table's columns reads no value of
-- the rows deleted since: the model is suspended, and its queue holds
-- counts only (a 16-byte header)
REVOKE SELECT ON dq FROM dq_owner;
DELETE FROM dq WHERE id = 10;
SET ROLE dq_owner;
SELECT change, length(contribution) AS bytes FROM unlearn.pending;
RESET ROLE;
SELECT model, state, rows = (SELECT count(*) FROM dq) AS rows_match, pending
FROM unlearn_apply_pending('dq_theirs');
SELECT unlearn_drop('dq_theirs');

-- the queue's function and trigger are the extension's own
SELECT unlearn_apply_pending('dq_now');
SELECT unlearn_apply_pending('no_such_model');
CREATE TABLE dq_other (id int);
CREATE TRIGGER squat AFTER INSERT ON dq_other FOR EACH ROW EXECUTE FUNCTION unlearn._defer();
INSERT INTO dq_other VALUES (1);
DROP TABLE dq_other;
SET ROLE dq_stranger;
CREATE TEMP TABLE dq_mine (id int);
CREATE TRIGGER unlearn_after_row AFTER INSERT ON dq_mine FOR EACH ROW EXECUTE FUNCTION unlearn._defer();
SELECT unlearn._defer();
DROP TABLE dq_mine;
RESET ROLE;
ALTER TABLE dq DISABLE TRIGGER unlearn_after_row;
DROP TRIGGER unlearn_after_row ON dq;

-- ROLLBACK of an apply leaves the model bit for bit, and its queue
DELETE FROM dq WHERE id IN (11, 12);
SELECT md5(m.coef::text) AS coef_before, unlearn._matrices_digest('dq_log') AS matrices_before,
	   (SELECT count(*) FROM unlearn.pending) AS queue_before
FROM unlearn.models m WHERE m.model = 'dq_log' \gset
BEGIN;
SELECT model, pending FROM unlearn_apply_pending('dq_log');
ROLLBACK;
SELECT md5(m.coef::text) = :'coef_before' AS same_coef,
	   unlearn._matrices_digest('dq_log') = :'matrices_before' AS same_matrices,
	   (SELECT count(*) FROM unlearn.pending) = :queue_before AS same_queue
FROM unlearn.models m WHERE m.model = 'dq_log';

-- dropping the deferred models takes their queue and the row trigger; the
-- immediate model keeps its statement triggers
DELETE FROM dq WHERE id = 5;
SELECT unlearn_drop('dq_lsq');
SELECT unlearn_drop('dq_log');
SELECT count(*) AS queue_rows FROM unlearn.pending;
SELECT tgname FROM pg_trigger WHERE tgrelid = 'dq'::regclass ORDER BY tgname;
SELECT unlearn_drop('dq_now');
DROP TABLE dq;

-- partitions: a cross-partition UPDATE and a foreign-key cascade reach the
-- queue through the row trigger's clones; least squares equals a refit
CREATE TABLE dp_parent (grp int PRIMARY KEY);
INSERT INTO dp_parent VALUES (0), (1), (2);
CREATE TABLE dp (id int, grp int REFERENCES dp_parent ON DELETE CASCADE, target float8,
				 p1 float8, p2 float8, p3 float8) PARTITION BY LIST (grp);
CREATE TABLE dp_0 PARTITION OF dp FOR VALUES IN (0);
CREATE TABLE dp_rest (p3 float8, target float8, id int, grp int, p2 float8, p1 float8);
ALTER TABLE dp ATTACH PARTITION dp_rest FOR VALUES IN (1, 2);
INSERT INTO dp SELECT id, id % 3, label, pixels[20], pixels[28], pixels[36] FROM digits WHERE id <= 500;
SELECT model, rows FROM unlearn_train('dp_lsq', 'dp', 'target', '{p1,p2,p3}', loss => 'squared',
	sigma => 0, options => '{"preprocess": "none", "removal": "deferred"}');
UPDATE dp SET grp = 0, p1 = p1 + 1 WHERE id % 7 = 1;
DELETE FROM dp_parent WHERE grp = 2;
DELETE FROM dp_rest WHERE id % 11 = 0;
SELECT change, count(*) FROM unlearn.pending WHERE model = 'dp_lsq' GROUP BY change ORDER BY change;
SELECT model, rows = (SELECT count(*) FROM dp) AS rows_match, pending FROM unlearn_apply_pending('dp_lsq');
SELECT reg / rows AS refit_lambda FROM unlearn.models WHERE model = 'dp_lsq' \gset
CREATE TABLE dp_copy AS SELECT * FROM dp;
SELECT model FROM unlearn_train('dp_refit', 'dp_copy', 'target', '{p1,p2,p3}', loss => 'squared',
	lambda => :refit_lambda, sigma => 0, options => '{"preprocess": "none"}');
SELECT pg_temp.max_diff(unlearn_coef('dp_lsq'), unlearn_coef('dp_refit'))
	   / (SELECT max(abs(v)) FROM unnest(unlearn_coef('dp_refit')) v) < 1e-9 AS equals_refit;

-- a tree with an immediate model takes no foreign partition (refused
-- before any connection; training on a tree with one: TAP 011_multinode)
CREATE EXTENSION postgres_fdw;
CREATE SERVER dp_nowhere FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '/nonexistent', dbname 'none');
CREATE TABLE dq_imm (id int, grp int, target float8, p1 float8) PARTITION BY LIST (grp);
CREATE TABLE dq_imm_0 PARTITION OF dq_imm FOR VALUES IN (0);
INSERT INTO dq_imm SELECT id, 0, label, pixels[20] FROM digits WHERE id <= 50;
SELECT model FROM unlearn_train('dq_imm', 'dq_imm', 'target', '{p1}', loss => 'squared', sigma => 0);
CREATE FOREIGN TABLE dq_imm_1 PARTITION OF dq_imm FOR VALUES IN (1) SERVER dp_nowhere;
SELECT count(*) AS partitions FROM pg_inherits WHERE inhparent = 'dq_imm'::regclass;
SELECT unlearn_drop('dq_imm');
SELECT unlearn_drop('dp_lsq');
SELECT unlearn_drop('dp_refit');
DROP TABLE dq_imm, dp, dp_copy, dp_parent;
DROP SERVER dp_nowhere;
DROP EXTENSION postgres_fdw;
DROP OWNED BY dq_owner, dq_stranger, dq_reader;
DROP ROLE dq_owner, dq_stranger, dq_reader;

-- a queued row stores its values in the narrowest width that gives them
-- back exactly: unsigned bytes, 16- or 32-bit integers, else doubles (a
-- fraction, a -0, a missing value); the apply reads each back bit for bit
-- (least squares equals a refit)
CREATE TABLE dq_w (id int PRIMARY KEY, a float8, b float8, y float8);
INSERT INTO dq_w SELECT i, i % 7, i % 5, (i % 7) * 0.5 + (i % 5) + sin(i) FROM generate_series(1, 200) i;
SELECT model FROM unlearn_train('dq_w', 'dq_w', 'y', '{a,b}', loss => 'squared', sigma => 0,
								options => '{"removal": "deferred"}');
INSERT INTO dq_w VALUES (1001, 3, 255, 1), (1002, -3, 300, 2), (1003, 70000, 1, 3), (1004, 0.5, 1, 4),
	(1005, '-0', 1, 5), (1006, NULL, 1, 6);
-- (the width is the top byte of the header's first int32, little-endian: 1 byte, 2, 3, 0 doubles)
SELECT change, get_byte(contribution, 3) AS width, length(contribution) AS bytes
FROM unlearn.pending WHERE model = 'dq_w' ORDER BY id;
DELETE FROM dq_w WHERE id IN (1001, 1002, 1003, 1004, 1005, 1006, 7);
SELECT count(*) AS queued FROM unlearn.pending WHERE model = 'dq_w';
SELECT rows = (SELECT count(*) FROM dq_w) AS rows_match FROM unlearn_apply_pending('dq_w');
SELECT certified, retrain_distance < 1e-9 AS refit FROM unlearn_verify('dq_w');
SELECT unlearn_drop('dq_w');
DROP TABLE dq_w;
