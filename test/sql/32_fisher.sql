-- mechanism => 'fisher' (seed 001): a model trained without objective
-- noise, whose every change takes the Newton step from the cached Hessian
-- and publishes w + z, z ~ N(0, c H^-1), with c chosen so that the
-- release's KL bound is nats; and noise => 'laplace' (Theorem 3 i) for
-- Newton models.
--
-- 1. Training: sigma is ignored (0), the budget is the margin-noise limit,
--    the secret w is kept in the owner-only state and the catalog
--    publishes w + z (within the noise of w, but not w); least squares
--    is exact with 0 nats.
-- 2. Every statement form (DELETE, INSERT, UPDATE, upsert, MERGE,
--    writable CTE, COPY, cascade) keeps rows equal to the table's, the
--    secret w certified, each release's nats within the target and the
--    ledger's sum in unlearn.status.nats; least squares equals a refit.
--    (The KL bound against an exact retrain: test/python/check_fisher.py.)
-- 3. ROLLBACK restores the catalog row and the state bit for bit.
-- 4. Readers: a 'read' grantee sees the published weights and nothing of
--    the state, and not the release of a change of its own transaction
--    before it commits; unlearn_export exports the published weights;
--    unlearn_residual is the residual of what is published.
-- 5. Cohorts, deferred removal and the audit (read-outs against a
--    retrain, and the ceiling sqrt(2 nats)) work for fisher models.
-- 6. noise => 'laplace': budget epsilon sigma, pure epsilon (delta 0 in
--    unlearn_privacy), certified removal, its guarantee in words.
-- 7. Errors.
SET client_min_messages = warning;
CREATE TABLE fi_groups (grp int PRIMARY KEY);
INSERT INTO fi_groups SELECT g FROM generate_series(0, 9) g;
CREATE TABLE fi (id int PRIMARY KEY, grp int REFERENCES fi_groups ON DELETE CASCADE,
	age float8, sex float8, bmi float8, bp float8, s1 float8, s2 float8, s3 float8,
	s4 float8, s5 float8, s6 float8, target float8,
	high boolean GENERATED ALWAYS AS (target > 140) STORED);
INSERT INTO fi (id, grp, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target)
SELECT id, id % 10, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target FROM diabetes WHERE id <= 400;

-- 1.
SELECT model FROM unlearn_train('fi_log', 'fi', 'high', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
				   lambda => 1e-2, sigma => 5, mechanism => 'fisher');
SELECT model, rows, mechanism, nats, guarantee, round(budget::numeric, 6) AS budget FROM unlearn.status WHERE model = 'fi_log';
SELECT model FROM unlearn_train('fi_lsq', 'fi', 'target', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
				   loss => 'squared', lambda => 1e-4, mechanism => 'fisher', nats => 0.5);
SELECT model, mechanism, nats, guarantee, budget FROM unlearn.status WHERE model = 'fi_lsq';
SELECT m.model, m.sigma, m.nats, m.budget = 0.1 * m.reg * sqrt(2 * m.nats) AS margin_limit,
	   octet_length(s.weights) = 8 * 11 AS keeps_w, s.release_scale > 0 AS scrubbed
FROM unlearn.models m JOIN unlearn.model_state s USING (model) WHERE m.model = 'fi_log';
SELECT model, s.weights IS NULL AS no_secret_w FROM unlearn.model_state s WHERE model = 'fi_lsq';

-- 2.
CREATE FUNCTION pg_temp.check(what text) RETURNS TABLE (statement text, model text, in_step boolean,
	certified boolean, refit boolean, nats_within boolean, nats_add_up boolean) LANGUAGE sql AS $$
	SELECT what, m.model, m.rows = (SELECT count(*) FROM fi), v.certified,
		   m.loss <> 'squared' OR v.retrain_distance <=
			   1e-9 * (SELECT sqrt(sum(c ^ 2)) FROM unnest(unlearn_coef(m.model)) c),
		   (SELECT bool_and(l.nats <= m.nats AND (l.nats > 0) = (m.loss = 'logistic' AND NOT l.retrained))
			FROM unlearn.ledger l WHERE l.model = m.model AND l.xact = (SELECT max(xact) FROM unlearn.ledger)
			  AND l.nats IS NOT NULL),
		   abs(m.nats_spent - (SELECT coalesce(sum(l.nats), 0) FROM unlearn.ledger l WHERE l.model = m.model)) <=
			   1e-9 * m.nats_spent
	FROM unlearn.models m, unlearn_verify(m.model) v
	WHERE m.model LIKE 'fi\_%' ORDER BY m.model
