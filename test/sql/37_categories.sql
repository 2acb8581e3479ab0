-- category(column, '{a,b,...}'): one-hot encoding done by the extension.
-- Each declared category is a boolean feature (the column equals it), and
-- one more, "other", is 1 for a null or an undeclared value, so no row is
-- skipped for either.  The categories are declared, so they depend on no
-- row (categories taken from the rows: 40_taken_categories).
--
-- 1. A least-squares model on a text, an integer and a boolean category
--    equals, bit for bit, one trained on the same expressions written by
--    hand (the "other" ones as IN lists, which passes read one expression
--    at a time); unlearn.models.features shows them.
-- 2. A null and an undeclared value go to "other": every row is in the
--    model; INSERT, UPDATE and DELETE of such rows keep it a refit.
-- 3. Prediction on whole rows reads the categories.
-- 4. Errors: no categories, a column of another type, a null or repeated
--    category, a non-literal list.
-- 5. Passes and reads compute a group in one lookup
--    (unlearn._category_values): its values equal the group's expressions
--    on every value, a null, a char(n) value with trailing spaces and an
--    integer of another width included; a group is recognised only as
--    category() wrote it (a DEBUG1 line names it), and a model read that
--    way scores, evaluates and retrains as the hand-written one.
SET client_min_messages = warning;
CREATE TABLE cat (id int PRIMARY KEY, region text, plan int, paying boolean, visits float8, y float8);
INSERT INTO cat SELECT i, (ARRAY['north', 'south', 'east', 'west', NULL])[i % 5 + 1], i % 4, i % 3 = 0,
	   (i * 7) % 23, (i % 5) * 1.5 + (i % 4) * 0.7 + (i % 3 = 0)::int + ((i * 7) % 23) * 0.1 + sin(i)
FROM generate_series(1, 500) i;

-- 1.
SELECT model, rows, classes FROM unlearn_train('cat_ls', 'cat', 'y',
	ARRAY['visits', 'category(region, ''{north,south,east}'')', 'category(plan, ''{0,1,2}'')',
		  'category(paying, ''{true}'')'], loss => 'squared', sigma => 0);
SELECT dims, features[2] AS north, features[5] AS other_region FROM unlearn.models WHERE model = 'cat_ls';
SELECT model, rows FROM unlearn_train('cat_hand', 'cat', 'y',
	ARRAY['visits', 'COALESCE(region = ''north'', false)', 'COALESCE(region = ''south'', false)',
		  'COALESCE(region = ''east'', false)',
		  'NOT COALESCE(region IN (''north'', ''south'', ''east''), false)',
		  'COALESCE(plan = 0, false)', 'COALESCE(plan = 1, false)', 'COALESCE(plan = 2, false)',
		  'NOT COALESCE(plan IN (0, 1, 2), false)', 'COALESCE(paying = true, false)',
		  'NOT COALESCE(paying IN (true), false)'], loss => 'squared', sigma => 0);
SELECT bool_and(x = z) AS same_bits FROM unlearn.models a, unlearn.models b, unnest(a.coef, b.coef) AS t (x, z)
WHERE a.model = 'cat_ls' AND b.model = 'cat_hand';

-- 2.
SELECT rows = (SELECT count(*) FROM cat) AS every_row, skipped FROM unlearn.models WHERE model = 'cat_ls';
INSERT INTO cat VALUES (1001, 'atlantis', 9, NULL, 3, 2.5), (1002, NULL, NULL, true, 4, 1.5);
UPDATE cat SET region = 'north' WHERE region IS NULL AND id < 100;
UPDATE cat SET plan = 7 WHERE id % 11 = 0;
DELETE FROM cat WHERE region = 'west' AND id % 2 = 0;
SELECT rows = (SELECT count(*) FROM cat) AS every_row, skipped FROM unlearn.models WHERE model = 'cat_ls';
SELECT certified, retrain_distance < 1e-9 AS refit FROM unlearn_verify('cat_ls');

-- 3.
SELECT count(*) = count(s.score) AS every_row_scored
FROM cat c, LATERAL unlearn_score_row('cat_ls', c) s;
SELECT abs(s.score - unlearn_predict('cat_ls', ARRAY[3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 1])) < 1e-12 AS undeclared_is_other
FROM cat c, LATERAL unlearn_score_row('cat_ls', c) s WHERE c.id = 1001;

