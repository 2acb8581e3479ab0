-- The training statistics aggregates: their catalog properties (what a
-- parallel plan and a Citus or postgres_fdw fan-out need), their sums
-- against plain SQL on real data, parallel against serial, merging states
-- of several tables after a text and a binary round trip, and bad input.
\set VERBOSITY default
\set SHOW_CONTEXT never
CREATE FUNCTION pg_temp.rel_diff(a float8[], b float8[]) RETURNS float8 LANGUAGE sql AS $$
	SELECT max(abs(x - y)) / greatest(max(abs(y)), 1e-300) FROM unnest(a, b) u(x, y)
$$;

-- 1. catalog: a combine function, a state type that is no pseudo-type, no
-- serialisation function, and PARALLEL SAFE aggregates whose support
-- functions are immutable and parallel safe too
SELECT p.proname, a.aggcombinefn <> 0 AS has_combine, t.typname AS state_type,
	   t.typtype <> 'p' AS not_pseudo, a.aggserialfn = 0 AS no_serialfn,
	   p.proparallel = 's' AS parallel_safe,
	   (SELECT bool_and(s.provolatile = 'i' AND s.proparallel = 's') FROM pg_proc s
		WHERE s.oid IN (a.aggtransfn, a.aggcombinefn, a.aggfinalfn)) AS support_immutable_safe
FROM pg_aggregate a JOIN pg_proc p ON p.oid = a.aggfnoid JOIN pg_type t ON t.oid = a.aggtranstype
WHERE p.proname LIKE 'unlearn%' ORDER BY p.proname;
SELECT typname, typinput::regproc, typoutput::regproc, typreceive::regproc, typsend::regproc, typalign
FROM pg_type WHERE oid = 'unlearn.stats'::regtype;

-- 2. the sums against plain SQL: digits, "is it a 3", eight pixels and a
-- constant, at a w far from 0
CREATE TABLE ag AS
SELECT id, (SELECT array_agg(v / 16) FROM unnest(pixels[1:8]) v) || 1::float8 AS x,
	   CASE WHEN label = 3 THEN 1 ELSE -1 END::float8 AS y, label
FROM digits;
\set w '''{0.3,-0.2,0.1,0.4,-0.5,0.2,0.05,-0.1,-1.5}'''
SELECT unlearn_gradient_hessian(x, y, :w, 'logistic') AS h FROM ag \gset
WITH r AS (SELECT x, y, (SELECT sum(a * b) FROM unnest(x, :w::float8[]) u(a, b)) AS z FROM ag),
d AS (SELECT x, y, z, 1 / (1 + exp(y * z)) AS s FROM r)
SELECT abs((:'h'::unlearn.stats_values).loss_sum - (SELECT sum(ln(1 + exp(-y * z))) FROM d))
		   / (:'h'::unlearn.stats_values).loss_sum < 1e-12 AS loss_matches,
	   pg_temp.rel_diff((:'h'::unlearn.stats_values).gradient,
						(SELECT array_agg(g ORDER BY j) FROM (
							SELECT j, sum(-y * s * x[j]) AS g FROM d, generate_series(1, 9) j GROUP BY j) q)) < 1e-12
		   AS gradient_matches,
	   pg_temp.rel_diff((:'h'::unlearn.stats_values).matrix,
						(SELECT array_agg(h ORDER BY i, j) FROM (
							SELECT i, j, sum(s * (1 - s) * x[i] * x[j]) AS h
							FROM d, generate_series(1, 9) i, generate_series(1, 9) j GROUP BY i, j) q)) < 1e-12
		   AS hessian_matches,
	   (:'h'::unlearn.stats_values).rows = (SELECT count(*) FROM ag) AS rows_match;
-- the gradient-only aggregate gives the same loss and gradient
SELECT (g).loss_sum = (:'h'::unlearn.stats_values).loss_sum AS same_loss,
	   (g).gradient = (:'h'::unlearn.stats_values).gradient AS same_gradient, (g).matrix IS NULL AS no_matrix
FROM (SELECT unlearn_loss_gradient(x, y, :w, 'logistic') AS g FROM ag) q;
-- squared loss: l'' = 2, so its Hessian is twice the Gram matrix, and its
-- gradient is 2 (X'X w - X'y)
WITH s AS (SELECT unlearn_gradient_hessian(x, label, :w, 'squared') AS h, unlearn_gram(x) AS g FROM ag)
SELECT (g).kind, (g).loss IS NULL AS gram_has_no_loss,
	   pg_temp.rel_diff((h).matrix, (SELECT array_agg(2 * v) FROM unnest((g).matrix) v)) < 1e-14 AS hessian_is_twice_gram
