-- Training by aggregate passes: what the passes read (a domain over an
-- array column, rows outside the model of any shape), what no role can
-- take from them (USAGE on the extension's schema), the internal row
-- functions and the column moments aggregate on bad input, that a
-- model trained by passes equals the in-memory audit (unlearn_verify), the
-- census's array shape, and the gradient-only pass aggregate's checks.
\set VERBOSITY default
\set SHOW_CONTEXT never

-- 1. a feature column of a domain over float8[]: trains, and after its
-- matrices are evicted a DELETE rebuilds them by a pass
CREATE DOMAIN tp_vec AS float8[];
CREATE TABLE tp_dom (id int PRIMARY KEY, y boolean, x tp_vec);
INSERT INTO tp_dom SELECT id, label = 3, pixels FROM digits;
SELECT model, rows FROM unlearn_train('tp_dom', 'tp_dom', 'y', '{x}', sigma => 10);
SELECT unlearn_evict('tp_dom');
DELETE FROM tp_dom WHERE id <= 5;
SELECT rows = (SELECT count(*) FROM tp_dom) AS rows_match, certified FROM unlearn.models, unlearn_verify('tp_dom')
WHERE model = 'tp_dom';

-- 2. a row outside the model (null label, "nulls": "skip") whose array has
-- two dimensions: a DELETE that retrains still goes through
CREATE TABLE tp_shape (id int PRIMARY KEY, y text, x float8[]);
INSERT INTO tp_shape SELECT id, CASE WHEN label < 5 THEN 'low' ELSE 'high' END, pixels[1:8] FROM digits;
SELECT model, rows FROM unlearn_train('tp_shape', 'tp_shape', 'y', '{x}', sigma => 10, options => '{"nulls": "skip"}');
INSERT INTO tp_shape VALUES (5001, 'low', array_fill(1000::float8, ARRAY[8]));
INSERT INTO tp_shape VALUES (5002, NULL, '{{1,2},{3,4}}');
DELETE FROM tp_shape WHERE id = 5001;
SELECT rows, skipped, rows = (SELECT count(*) FROM tp_shape WHERE y IS NOT NULL) AS rows_match
FROM unlearn.status WHERE model = 'tp_shape';

-- 3. the passes call no function of the extension's schema: a retrain in a
-- non-superuser's DELETE still goes through without USAGE on it
CREATE ROLE tp_owner;
CREATE SCHEMA tp_s AUTHORIZATION tp_owner;
SET ROLE tp_owner;
CREATE TABLE tp_s.tp_own (id int PRIMARY KEY, y boolean, a float8, b float8);
INSERT INTO tp_s.tp_own SELECT g, g % 2 = 0, g % 7, (g % 2) + (g % 5) / 10.0 FROM generate_series(1, 300) g;
SELECT model, rows FROM unlearn_train('tp_own', 'tp_s.tp_own', 'y', '{a,b}', sigma => 10);
INSERT INTO tp_s.tp_own VALUES (1001, true, 1000, 1000);
RESET ROLE;
REVOKE USAGE ON SCHEMA public FROM PUBLIC;
SET ROLE tp_owner;
DELETE FROM tp_s.tp_own WHERE id = 1001;
RESET ROLE;
GRANT USAGE ON SCHEMA public TO PUBLIC;
SELECT rows, retrains FROM unlearn.models WHERE model = 'tp_own';

-- 4. the internal row functions and the moments aggregate on bad input:
-- errors, or NULL, never a crash
SELECT unlearn._column_moments(NULL::float8[], 1);
SELECT unlearn._column_moments(x, NULL) FROM (VALUES ('{1}'::float8[]), ('{2}')) v(x);
SELECT unlearn._column_moments(x, 2) FROM (VALUES ('{1,2,3}'::float8[])) v(x);
SELECT unlearn._column_moments(x, 1) FROM (VALUES ('{1,3}'::float8[]), ('{5,7}')) v(x);
SELECT unlearn._row_margin('{1,2}', '{3,4}') AS margin, unlearn._row_class('{1,2}', '{1,-1,-1,1}', 2) AS of_two,
	unlearn._row_class('{1,2}', '{-1,0}', 1) AS negative, unlearn._row_class('{1,2}', '{1,0}', 1) AS positive;
SELECT unlearn._row_margin('{1}', '{1,2}');
SELECT unlearn._row_margin('{1,NULL}', '{1,2}');
SELECT unlearn._row_class('{1,2}', '{1,2,3}', 2);
SELECT unlearn._row_class('{1,2}', '{1,2}', 0);
SELECT unlearn._row_values(1, true, 2.5::numeric, 3::smallint);
SELECT unlearn._row_values('a'::text);
SELECT unlearn._row_values(VARIADIC ARRAY[1, 2]);
SELECT unlearn._row_x('m', '{2,1,2,2,0,0}', '{1,2}') AS mapped;
SELECT unlearn._row_x('m', '{2,1,2,2,0}', '{1,2}');
SELECT unlearn._row_x('m', '{2,1,2,2,0,0}', '{1,2,3}');
SELECT unlearn._row_x('m', NULL, '{1,NaN}');
SELECT unlearn._row_target('m', 7, '7'), unlearn._row_target('m', 7, '8'), unlearn._row_target('m', 2.5, NULL);
SELECT unlearn._row_target('m', 'NaN'::float8, NULL);
SELECT unlearn._row_target('m', '2020-01-01'::date, 'x');

-- 5. parallel states never leave the extension's functions: EXECUTE on the
-- moments support functions is not PUBLIC's
SET ROLE tp_owner;
SELECT unlearn._moments_final('\x00'::bytea);
RESET ROLE;

-- the role is cluster-wide: leave none behind
SELECT unlearn_drop('tp_own');
DROP SCHEMA tp_s CASCADE;
DROP ROLE tp_owner;

-- 6. the census's array shape (unlearn._array_shape): null, empty, a
-- null element in one dimension, two dimensions, other element types
SELECT unlearn._array_shape(NULL::float8[]) AS null_array, unlearn._array_shape('{}'::float8[]) AS empty,
	   unlearn._array_shape('{1,NULL,3}'::float8[]) AS null_element,
	   unlearn._array_shape('{{1,NULL},{2,3}}'::float8[]) AS two_dims,
	   unlearn._array_shape('{1,2,3}'::int[]) AS ints;
-- columns named like the census's own (key, s) do not shadow them: one
-- row with a null element skipped, one row outside the declared classes
CREATE TABLE tp_names (id int PRIMARY KEY, key text, s float8[]);
INSERT INTO tp_names SELECT id, CASE WHEN label < 5 THEN 'low' ELSE 'high' END, pixels FROM digits;
INSERT INTO tp_names VALUES (5001, 'low', array_fill(NULL::float8, ARRAY[64]));
INSERT INTO tp_names SELECT 5002, 'other', pixels FROM digits WHERE id = 1;
SELECT model FROM unlearn_train('tp_names', 'tp_names', 'key', '{s}', sigma => 10, options => '{"nulls": "skip", "classes": ["low", "high"]}');
SELECT model, rows, skipped FROM unlearn.status WHERE model = 'tp_names';
SELECT rows = (SELECT count(*) FROM tp_names WHERE key IN ('low', 'high') AND id <> 5001) AS rows_match
FROM unlearn.models WHERE model = 'tp_names';
-- under "nulls": "error" the null element is refused
SELECT model FROM unlearn_train('tp_names_strict', 'tp_names', 'key', '{s}', options => '{"classes": ["low", "high"], "nulls": "error"}');
SELECT unlearn_drop('tp_names');
DROP TABLE tp_names;

-- 7. the gradient-only pass aggregate refuses a w that changes between
-- rows, as the public one does
SELECT unlearn._pass_gradient(x, 1, w, 'logistic')
FROM (VALUES ('{1,2}'::float8[], '{0,0}'::float8[]), ('{1,2}', '{0,1}')) v(x, w);

-- 8. the row map at its edges, against the map's formula computed here
-- (column_map.c: z = clamp((x - c) / s, +-1e150), then with the intercept
-- a, z / max(D, ||z||)); map: dims, intercept, a, D, pooled, columns,
-- centres, spreads
-- an array column (one centre and spread): both coordinates clamped
SELECT abs(x[1] - 1e150 / n) < 1e-15 AND abs(x[2] + 1e150 / n) < 1e-15 AND x[3] = 0
	   AND abs(x[4] / (2 / n) - 1) < 1e-12 AS pooled_clamped
FROM (SELECT unlearn._row_x('m', '{3,1,2,3,1,1,0,1e-200}', '{1e200,-1e200,0}') AS x,
			 sqrt(2 * 1e150::float8 * 1e150 + 4) AS n) v;
-- separate columns, each with its own centre and spread, ||z|| above D
SELECT abs(x[1] - 4 / n) < 1e-15 AND abs(x[2] + 8 / n) < 1e-15 AND abs(x[3] - 2 / n) < 1e-15
	   AS columns_mapped
FROM (SELECT unlearn._row_x('m', '{2,1,2,1.5,0,2,10,-3,0.5,0.25}', '{12,-5}') AS x,
			 sqrt(16 + 64 + 4::float8) AS n) v;
-- ||z|| below D: the row is divided by D
SELECT abs(x[1] - 0.1 / 3) < 1e-15 AND abs(x[2] - 2.0 / 3) < 1e-15 AS divided_by_d
FROM (SELECT unlearn._row_x('m', '{1,1,2,3,1,1,0,10}', '{1}') AS x) v;
-- a subnormal largest entry (no finite reciprocal) and D = 0: unit norm
SELECT unlearn._row_x('m', '{2,0,1,0,1,0}', '{1e-320,0}') AS subnormal_unit;
-- a zero spread (only a hand-made map has one) maps x = c to the clamp, not NaN
SELECT unlearn._row_x('m', '{1,0,1,1,1,1,5,0}', '{5}') AS zero_spread;
-- with a map, the length is checked before the values
SELECT unlearn._row_x('m', '{2,1,2,2,0,0}', '{1,NaN,3}');
SELECT unlearn._row_x('m', '{2,1,2,2,0,0}', '{1,Infinity}');
-- a name of any length, unterminated in the argument, only names the row
SELECT array_length(unlearn._row_x(repeat('m', 100000), '{2,1,2,2,0,0}', '{1,2}'), 1) AS long_name;
