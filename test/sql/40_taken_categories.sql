-- category(column): the categories are taken from the model's rows, the
-- distinct non-null values of the column, in the type's order (text
-- bytewise).  They are public, like classes taken from the rows, so they
-- are always exactly the values the model's rows have: a change after
-- which a category has no row left, or a row has a value that is no
-- category, retrains the model, which takes them afresh.
--
-- 1. A taken model equals, bit for bit, one declared with the same
--    categories; unlearn.models shows the features and taken_categories.
-- 2. A null goes to "other" without a retrain; a new value (INSERT, an
--    UPDATE from a null, whose features stay as they were) retrains with it; the last row of a category leaving (DELETE,
--    UPDATE) retrains without it.  Each step is certified, a refit, and
--    has rows = count(*).
-- 3. ROLLBACK restores the features, the weights and the state bit for bit.
-- 4. An integer column in numeric order, a boolean column, a classifier.
-- 5. A filter: only the filtered rows' values are categories.
-- 6. Deferred and async removal are refused (a queued row is encoded
--    with the categories of its time, which a retrain may change).
-- 7. A partition dropped with a category's last rows retrains without it.
-- 8. Refusals: a map other than "standardize", Noisy-GD, a column taken
--    twice or both taken and declared, more than 1,000 values, a value
--    longer than 200 bytes; a role that may not read the column learns
--    nothing of its values.
-- 9. A model that releases nothing keeps no taken category: too few rows
--    (a retrain whose new categories make more weights than rows, a
--    DELETE, TRUNCATE) and suspended (a failed expression; then a DELETE,
--    TRUNCATE or a dropped partition), each write going through; the next
--    training takes them afresh.
-- 10. A filter and "nulls": "skip" with a feature that fails outside the
--    filter: the categories' queries evaluate nothing for rows the filter
--    leaves out.
-- 11. Fisher: a retrain that adds categories releases at the new size.
SET client_min_messages = warning;
CREATE TABLE tc (id int PRIMARY KEY, region text, plan int, paying boolean, visits float8, y float8);
INSERT INTO tc SELECT i, (ARRAY['north', 'south', 'east', NULL])[i % 4 + 1], (ARRAY[2, 10, 1])[i % 3 + 1],
	   i % 5 = 0, (i * 7) % 23, (i % 4) * 1.5 + (i % 3) * 0.7 + ((i * 7) % 23) * 0.1 + sin(i)
FROM generate_series(1, 400) i;
CREATE FUNCTION tc_check(model text) RETURNS TABLE (rows_match boolean, certified boolean, refit boolean)
LANGUAGE sql AS $$
	SELECT m.rows = (SELECT count(*) FROM tc), v.certified, v.retrain_distance < 1e-9
	FROM unlearn.models m, unlearn_verify(model) v WHERE m.model = tc_check.model
$$;

-- 1.
SELECT model, rows FROM unlearn_train('tc_taken', 'tc', 'y', ARRAY['visits', 'category(region)', 'category(plan)'],
									  loss => 'squared', sigma => 0);
SELECT dims, taken_categories, features[2:5] AS region, features[6:9] AS plan
FROM unlearn.models WHERE model = 'tc_taken';
SELECT model, rows FROM unlearn_train('tc_declared', 'tc', 'y',
	ARRAY['visits', 'category(region, ''{east,north,south}'')', 'category(plan, ''{1,2,10}'')'],
	loss => 'squared', sigma => 0);
SELECT a.features = b.features AS same_features, bool_and(x = z) AS same_bits
FROM unlearn.models a, unlearn.models b, unnest(a.coef, b.coef) AS t (x, z)
WHERE a.model = 'tc_taken' AND b.model = 'tc_declared' GROUP BY 1;
SELECT unlearn_drop('tc_declared');

-- 2.
SET client_min_messages = notice;
INSERT INTO tc VALUES (1001, NULL, 1, false, 3, 2.5);
SELECT retrains, dims FROM unlearn.models WHERE model = 'tc_taken';
INSERT INTO tc VALUES (1002, 'west', 1, false, 3, 2.5);
SELECT retrains, dims, features[5] AS west FROM unlearn.models WHERE model = 'tc_taken';
SELECT * FROM tc_check('tc_taken');
UPDATE tc SET region = 'moon' WHERE id = 1001;
SELECT retrains, dims, features[3] AS moon FROM unlearn.models WHERE model = 'tc_taken';
DELETE FROM tc WHERE id = 1002;
SELECT retrains, dims, features[6] AS west_gone FROM unlearn.models WHERE model = 'tc_taken';
UPDATE tc SET region = NULL WHERE id = 1001;
SELECT retrains, dims, taken_categories FROM unlearn.models WHERE model = 'tc_taken';
SELECT * FROM tc_check('tc_taken');
-- a row moving between categories that stay, and a null leaving: no retrain
UPDATE tc SET region = 'south' WHERE id IN (1, 4);
DELETE FROM tc WHERE id = 1001;
SELECT retrains, dims FROM unlearn.models WHERE model = 'tc_taken';
SELECT * FROM tc_check('tc_taken');

