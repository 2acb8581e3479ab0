-- Dates and timestamps as features: a date is read as days since
-- 1970-01-01, a timestamp as seconds since 1970-01-01 00:00 (UTC for
-- timestamptz), from the binary value, so that no session setting
-- (TimeZone, DateStyle) changes what a model reads.
--
-- 1. A least-squares model on a date, a timestamp and a timestamptz column
--    equals, to 1e-9, one on the same numbers computed in SQL (date minus
--    1970-01-01, extract(epoch ...)), trained under another TimeZone and
--    DateStyle; predictions agree under both.
-- 2. Every statement form keeps it a refit; a date expression (d + 30)
--    is a feature too.
-- 3. A date label and an expression computing with timestamptz (whose
--    functions read TimeZone) are refused.
SET client_min_messages = warning;
CREATE TABLE dt (id int PRIMARY KEY, signup date, seen timestamp, paid timestamptz, spend float8);
INSERT INTO dt SELECT i, date '2018-01-01' + (i * 37) % 1500,
	   timestamp '2019-03-01 08:00' + ((i * 7919) % 100000) * interval '1 minute',
	   timestamptz '2020-06-01 00:00+00' + ((i * 104729) % 500000) * interval '1 second',
	   10 + (i % 17) + ((i * 37) % 1500) / 100.0 FROM generate_series(1, 300) i;
CREATE TABLE dt_numbers AS
SELECT id, (signup - date '1970-01-01')::float8 AS signup, extract(epoch FROM seen)::float8 AS seen,
	   extract(epoch FROM paid)::float8 AS paid, spend FROM dt;
ALTER TABLE dt_numbers ADD PRIMARY KEY (id);

-- 1.
SET TimeZone = 'America/Los_Angeles';
SET DateStyle = 'SQL, DMY';
SELECT model, rows FROM unlearn_train('dt_dates', 'dt', 'spend', '{signup,seen,paid}', loss => 'squared',
									  sigma => 0, lambda => 1e-6);
RESET TimeZone;
RESET DateStyle;
SELECT model, rows FROM unlearn_train('dt_numbers', 'dt_numbers', 'spend', '{signup,seen,paid}',
									  loss => 'squared', sigma => 0, lambda => 1e-6);
CREATE FUNCTION pg_temp.same(a text, b text) RETURNS boolean LANGUAGE sql AS $$
	SELECT max(abs(x - y)) <= 1e-9 * greatest(1, max(abs(y)))
	FROM unnest(unlearn_coef(a), unlearn_coef(b)) u(x, y)
$$;
SELECT pg_temp.same('dt_dates', 'dt_numbers') AS same_weights,
	   (SELECT centre FROM unlearn.models WHERE model = 'dt_dates') =
	   (SELECT centre FROM unlearn.models WHERE model = 'dt_numbers') AS same_map;
SET TimeZone = 'Asia/Kathmandu';
SELECT count(*) FILTER (WHERE abs((d.s).score - (n.s).score) <= 1e-9 * abs((n.s).score)) AS same_scores
FROM (SELECT id, unlearn_score_row('dt_dates', dt) AS s FROM dt) d
JOIN (SELECT id, unlearn_score_row('dt_numbers', dt_numbers) AS s FROM dt_numbers) n USING (id);
RESET TimeZone;

-- 2.
CREATE FUNCTION pg_temp.refit(model text) RETURNS TABLE (model text, in_step boolean, refit boolean)
LANGUAGE sql AS $$
	SELECT m.model, m.rows = (SELECT count(*) FROM dt),
		   v.retrain_distance <= 1e-9 * (SELECT sqrt(sum(c ^ 2)) FROM unnest(unlearn_coef(m.model)) c)
	FROM unlearn.models m, unlearn_verify(m.model) v WHERE m.model = $1
$$;
DELETE FROM dt WHERE id % 10 = 3;
UPDATE dt SET signup = signup + 100, paid = paid - interval '3 days' WHERE id % 10 = 4;
INSERT INTO dt SELECT i, date '2021-01-01' + i, timestamp '2021-01-01' + i * interval '1 hour',
	   timestamptz '2021-01-01 00:00+00' + i * interval '1 day', 30 FROM generate_series(301, 310) i;
INSERT INTO dt VALUES (4, date '2022-02-02', timestamp '2022-02-02 02:02', timestamptz '2022-02-02 02:02+02', 12)
ON CONFLICT (id) DO UPDATE SET signup = excluded.signup;
SELECT * FROM pg_temp.refit('dt_dates');
SELECT model, rows FROM unlearn_train('dt_expr', 'dt', 'spend', ARRAY['signup + 30', 'seen'], loss => 'squared',
									  sigma => 0, lambda => 1e-6);
DELETE FROM dt WHERE id % 10 = 5;
SELECT * FROM pg_temp.refit('dt_expr');

-- 3.
\set VERBOSITY default
SELECT unlearn_train('dt_bad', 'dt', 'signup', '{spend}', loss => 'squared');
SELECT unlearn_train('dt_bad', 'dt', 'spend', ARRAY['paid + interval ''1 day'''], loss => 'squared');
\set VERBOSITY terse

SELECT unlearn_drop(model) FROM unlearn.models WHERE model LIKE 'dt\_%' ORDER BY model;
DROP TABLE dt, dt_numbers;