-- a varchar and a char(n) column; categories are compared as the column's values
CREATE TABLE cat_v (id int PRIMARY KEY, v varchar(5), c char(3), y float8);
INSERT INTO cat_v SELECT i, (ARRAY['a', 'b', 'c'])[i % 3 + 1], (ARRAY['x', 'y'])[i % 2 + 1], i % 7 FROM generate_series(1, 60) i;
SELECT model, rows FROM unlearn_train('cat_v', 'cat_v', 'y', ARRAY['category(v, ''{a,b,"q\"uo''''te"}'')',
									  'category(c, ''{x}'')'], loss => 'squared');
SELECT features[3] AS quoted, features[4] AS other FROM unlearn.models WHERE model = 'cat_v';
SELECT unlearn_drop('cat_v');
SELECT unlearn_train('cat_bad', 'cat_v', 'y', ARRAY['category(c, ''{x,"x "}'')'], loss => 'squared');
DROP TABLE cat_v;

-- 4.
SELECT unlearn_train('cat_bad', 'cat', 'y', ARRAY['category(plan, ''{1,01}'')'], loss => 'squared');
SELECT unlearn_train('cat_bad', 'cat', 'y', ARRAY['category(plan, ''{1,one}'')'], loss => 'squared');
SELECT unlearn_train('cat_bad', 'cat', 'y', ARRAY['category(region, ''{}'')'], loss => 'squared');
SELECT unlearn_train('cat_bad', 'cat', 'y', ARRAY['category(region, ''north'')'], loss => 'squared');
SELECT unlearn_train('cat_bad', 'cat', 'y', ARRAY['category(visits, ''{1,2}'')'], loss => 'squared');
SELECT unlearn_train('cat_bad', 'cat', 'y', ARRAY['category(region, ''{north,NULL}'')'], loss => 'squared');
SELECT unlearn_train('cat_bad', 'cat', 'y', ARRAY['category(region, ''{north,north}'')'], loss => 'squared');
SELECT unlearn_train('cat_bad', 'cat', 'y', ARRAY['category(region, region)'], loss => 'squared');
SELECT unlearn_train('cat_bad', 'cat', 'y', ARRAY['category(nope, ''{a}'')'], loss => 'squared');

-- 5.
SELECT count(*) AS rows, bool_and(unlearn._category_values(region, '{north,south,east}'::text[])
	= ARRAY[COALESCE(region = 'north', false), COALESCE(region = 'south', false),
			COALESCE(region = 'east', false),
			NOT COALESCE(region = ANY ('{north,south,east}'::text[]), false)]::int[]::float8[]) AS text_equal,
	bool_and(unlearn._category_values(plan, '{0,1,2}'::int4[])
	= ARRAY[COALESCE(plan = 0, false), COALESCE(plan = 1, false), COALESCE(plan = 2, false),
			NOT COALESCE(plan = ANY ('{0,1,2}'::int4[]), false)]::int[]::float8[]) AS int_equal,
	bool_and(unlearn._category_values(paying, '{true}'::bool[])
	= ARRAY[COALESCE(paying = true, false), NOT COALESCE(paying = ANY ('{true}'::bool[]), false)]::int[]::float8[])
	AS bool_equal
FROM cat;
SELECT unlearn._category_values('x  '::char(3)::text, '{x,y}'::text[]) AS padded_char,
	   unlearn._category_values(NULL::text, '{x,y}'::text[]) AS null_value,
	   unlearn._category_values(2::int8, '{1,2}'::int8[]) AS int8_value,
	   unlearn._category_values('X'::text, '{x,y}'::text[]) AS case_matters;
SELECT unlearn._category_values(1.5::float8, '{1.5}'::float8[]);
SELECT unlearn._category_values('a'::text, '{a,NULL}'::text[]);
SELECT unlearn._category_values('a'::text, NULL::text[]);
SELECT unlearn._category_values('a'::text, '{}'::text[]) AS no_category;
SELECT unlearn._category_values('a'::text, '{{a,b},{c,d}}'::text[]);
SET client_min_messages = debug1;
SELECT model, rows FROM unlearn_retrain('cat_ls');
SELECT model, rows FROM unlearn_retrain('cat_hand');
SET client_min_messages = warning;
SELECT bool_and(x = z) AS same_bits FROM unlearn.models a, unlearn.models b, unnest(a.coef, b.coef) AS t (x, z)
WHERE a.model = 'cat_ls' AND b.model = 'cat_hand';
SELECT a.rows = b.rows AND a.r2 = b.r2 AS same_evaluation
FROM unlearn_evaluate('cat_ls') a, unlearn_evaluate('cat_hand') b;
SELECT count(*) AS rows, bool_and(a.score = b.score) AS same_scores
FROM unlearn_score('cat_ls') a JOIN unlearn_score('cat_hand') b USING (key);

RESET client_min_messages;
SELECT unlearn_drop('cat_ls'), unlearn_drop('cat_hand');
DROP TABLE cat;