-- 3.
SET client_min_messages = warning;
CREATE TABLE tc_before AS SELECT features, coef, dims, s.noise, s.anchor, s.column_sums
FROM unlearn.models JOIN unlearn.model_state s USING (model) WHERE model = 'tc_taken';
BEGIN;
DELETE FROM tc WHERE region = 'east';
SELECT retrains, dims, features[2:4] AS without_east FROM unlearn.models WHERE model = 'tc_taken';
ROLLBACK;
SELECT b.features = m.features AND b.coef = m.coef AND b.dims = m.dims AND b.noise = s.noise
	   AND b.anchor = s.anchor AND b.column_sums = s.column_sums AS restored
FROM tc_before b, unlearn.models m JOIN unlearn.model_state s USING (model) WHERE m.model = 'tc_taken';
DROP TABLE tc_before;
SELECT unlearn_drop('tc_taken');

-- 4.
SELECT model, rows, classes FROM unlearn_train('tc_paying', 'tc', 'paying',
	ARRAY['visits', 'category(plan)', 'category(region)'], sigma => 5);
SELECT dims, features[2:4] AS plan_in_numeric_order FROM unlearn.models WHERE model = 'tc_paying';
SELECT model, rows FROM unlearn_train('tc_bool', 'tc', 'y', ARRAY['visits', 'category(paying)'],
									  loss => 'squared', sigma => 0);
SELECT dims, features[2:4] AS paying FROM unlearn.models WHERE model = 'tc_bool';
DELETE FROM tc WHERE plan = 10;
INSERT INTO tc VALUES (1003, 'north', 7, true, 3, 2.5), (1004, 'south', 7, false, 5, 1.5);
SELECT model, retrains, dims, features[2:4] AS plan FROM unlearn.models WHERE model = 'tc_paying';
SELECT model, retrains FROM unlearn.models WHERE model = 'tc_bool';
SELECT rows_match, certified FROM tc_check('tc_paying');
SELECT unlearn_drop('tc_paying'), unlearn_drop('tc_bool');

-- 5.
SELECT model, rows FROM unlearn_train('tc_north', 'tc', 'y', ARRAY['visits', 'category(plan)'],
									  loss => 'squared', sigma => 0, filter => 'region = ''north''');
UPDATE tc SET plan = 99 WHERE id = 3;		-- outside the filter: no category
SELECT retrains, features[2:4] AS plan FROM unlearn.models WHERE model = 'tc_north';
UPDATE tc SET region = 'north' WHERE id = 3;	-- moves in with it
SELECT retrains, features[2:5] AS plan FROM unlearn.models WHERE model = 'tc_north';
SELECT m.rows = (SELECT count(*) FROM tc WHERE region = 'north') AS rows_match, v.certified,
	   v.retrain_distance < 1e-9 AS refit
FROM unlearn.models m, unlearn_verify('tc_north') v WHERE m.model = 'tc_north';
SELECT unlearn_drop('tc_north');

-- 6.
SELECT unlearn_train('tc_bad', 'tc', 'y', ARRAY['visits', 'category(region)'], loss => 'squared',
					 options => '{"removal": "deferred"}');
SELECT unlearn_train('tc_bad', 'tc', 'y', ARRAY['visits', 'category(region)'], loss => 'squared',
					 options => '{"removal": "async"}');

-- 7.
CREATE TABLE tp (id int, region text, x float8, y float8) PARTITION BY LIST (region);
CREATE TABLE tp_north PARTITION OF tp FOR VALUES IN ('north');
CREATE TABLE tp_south PARTITION OF tp FOR VALUES IN ('south');
CREATE TABLE tp_east PARTITION OF tp FOR VALUES IN ('east');
INSERT INTO tp SELECT i, (ARRAY['north', 'south', 'east'])[i % 3 + 1], i % 17, (i % 3) + (i % 17) * 0.2 + sin(i)
FROM generate_series(1, 300) i;
SELECT model, rows FROM unlearn_train('tp_taken', 'tp', 'y', ARRAY['x', 'category(region)'],
									  loss => 'squared', sigma => 0);
DROP TABLE tp_east;
SELECT retrains, rows, features[2:4] AS without_east FROM unlearn.models WHERE model = 'tp_taken';
SELECT certified, retrain_distance < 1e-9 AS refit FROM unlearn_verify('tp_taken');
SELECT unlearn_drop('tp_taken');
DROP TABLE tp;