$$;
CREATE TEMP TABLE results AS SELECT * FROM pg_temp.check('trained');
DELETE FROM fi WHERE id = 7;
INSERT INTO results SELECT * FROM pg_temp.check('delete one');
DELETE FROM fi WHERE id BETWEEN 20 AND 29;
INSERT INTO results SELECT * FROM pg_temp.check('delete ten');
INSERT INTO fi (id, grp, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target)
SELECT id, id % 10, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target FROM diabetes WHERE id BETWEEN 401 AND 405;
INSERT INTO results SELECT * FROM pg_temp.check('insert');
UPDATE fi SET target = target + 60 WHERE id IN (30, 31, 32);
INSERT INTO results SELECT * FROM pg_temp.check('update');
INSERT INTO fi (id, grp, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target)
SELECT id, id % 10, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, 300 FROM diabetes WHERE id IN (33, 406)
ON CONFLICT (id) DO UPDATE SET target = excluded.target;
INSERT INTO results SELECT * FROM pg_temp.check('upsert');
MERGE INTO fi USING (SELECT id, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target FROM diabetes
					 WHERE id IN (34, 35, 407)) d ON fi.id = d.id
WHEN MATCHED AND d.id = 34 THEN DELETE
WHEN MATCHED THEN UPDATE SET bmi = d.bmi + 1
WHEN NOT MATCHED THEN INSERT (id, grp, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target)
	VALUES (d.id, 1, d.age, d.sex, d.bmi, d.bp, d.s1, d.s2, d.s3, d.s4, d.s5, d.s6, d.target);
INSERT INTO results SELECT * FROM pg_temp.check('merge');
WITH gone AS (DELETE FROM fi WHERE id IN (40, 41) RETURNING *)
INSERT INTO fi (id, grp, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target)
SELECT id + 1000, grp, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target FROM gone;
INSERT INTO results SELECT * FROM pg_temp.check('writable cte');
COPY fi (id, grp, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target) FROM stdin;
2001	3	50	1	25	90	180	100	50	4	4.5	90	150
2002	4	60	2	30	100	200	120	40	5	5	95	100
\.
INSERT INTO results SELECT * FROM pg_temp.check('copy');
DELETE FROM fi_groups WHERE grp = 9;
INSERT INTO results SELECT * FROM pg_temp.check('cascade');
SELECT * FROM results ORDER BY model, statement;
SELECT model, nats > 0 AS has_nats, guarantee FROM unlearn.status WHERE model LIKE 'fi\_%' ORDER BY model;

-- 3.
CREATE TEMP TABLE fi_before AS
SELECT m.coef, m.spent, m.nats_spent, s.weights, s.release_scale, s.anchor, s.class_spent
FROM unlearn.models m JOIN unlearn.model_state s USING (model) WHERE m.model = 'fi_log';
BEGIN;
DELETE FROM fi WHERE id BETWEEN 50 AND 60;
SELECT count(*) AS ledger_lines_inside FROM unlearn.ledger WHERE model = 'fi_log' AND xact = pg_current_xact_id();
ROLLBACK;
SELECT b.coef IS NOT DISTINCT FROM m.coef AND b.spent = m.spent AND b.nats_spent = m.nats_spent AND
	   b.weights = s.weights AND b.release_scale = s.release_scale AND b.anchor = s.anchor AND
	   b.class_spent = s.class_spent AS restored
FROM fi_before b, unlearn.models m JOIN unlearn.model_state s USING (model) WHERE m.model = 'fi_log';

-- 4.
CREATE ROLE fi_reader;
SELECT unlearn_grant('fi_log', 'fi_reader');
SET ROLE fi_reader;
SELECT (SELECT count(*) FROM unlearn.model_state) AS state_rows,
	   (SELECT coef IS NOT NULL FROM unlearn.models WHERE model = 'fi_log') AS sees_published,
	   (unlearn_export('fi_log') -> 'weights' -> 0 -> 0)::float8 = (SELECT coef[1] FROM unlearn.models WHERE model = 'fi_log')
		   AS exports_published;
SELECT * FROM unlearn_verify('fi_log');
RESET ROLE;
-- a grantee who may write the table sees a change's release only once it
-- commits: a release read and rolled back would be a sample no bound counts
GRANT SELECT, DELETE ON fi TO fi_reader;
SET ROLE fi_reader;
BEGIN;
DELETE FROM fi WHERE id = 90;
SELECT count(*) AS releases_seen FROM unlearn.models WHERE model = 'fi_log';
SAVEPOINT s;
SELECT unlearn_coef('fi_log');
ROLLBACK TO SAVEPOINT s;
SELECT unlearn_predict('fi_log', ARRAY[age, sex, bmi, bp, s1, s2, s3, s4, s5, s6]) FROM fi WHERE id = 91;
ROLLBACK;
SELECT count(*) AS releases_seen_after FROM unlearn.models WHERE model = 'fi_log';
RESET ROLE;
REVOKE SELECT, DELETE ON fi FROM fi_reader;
-- the residual of what is published: the noise z moves it by H z
SELECT (SELECT sqrt(sum(u ^ 2)) FROM unnest(unlearn_residual('fi_log')) u) > v.residual AS published_residual_larger
FROM unlearn_verify('fi_log') v;

-- 5.
CREATE TABLE fi_tenants (id int PRIMARY KEY, tenant int, age float8, bmi float8, bp float8, s5 float8,
	high boolean);
