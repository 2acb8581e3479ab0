-- Bad input: every case gets a clear error with a SQLSTATE, and leaves
-- nothing behind.
\set VERBOSITY default
\set SHOW_CONTEXT never
CREATE TABLE bad (id int, y boolean, a float8, b float8, v float8[], t text, n numeric);
SELECT count(*) AS models_before FROM unlearn.models \gset

-- empty table
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{a,b}');
INSERT INTO bad VALUES (1, true, 1, 2, '{1,2}', 'x', 1), (2, false, 2, 1, '{2,1}', 'y', 2),
	(3, true, 1, 1, '{1,1}', 'x', 3);
-- NULL, NaN and Inf features
UPDATE bad SET a = NULL WHERE id = 1;
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{a,b}', options => '{"nulls": "error"}');
-- a value that is not finite: outside the model under "nulls": "skip"
-- (34_nonfinite), an error under "error"
UPDATE bad SET a = 'NaN' WHERE id = 1;
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{a,b}', options => '{"nulls": "error"}');
UPDATE bad SET a = '-Infinity' WHERE id = 1;
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{a,b}', options => '{"nulls": "error"}');
UPDATE bad SET a = 1 WHERE id = 1;
-- rows of different dimensions, nulls inside arrays
UPDATE bad SET v = '{1,2,3}' WHERE id = 2;
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{v}');
UPDATE bad SET v = '{1,NULL}' WHERE id = 2;
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{v}', options => '{"nulls": "error"}');
UPDATE bad SET v = '{2,1}' WHERE id = 2;
-- null label, single class
UPDATE bad SET y = NULL WHERE id = 2;
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{a,b}', options => '{"nulls": "error"}');
UPDATE bad SET y = true;
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{a,b}');
UPDATE bad SET y = (id <> 2);
-- unknown and non-numeric columns, label as feature
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{a,nope}');
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{a,t}');
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{a,y}');
SELECT * FROM unlearn_train('bad', 'bad', 'nope', '{a,b}');
SELECT * FROM unlearn_train('bad', 'bad', 't', '{a,b}', loss => 'squared');
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{}');
-- more features than rows (p = 4 with the intercept, 3 rows)
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{a,b,n}');
-- not a table
CREATE VIEW bad_view AS SELECT * FROM bad;
SELECT * FROM unlearn_train('bad', 'bad_view', 'y', '{a,b}');
SELECT * FROM unlearn_train('bad', 'no_such_table', 'y', '{a,b}');
-- parameters
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{a,b}', loss => 'hinge');
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{a,b}', lambda => 0);
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{a,b}', lambda => 'NaN');
-- lambda n must stay finite; a name the catalog's key cannot index, or a
-- table that does not exist, is refused before any pass
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{a,b}', lambda => 1e308);
SELECT * FROM unlearn_train(repeat('m', 1025), 'bad', 'y', '{a,b}');
SELECT * FROM unlearn_train('bad', 4000000000::oid, 'y', '{a,b}');
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{a,b}', sigma => -1);
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{a,b}', epsilon => 0);
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{a,b}', delta => 1);
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{a,b}', options => '{"bound": "loose"}');
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{a,b}', options => '{"on_exhausted": "ignore"}');
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{a,b}', options => '{"steps": "all"}');
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{a,b}', options => '{"bounds": "guo"}');
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{a,b}', options => '{"intercept": "yes"}');
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{a,b}', options => '{"nulls": ["skip"]}');
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{a,b}', options => '{"centre": [0, true]}');
SELECT * FROM unlearn_train('bad', 'bad', 'y', '{a,b}', options => '["nulls", "skip"]');
SELECT * FROM unlearn_train('bad', 'bad', 'y', NULL);
SELECT * FROM unlearn_train('', 'bad', 'y', '{a,b}');
SELECT unlearn_budget(1, 1, 0);

-- nothing was left behind: no model, no triggers
SELECT count(*) = :models_before AS no_new_models FROM unlearn.models;
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'bad'::regclass;