-- 8.
SELECT unlearn_train('tc_bad', 'tc', 'y', '{category(region)}', loss => 'squared',
					 options => '{"preprocess": "none"}');
SELECT unlearn_train('tc_bad', 'tc', 'paying', '{category(region)}', mechanism => 'noisy_gd');
SELECT unlearn_train('tc_bad', 'tc', 'y', '{category(region),category(region)}', loss => 'squared');
SELECT unlearn_train('tc_bad', 'tc', 'y', ARRAY['category(region, ''{zz}'')', 'category(region)'],
					 loss => 'squared');
SELECT unlearn_train('tc_bad', 'tc', 'y', ARRAY['category(region, region, region)'], loss => 'squared');
SELECT unlearn_train('tc_bad', 'tc', 'y', '{category(visits)}', loss => 'squared');
CREATE TABLE tc_many (id int PRIMARY KEY, v int, y float8);
INSERT INTO tc_many SELECT i, i % 1001, sin(i) FROM generate_series(1, 2100) i;
SELECT unlearn_train('tc_bad', 'tc_many', 'y', '{category(v)}', loss => 'squared');
-- 1,000 values train; a 1,001st suspends the model, the INSERT goes through
DELETE FROM tc_many WHERE v = 1000;
SELECT model FROM unlearn_train('tc_many', 'tc_many', 'y', '{category(v)}', loss => 'squared');
SELECT state, dims FROM unlearn.models WHERE model = 'tc_many';
INSERT INTO tc_many VALUES (5001, 1000, 0.5);
SET client_min_messages = warning;
SELECT state, dims FROM unlearn.models WHERE model = 'tc_many';
SELECT unlearn_drop('tc_many');
DROP TABLE tc_many;
-- a value longer than 200 bytes is refused at training; at a retrain it
-- suspends the model, and the INSERT goes through
CREATE TABLE tc_long (id int PRIMARY KEY, v text, y float8);
INSERT INTO tc_long SELECT i, (ARRAY['a', 'b'])[i % 2 + 1], sin(i) FROM generate_series(1, 40) i;
INSERT INTO tc_long VALUES (100, repeat('x', 201), 0.5);
SELECT unlearn_train('tc_bad', 'tc_long', 'y', '{category(v)}', loss => 'squared');
DELETE FROM tc_long WHERE id = 100;
SELECT model FROM unlearn_train('tc_long', 'tc_long', 'y', '{category(v)}', loss => 'squared');
INSERT INTO tc_long VALUES (101, repeat('y', 201), 0.5);
SELECT state, dims FROM unlearn.models WHERE model = 'tc_long';
SELECT unlearn_drop('tc_long');
DROP TABLE tc_long;
CREATE ROLE tc_reader;
GRANT USAGE ON SCHEMA public TO tc_reader;
GRANT SELECT (id, visits, y), TRIGGER ON tc TO tc_reader;
SET ROLE tc_reader;
SELECT unlearn_train('tc_spy', 'tc', 'y', '{visits,category(region)}', loss => 'squared');
RESET ROLE;
SELECT count(*) AS spy_models FROM unlearn.models WHERE model = 'tc_spy';

-- 9.
CREATE TABLE tf (id int PRIMARY KEY, region text, x float8, y float8);
INSERT INTO tf SELECT i, (ARRAY['a', 'b'])[i % 2 + 1], i, i % 3 FROM generate_series(1, 6) i;
SELECT model, rows FROM unlearn_train('tf_few', 'tf', 'y', ARRAY['x', 'category(region)'],
									  loss => 'squared', sigma => 0);
SELECT state, dims FROM unlearn.models WHERE model = 'tf_few';
-- two new regions: 7 weights for 6 rows, so the model rests
UPDATE tf SET region = CASE id WHEN 1 THEN 'c' ELSE 'd' END WHERE id IN (1, 4);
SELECT state, dims, features FROM unlearn.models WHERE model = 'tf_few';
INSERT INTO tf SELECT i, 'a', i, i % 3 FROM generate_series(7, 12) i;
SELECT state, dims, rows FROM unlearn.models WHERE model = 'tf_few';
DELETE FROM tf WHERE id > 3;
SELECT state, dims, features FROM unlearn.models WHERE model = 'tf_few';
INSERT INTO tf SELECT i, 'e', i, i % 3 FROM generate_series(20, 30) i;
SELECT state, dims, features[2:3] AS taken_again FROM unlearn.models WHERE model = 'tf_few';
TRUNCATE tf;
SELECT state, dims, features, rows FROM unlearn.models WHERE model = 'tf_few';
SELECT unlearn_drop('tf_few');
INSERT INTO tf SELECT i, (ARRAY['a', 'b', 'secret'])[i % 3 + 1], i % 7 + 1, i % 3 FROM generate_series(1, 60) i;
SELECT model FROM unlearn_train('tf_ln', 'tf', 'y', ARRAY['ln(x)', 'category(region)'], loss => 'squared',
								sigma => 0);