FROM s;

-- 2b. blocks: a matrix state buffers rows and adds them a block at a time
-- (DSYRK).  The same sums come from states of one row each (GROUP BY id,
-- merged), from groups of about 180 rows (several blocks and a remainder),
-- and from a window aggregate, whose final function flattens the state at
-- every row while rows keep arriving: the last row's running sums equal
-- the aggregate's
SELECT pg_temp.rel_diff((unlearn_stats_values(unlearn_merge(s))).matrix, (:'h'::unlearn.stats_values).matrix) < 1e-12
		   AS one_row_states_equal,
	   (unlearn_stats_values(unlearn_merge(s))).rows = (:'h'::unlearn.stats_values).rows AS one_row_rows_equal
FROM (SELECT unlearn_gradient_hessian_state(x, y, :w, 'logistic') AS s FROM ag GROUP BY id) q;
SELECT pg_temp.rel_diff((unlearn_stats_values(unlearn_merge(s))).matrix, (:'h'::unlearn.stats_values).matrix) < 1e-12
		   AS label_states_equal,
	   pg_temp.rel_diff((unlearn_stats_values(unlearn_merge(s))).gradient, (:'h'::unlearn.stats_values).gradient) < 1e-12
		   AS label_gradients_equal
FROM (SELECT unlearn_gradient_hessian_state(x, y, :w, 'logistic') AS s FROM ag GROUP BY label) q;
SELECT pg_temp.rel_diff((h).matrix, (:'h'::unlearn.stats_values).matrix) < 1e-12 AS window_hessian_equal,
	   pg_temp.rel_diff((h).gradient, (:'h'::unlearn.stats_values).gradient) < 1e-12 AS window_gradient_equal,
	   pg_temp.rel_diff((g).matrix, (SELECT (unlearn_gram(x)).matrix FROM ag)) < 1e-12 AS window_gram_equal,
	   (h).rows = (:'h'::unlearn.stats_values).rows AS window_rows_equal
FROM (SELECT unlearn_gradient_hessian(x, y, :w, 'logistic') OVER w AS h, unlearn_gram(x) OVER w AS g,
			 row_number() OVER w = count(*) OVER () AS last
	  FROM ag WINDOW w AS (ORDER BY id)) q
WHERE last;

-- 3. parallel equals serial: a Partial Aggregate under Gather, the same
-- sums to 1e-12 relative
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
EXPLAIN (COSTS OFF) SELECT unlearn_gradient_hessian(x, y, :w, 'logistic') FROM ag;
SELECT unlearn_gradient_hessian(x, y, :w, 'logistic') AS hp, unlearn_gram(x) AS gp FROM ag \gset
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET parallel_leader_participation;
SELECT abs((:'hp'::unlearn.stats_values).loss_sum - (:'h'::unlearn.stats_values).loss_sum)
		   / (:'h'::unlearn.stats_values).loss_sum < 1e-12 AS loss_equal,
	   pg_temp.rel_diff((:'hp'::unlearn.stats_values).gradient, (:'h'::unlearn.stats_values).gradient) < 1e-12
		   AS gradient_equal,
	   pg_temp.rel_diff((:'hp'::unlearn.stats_values).matrix, (:'h'::unlearn.stats_values).matrix) < 1e-12
		   AS hessian_equal,
	   pg_temp.rel_diff((:'gp'::unlearn.stats_values).matrix, (SELECT (unlearn_gram(x)).matrix FROM ag)) < 1e-12
		   AS gram_equal;

-- 4. merging: the states of three tables, through their text form, equal
-- the aggregate over the union; so do they through the binary form (COPY
-- BINARY)
CREATE TABLE ag_0 AS SELECT * FROM ag WHERE id % 3 = 0;
CREATE TABLE ag_1 AS SELECT * FROM ag WHERE id % 3 = 1;
CREATE TABLE ag_2 AS SELECT * FROM ag WHERE id % 3 = 2;
CREATE TABLE ag_states AS
SELECT unlearn_gradient_hessian_state(x, y, :w, 'logistic')::text AS state FROM ag_0
UNION ALL SELECT unlearn_gradient_hessian_state(x, y, :w, 'logistic')::text FROM ag_1
UNION ALL SELECT unlearn_gradient_hessian_state(x, y, :w, 'logistic')::text FROM ag_2;
SELECT bool_and(state LIKE 'ulstats1:%') AS text_form FROM ag_states;
SELECT (m).rows = (:'h'::unlearn.stats_values).rows AS rows_equal,
	   abs((m).loss_sum - (:'h'::unlearn.stats_values).loss_sum) / (m).loss_sum < 1e-12 AS loss_equal,
	   pg_temp.rel_diff((m).gradient, (:'h'::unlearn.stats_values).gradient) < 1e-12 AS gradient_equal,
	   pg_temp.rel_diff((m).matrix, (:'h'::unlearn.stats_values).matrix) < 1e-12 AS hessian_equal