-- a name that is taken (the model skips rows with nulls: prediction refuses them)
SELECT model FROM unlearn_train('bad', 'bad', 'y', '{a,b}', lambda => 0.1, options => '{"nulls": "skip"}');
SELECT model FROM unlearn_train('bad', 'bad', 'y', '{a,b}');

-- prediction errors
SELECT unlearn_predict('bad', '{1,2,3}');
SELECT unlearn_predict('bad', '{1,NaN}');
SELECT unlearn_predict('bad', '{1,Infinity}');
SELECT unlearn_predict('bad', '{1,NULL}');
SELECT unlearn_predict('bad', '{{1,2}}');
SELECT unlearn_predict('nope', '{1,2}');
SELECT unlearn_predict_class('diab', '{1,2,3,4,5,6,7,8,9,10}');
SELECT unlearn_coef('nope');
SELECT unlearn_drop('nope');
SELECT * FROM unlearn_verify('nope');

-- a null label on insert into a trained table leaves the row outside the
-- model, as does a null feature under "nulls": "skip" (no model refuses a
-- write); a label first seen after training retrains the model
-- with a class for it, and deleting that class's last row retrains it
-- without: the public class list always names the labels of the rows there
-- are (test 14 goes further)
INSERT INTO digits (label, pixels) VALUES (NULL, array_fill(0::float8, ARRAY[64]));
SELECT skipped FROM unlearn.models WHERE model = 'digits10';
DELETE FROM digits WHERE label IS NULL;
INSERT INTO digits (label, pixels) VALUES (12, array_fill(0::float8, ARRAY[64]));
SELECT classes FROM unlearn.models WHERE model = 'digits10';
DELETE FROM digits WHERE label = 12;
SELECT classes, retrains FROM unlearn.models WHERE model = 'digits10';
INSERT INTO digits (label, pixels) VALUES (1, array_fill(0::float8, ARRAY[63]));
INSERT INTO bad VALUES (4, true, NULL, 1);
SELECT rows, inserted FROM unlearn.models WHERE model = 'bad';
SELECT unlearn_drop('bad');
DROP VIEW bad_view;
DROP TABLE bad;

-- the SQLSTATEs behind the messages above
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE q;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE;
END $$;
CREATE TABLE bad2 (y boolean, a float8, v float8[]);
INSERT INTO bad2 VALUES (true, 'NaN', '{1}'), (false, 1, '{1,2}');
SELECT q, pg_temp.sqlstate_of(q) FROM (VALUES
	('SELECT unlearn_train(''x'', ''bad2'', ''y'', ''{a}'', options => ''{"nulls": "error"}'')'),
	('SELECT unlearn_train(''x'', ''bad2'', ''y'', ''{v}'')'),
	('SELECT unlearn_train(''x'', ''bad2'', ''y'', ''{nope}'')'),
	('SELECT unlearn_train(''x'', ''bad2'', ''y'', ''{a}'', lambda => 0)'),
	('SELECT unlearn_train(''x'', ''bad2'', ''y'', NULL)'),
	('SELECT unlearn_train(''ones'', ''ones_sevens'', ''is_one'', ''{pixels}'')'),
	('SELECT unlearn_predict(''ones'', ''{1}'')'),
	('SELECT unlearn_predict(''nope'', ''{1}'')')
) v(q);
DROP TABLE bad2;

-- training under a transaction snapshot: rows committed between the
-- snapshot and the lock on the table would be missing from the model
CREATE TABLE bad3 AS SELECT g AS id, g % 2 = 0 AS y, sin(g) AS a FROM generate_series(1, 20) g;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT * FROM unlearn_train('bad3', 'bad3', 'y', '{a}');
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT pg_temp.sqlstate_of('SELECT unlearn_train(''bad3'', ''bad3'', ''y'', ''{a}'')');
ROLLBACK;
SELECT count(*) AS bad3_models FROM unlearn.models WHERE model = 'bad3';
DROP TABLE bad3;