INSERT INTO tf VALUES (1000, 'a', 0, 1);
SELECT state, dims FROM unlearn.models WHERE model = 'tf_ln';
DELETE FROM tf WHERE region = 'secret';
SELECT state, dims, array_to_string(features, ' ') LIKE '%secret%' AS knows_secret
FROM unlearn.models WHERE model = 'tf_ln';
SELECT unlearn_drop('tf_ln');
-- suspended, then TRUNCATE (rows leave without a statement)
DELETE FROM tf;
INSERT INTO tf SELECT i, (ARRAY['a', 'b', 'secret'])[i % 3 + 1], i % 7 + 1, i % 3 FROM generate_series(2001, 2060) i;
SELECT model FROM unlearn_train('tf_ln', 'tf', 'y', ARRAY['ln(x)', 'category(region)'], loss => 'squared',
								sigma => 0);
INSERT INTO tf VALUES (3000, 'a', 0, 1);
TRUNCATE tf;
SELECT state, dims, array_to_string(features, ' ') LIKE '%secret%' AS knows_secret, rows
FROM unlearn.models WHERE model = 'tf_ln';
SELECT unlearn_drop('tf_ln');
-- suspended, then the partition of a category dropped
CREATE TABLE tfp (id int, region text, x float8, y float8) PARTITION BY LIST (region);
CREATE TABLE tfp_a PARTITION OF tfp FOR VALUES IN ('a');
CREATE TABLE tfp_secret PARTITION OF tfp FOR VALUES IN ('secret');
INSERT INTO tfp SELECT i, (ARRAY['a', 'secret'])[i % 2 + 1], i % 7 + 1, i % 3 FROM generate_series(1, 60) i;
SELECT model FROM unlearn_train('tfp_ln', 'tfp', 'y', ARRAY['ln(x)', 'category(region)'], loss => 'squared',
								sigma => 0);
INSERT INTO tfp VALUES (3000, 'a', 0, 1);
DROP TABLE tfp_secret;
SELECT state, dims, array_to_string(features, ' ') LIKE '%secret%' AS knows_secret,
	   rows = (SELECT count(*) FROM tfp WHERE x > 0) AS rows_match
FROM unlearn.models WHERE model = 'tfp_ln';
SELECT unlearn_drop('tfp_ln');
DROP TABLE tfp;

-- 10.
DELETE FROM tf;
INSERT INTO tf SELECT i, (ARRAY['a', 'b', 'c'])[i % 3 + 1], i % 5 + 1, i % 4 FROM generate_series(1, 40) i;
INSERT INTO tf VALUES (100, 'a', 0, 0.3);
SELECT model FROM unlearn_train('tf_filter', 'tf', 'y', ARRAY['ln(x)', 'category(region)'], loss => 'squared',
	sigma => 0, options => '{"nulls": "skip"}',
	filter => 'x > 0 AND x + 1 > 1 AND x * 2 > 0 AND x * 3 > 0 AND x * 4 > 0 AND x * 5 > 0');
INSERT INTO tf VALUES (101, NULL, 0, 0.3);
DELETE FROM tf WHERE region = 'c';
SELECT rows = (SELECT count(*) FROM tf WHERE x > 0) AS rows_match, dims FROM unlearn.models
WHERE model = 'tf_filter';
SELECT unlearn_drop('tf_filter');

-- 11.
DELETE FROM tf;
INSERT INTO tf SELECT i, (ARRAY['a', 'b', 'c'])[i % 3 + 1], i % 5, (i % 2)::float8 FROM generate_series(1, 300) i;
ALTER TABLE tf ADD COLUMN paying boolean;
UPDATE tf SET paying = (id * 7) % 5 < 2;
SELECT model FROM unlearn_train('tf_fisher', 'tf', 'paying', ARRAY['x', 'category(region)'],
								mechanism => 'fisher');
INSERT INTO tf SELECT i, 'new' || i, i % 5, 0, i % 2 = 0 FROM generate_series(1000, 1019) i;
SELECT state, dims, cardinality(coef) AS weights FROM unlearn.models WHERE model = 'tf_fisher';
SELECT certified FROM unlearn_verify('tf_fisher');
SELECT unlearn_drop('tf_fisher');
DROP TABLE tf;

RESET client_min_messages;
DROP FUNCTION tc_check(text);
DROP TABLE tc;
REVOKE ALL ON SCHEMA public FROM tc_reader;
DROP ROLE tc_reader;
