-- A classifier's public class list is the labels of the rows it reflects:
-- a statement that deletes a class's last row, or brings a label first
-- seen, retrains the model on the rows left, so the list never names a
-- label that only deleted rows had.  The counts behind it are the owner's.

CREATE TABLE cl AS
SELECT id, (ARRAY['zero', 'one', 'two', 'three'])[label + 1] AS digit, pixels
FROM digits WHERE label <= 3 AND id <= 900;
ALTER TABLE cl ADD PRIMARY KEY (id);
SELECT model, classes FROM unlearn_train('cl', 'cl', 'digit', '{pixels}', sigma => 5);
SELECT classes, rows FROM unlearn.models WHERE model = 'cl';

-- 1. the last rows of a class go: a retrain, and the class with them
SELECT md5(coef::text) AS coef_before FROM unlearn.models WHERE model = 'cl' \gset
BEGIN;
DELETE FROM cl WHERE digit = 'three';
SELECT classes, state FROM unlearn.models WHERE model = 'cl';
ROLLBACK;
SELECT classes, md5(coef::text) = :'coef_before' AS rollback_restores_coef
FROM unlearn.models WHERE model = 'cl';
DELETE FROM cl WHERE digit = 'three';
SELECT m.classes, m.rows, m.retrains, l.retrained AS ledger_says_retrained
FROM unlearn.models m, LATERAL (SELECT retrained FROM unlearn.ledger WHERE model = 'cl' ORDER BY id DESC LIMIT 1) l
WHERE m.model = 'cl';
-- exactly what a model trained on the rows left has
CREATE TABLE cl_fresh AS SELECT * FROM cl;
SELECT model FROM unlearn_train('cl_fresh', 'cl_fresh', 'digit', '{pixels}', sigma => 5);
SELECT a.classes = b.classes AS same_classes, a.rows = b.rows AS same_rows,
	   a.centre = b.centre AND a.spread = b.spread AS same_map,
	   array_length(unlearn_coef('cl'), 1) = array_length(unlearn_coef('cl_fresh'), 1) AS same_shape
FROM unlearn.models a, unlearn.models b WHERE a.model = 'cl' AND b.model = 'cl_fresh';
-- nothing public names the class: not the catalog, the status view, the
-- ledger, nor evaluation
SELECT count(*) AS public_mentions FROM (
	SELECT m::text AS t FROM unlearn.models m WHERE model = 'cl'
	UNION ALL SELECT s::text FROM unlearn.status s WHERE model = 'cl'
	UNION ALL SELECT l::text FROM unlearn.ledger l WHERE model = 'cl'
	UNION ALL SELECT e::text FROM unlearn_evaluate('cl') e
) x WHERE t LIKE '%three%';
SELECT certified FROM unlearn_verify('cl');

-- 2. an UPDATE that moves a class's last rows to another class
UPDATE cl SET digit = 'one' WHERE digit = 'two';
SELECT classes, retrains FROM unlearn.models WHERE model = 'cl';

-- 3. a label first seen: the model gains its class
INSERT INTO cl SELECT id + 10000, 'nine', pixels FROM digits WHERE label = 9 LIMIT 40;
SELECT classes, retrains, state FROM unlearn.models WHERE model = 'cl';
SELECT bool_or(unlearn_predict_class('cl', pixels) = 'nine') AS predicts_it FROM cl WHERE digit = 'nine';

-- 4. one label left: the model withholds its weights and names only it;
-- erasure goes on, and a second label brings the model back
DELETE FROM cl WHERE digit <> 'zero';
SELECT classes, state, coef IS NULL AS withheld FROM unlearn.models WHERE model = 'cl';
SELECT unlearn_predict('cl', (SELECT pixels FROM cl LIMIT 1));
DELETE FROM cl WHERE id IN (SELECT id FROM cl ORDER BY id LIMIT 5);
INSERT INTO cl SELECT id + 20000, 'seven', pixels FROM digits WHERE label = 7 LIMIT 30;
SELECT classes, state FROM unlearn.models WHERE model = 'cl';
SELECT certified FROM unlearn_verify('cl');

-- 5. a model that releases no weights follows the rows too: too few rows
-- for its weights, and then none
CREATE TABLE cl_small (id int PRIMARY KEY, y int, x float8[]);
INSERT INTO cl_small SELECT i, i % 3, ARRAY[sin(i), cos(i), sin(2 * i)] FROM generate_series(1, 12) i;
SELECT model, classes FROM unlearn_train('cl_small', 'cl_small', 'y', '{x}', sigma => 1);
DELETE FROM cl_small WHERE y = 2 OR id > 8;
SELECT classes, rows, state FROM unlearn.models WHERE model = 'cl_small';
DELETE FROM cl_small WHERE y = 1;
SELECT classes, rows, state FROM unlearn.models WHERE model = 'cl_small';
DELETE FROM cl_small;
SELECT classes, rows, state FROM unlearn.models WHERE model = 'cl_small';
INSERT INTO cl_small SELECT i, i % 2, ARRAY[sin(i), cos(i), sin(2 * i)] FROM generate_series(1, 12) i;
SELECT classes, rows, state FROM unlearn.models WHERE model = 'cl_small';
SELECT unlearn_drop('cl_small');
DROP TABLE cl_small;

-- 6. the counts are the owner's only
CREATE ROLE cl_stranger;
SET ROLE cl_stranger;
SELECT count(*) AS stranger_sees_counts FROM unlearn.model_state WHERE model = 'cl';
RESET ROLE;
SELECT class_rows = ARRAY[(SELECT count(*) FROM cl WHERE digit = 'seven'),
						  (SELECT count(*) FROM cl WHERE digit = 'zero')] AS owner_counts
FROM unlearn.model_state WHERE model = 'cl';
DROP ROLE cl_stranger;

SELECT unlearn_drop('cl'), unlearn_drop('cl_fresh');
DROP TABLE cl, cl_fresh;