INSERT INTO fi_tenants SELECT id, id % 5, age, bmi, bp, s5, target > 140 FROM diabetes;
SELECT model FROM unlearn_train('fi_cohorts', 'fi_tenants', 'high', '{age,bmi,bp,s5}',
										   lambda => 1e-2, mechanism => 'fisher', cohort => 'tenant',
										   options => '{"preprocess": "none"}');
SELECT model, mechanism FROM unlearn.status WHERE model = 'fi_cohorts';
DELETE FROM fi_tenants WHERE tenant = 3;
SELECT l.operation, l.rows_removed, l.nats > 0 AND l.nats <= 1 AS nats_within, v.certified,
	   m.rows = (SELECT count(*) FROM fi_tenants) AS in_step
FROM unlearn.ledger l, unlearn_verify('fi_cohorts') v, unlearn.models m
WHERE l.model = 'fi_cohorts' AND m.model = 'fi_cohorts' AND l.operation = 'cohort';
SELECT model FROM unlearn_train('fi_deferred', 'fi_tenants', 'high', '{age,bmi,bp,s5}',
								lambda => 1e-2, mechanism => 'fisher', options => '{"removal": "deferred"}');
DELETE FROM fi_tenants WHERE id IN (1, 2, 4);
SELECT model, pending FROM unlearn_apply_pending('fi_deferred');
SELECT l.operation, l.rows_removed, l.nats > 0 AND l.nats <= 1 AS nats_within, v.certified
FROM unlearn.ledger l, unlearn_verify('fi_deferred') v
WHERE l.model = 'fi_deferred' AND l.operation = 'apply';
CREATE TABLE fi_canaries (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, age float8, bmi float8, bp float8,
	s5 float8, high boolean);
INSERT INTO fi_canaries (age, bmi, bp, s5, high) SELECT age, bmi, bp, s5, target > 140 FROM diabetes ORDER BY id;
SELECT model FROM unlearn_train('fi_audited', 'fi_canaries', 'high', '{age,bmi,bp,s5}', lambda => 1e-2,
								mechanism => 'fisher');
CREATE TEMP TABLE fi_audit AS SELECT * FROM unlearn_audit('fi_audited', canaries => 200, attack => 'loo', seed => 3);
SELECT population, rows > 0 AS has_rows,
	   round(ceiling_at_1::numeric, 4) AS ceiling_of_one_nat,
	   error BETWEEN 0 AND 1 AND mean_confidence BETWEEN 0.5 AND 1 AS read_outs
FROM fi_audit ORDER BY population;

-- 6.
SELECT model FROM unlearn_train('fi_laplace', 'fi', 'high', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
				   lambda => 1e-2, sigma => 2, noise => 'laplace');
SELECT model, noise, guarantee, budget = 2 * 1 AS budget_epsilon_sigma FROM unlearn.status WHERE model = 'fi_laplace';
SELECT deletion_epsilon, deletion_delta FROM unlearn_privacy('fi_laplace');
SELECT mechanism, deletion_epsilon, deletion_target FROM unlearn_privacy('fi_log');
DELETE FROM fi WHERE id BETWEEN 70 AND 74;
SELECT v.certified, m.rows = (SELECT count(*) FROM fi) AS in_step, m.spent > 0 AS spent
FROM unlearn_verify('fi_laplace') v, unlearn.models m WHERE m.model = 'fi_laplace';
SELECT unlearn_budget(2, 0.5, noise => 'laplace') AS laplace, unlearn_budget(2, 0.5) < 1 AS gaussian_smaller;

-- 7.
\set VERBOSITY default
SELECT unlearn_train('fi_bad', 'fi', 'high', '{age,bmi}', mechanism => 'fisher', nats => 0);
SELECT unlearn_train('fi_bad', 'fi', 'high', '{age,bmi}', mechanism => 'fisher', nats => 1e4);
SELECT unlearn_train('fi_bad', 'fi', 'high', '{age,bmi}', nats => 1);
SELECT unlearn_train('fi_bad', 'fi', 'high', '{age,bmi}', mechanism => 'fisher', noise => 'laplace');
SELECT unlearn_train('fi_bad', 'fi', 'high', '{age,bmi}', noise => 'uniform');
SELECT unlearn_budget(1, noise => 'uniform');
SELECT unlearn_train('fi_bad', 'fi', 'high', '{age,bmi}', sigma => 1e200, epsilon => 1e200, noise => 'laplace');
SELECT unlearn._laplace_norms(0, 1, 10);
SELECT * FROM unlearn_plan(10, model => 'fi_log');
SELECT * FROM unlearn_plan(10, model => 'fi_laplace');
SET ROLE fi_reader;
SELECT unlearn._laplace_norms(3, 1, 10);
RESET ROLE;
\set VERBOSITY terse

SELECT unlearn_drop(model) FROM unlearn.models WHERE model LIKE 'fi\_%' ORDER BY model;
DROP TABLE fi, fi_groups, fi_tenants, fi_canaries;
DROP ROLE fi_reader;