FROM (SELECT unlearn_stats_values(unlearn_merge(state::unlearn.stats)) AS m FROM ag_states) q;
CREATE TABLE ag_binary (state unlearn.stats);
\copy (SELECT state::unlearn.stats FROM ag_states) TO 'results/21_aggregates_states.bin' WITH (FORMAT binary)
\copy ag_binary FROM 'results/21_aggregates_states.bin' WITH (FORMAT binary)
SELECT (SELECT array_agg(state::text) FROM ag_binary) = (SELECT array_agg(state) FROM ag_states)
	AS binary_round_trip;
SELECT pg_temp.rel_diff((unlearn_stats_values(unlearn_merge(state))).matrix, (:'h'::unlearn.stats_values).matrix) < 1e-12
	AS binary_merge_equal
FROM ag_binary;
-- the Gram matrix merges the same way
SELECT pg_temp.rel_diff((unlearn_stats_values(unlearn_merge(s))).matrix, (SELECT (unlearn_gram(x)).matrix FROM ag)) < 1e-12
	AS gram_merge_equal
FROM (SELECT unlearn_gram_state(x) AS s FROM ag GROUP BY id % 5) q;
-- no row: NULL
SELECT unlearn_gram(x) IS NULL AS empty_is_null, unlearn_gram_state(x) IS NULL AS empty_state_is_null
FROM ag WHERE false;

-- 5. bad input, each with its SQLSTATE and message
CREATE FUNCTION pg_temp.error_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE q;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ' ' || SQLERRM;
END $$;
SELECT q, pg_temp.error_of(q) FROM (VALUES
	('SELECT unlearn_loss_gradient(NULL, y, ''{1,2,3,4,5,6,7,8,9}'', ''logistic'') FROM ag'),
	('SELECT unlearn_loss_gradient(x, NULL, ''{1,2,3,4,5,6,7,8,9}'', ''logistic'') FROM ag'),
	('SELECT unlearn_loss_gradient(x, y, NULL, ''logistic'') FROM ag'),
	('SELECT unlearn_loss_gradient(x, y, ''{1,2,3,4,5,6,7,8,9}'', NULL) FROM ag'),
	('SELECT unlearn_loss_gradient(x || ''NaN''::float8, y, ''{1,2,3,4,5,6,7,8,9,0}'', ''logistic'') FROM ag'),
	('SELECT unlearn_loss_gradient(x, ''Infinity'', ''{1,2,3,4,5,6,7,8,9}'', ''squared'') FROM ag'),
	('SELECT unlearn_loss_gradient(x, 0, ''{1,2,3,4,5,6,7,8,9}'', ''logistic'') FROM ag'),
	('SELECT unlearn_loss_gradient(x, y, ''{1,2,3}'', ''logistic'') FROM ag'),
	('SELECT unlearn_loss_gradient(CASE WHEN id = 5 THEN x || 1::float8 ELSE x END, y, ''{1,2,3,4,5,6,7,8,9}'', ''logistic'') FROM ag'),
	('SELECT unlearn_loss_gradient(x, y, ARRAY[id,2,3,4,5,6,7,8,9]::float8[], ''logistic'') FROM ag'),
	('SELECT unlearn_loss_gradient(x, y, ''{1,2,3,4,5,6,7,8,9}'', ''hinge'') FROM ag'),
	('SELECT unlearn_gram(''{{1,2},{3,4}}''::float8[]) FROM ag'),
	('SELECT unlearn_gram(''{1,NULL}''::float8[]) FROM ag'),
	('SELECT unlearn_merge(s) FROM (SELECT unlearn_gram_state(x) s FROM ag UNION ALL SELECT unlearn_loss_gradient_state(x, y, ''{1,2,3,4,5,6,7,8,9}'', ''logistic'') FROM ag) q'),
	('SELECT unlearn_merge(s) FROM (SELECT unlearn_loss_gradient_state(x, y, ''{1,2,3,4,5,6,7,8,9}'', ''logistic'') s FROM ag UNION ALL SELECT unlearn_loss_gradient_state(x, y, ''{0,2,3,4,5,6,7,8,9}'', ''logistic'') FROM ag) q'),
	('SELECT unlearn._stats_combine(NULL, NULL)')
) v(q);
-- states are input a role may write: each part is checked
SELECT unlearn_gram_state(x)::text AS gram_text FROM ag WHERE id <= 2 \gset
CREATE FUNCTION pg_temp.patched(state text, at int, bytes bytea) RETURNS text LANGUAGE sql AS $$
	SELECT 'ulstats1:' || replace(encode(overlay(decode(substr(state, 10), 'base64')
		placing bytes from at for length(bytes)), 'base64'), E'\n', '')
$$;
SELECT what, pg_temp.error_of('SELECT ' || quote_literal(t) || '::unlearn.stats') FROM (VALUES
	('another prefix', 'ulstats2:AAAA'),
	('not base64', 'ulstats1:not base64!'),
	('too short', 'ulstats1:AAAA'),
	('truncated', left(:'gram_text', -8)),
	('too long', :'gram_text' || 'AAAAAAAAAAA='),
	('unknown kind', pg_temp.patched(:'gram_text', 5, '\x07000000')),
	('a loss on a Gram state', pg_temp.patched(:'gram_text', 9, '\x01000000')),
	('p of 0', pg_temp.patched(:'gram_text', 13, '\x00000000')),
	('negative rows', pg_temp.patched(:'gram_text', 21, '\xffffffffffffffff')),
	('a NaN sum', pg_temp.patched(:'gram_text', 37, '\x000000000000f87f')),
	('unchanged', :'gram_text')
) v(what, t);
-- a superuser's aggregate that starts a transition function from a state
-- of another kind is refused, not overrun
SELECT unlearn_loss_gradient_state(x, y, '{1,2,3,4,5,6,7,8,9}', 'logistic')::text AS gradient_text
FROM ag WHERE id <= 2 \gset
CREATE AGGREGATE ag_wrong_kind(float8[]) (SFUNC = unlearn._stats_gram_add, STYPE = unlearn.stats,
	INITCOND = :'gradient_text');
SELECT pg_temp.error_of('SELECT ag_wrong_kind(x) FROM ag');
DROP AGGREGATE ag_wrong_kind(float8[]);
-- nobody's own aggregate feeds the transition functions its states
CREATE ROLE ag_stranger;
GRANT CREATE ON SCHEMA public TO ag_stranger;
SET ROLE ag_stranger;
CREATE AGGREGATE ag_mine(float8[]) (SFUNC = unlearn._stats_gram_add, STYPE = unlearn.stats,
	INITCOND = 'ulstats1:AAAA');
CREATE AGGREGATE ag_mine(float8[]) (SFUNC = unlearn._stats_gram_add, STYPE = unlearn.stats);
-- but the aggregates are everyone's
SELECT (unlearn_gram(x)).rows AS stranger_rows FROM (VALUES ('{1,2}'::float8[]), ('{3,4}')) v(x);
-- a stranger's own queries over the batched states give the plain sums:
-- 5,000 groups at a tiny work_mem, merged, and a moving
-- window frame, whose state starts again at every row
SET work_mem = '64kB';
CREATE TEMP TABLE ag_r AS SELECT i, ARRAY[sin(i), cos(i), 1]::float8[] AS x FROM generate_series(1, 20000) i;
SELECT pg_temp.rel_diff((unlearn_stats_values(unlearn_merge(s))).matrix,
						(SELECT array_agg(v ORDER BY a, b) FROM (
							SELECT a, b, sum(x[a] * x[b]) AS v FROM ag_r, generate_series(1, 3) a,
								generate_series(1, 3) b GROUP BY a, b) q)) < 1e-12 AS groups_equal,
	   count(*) AS groups
FROM (SELECT i % 5000 AS k, unlearn_gram_state(x) AS s FROM ag_r GROUP BY 1) g;
SELECT bool_and(abs((g).matrix[1][2] - s12) <= 1e-12 * greatest(abs(s12), 1)) AS moving_frame_equal, count(*) AS frames
FROM (SELECT unlearn_gram(x) OVER w AS g, sum(x[1] * x[2]) OVER w AS s12 FROM ag_r WHERE i <= 2000
	  WINDOW w AS (ORDER BY i ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)) q;
RESET work_mem;
DROP TABLE ag_r;
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM ag_stranger;
DROP ROLE ag_stranger;

DROP TABLE ag, ag_0, ag_1, ag_2, ag_states, ag_binary;
