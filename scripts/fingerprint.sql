-- scripts/fingerprint.sql: md5 fingerprints of a fixed scenario, to show
-- that a change meant to leave results alone (a move of code) does.
--
--   psql -X -q -d <a database with CREATE EXTENSION unlearn> -f scripts/fingerprint.sql
--
-- Three sigma = 0 models on scikit-learn's bundled data: logistic (breast
-- cancer), one-vs-rest (digits, 10 classes) and least squares (diabetes).
-- Each goes through a single-row DELETE, a 100-row DELETE, an UPDATE of a
-- model column and an INSERT; then the md5 of its coefficients (as float8
-- text with extra_float_digits = 3) and of 300 predictions.  Run it before
-- and after the change, on each OpenBLAS core (start the server with
-- OPENBLAS_CORETYPE=Prescott for the generic one): the lines must match.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
SET extra_float_digits = 3;
DROP SCHEMA IF EXISTS fingerprint CASCADE;
CREATE SCHEMA fingerprint;
SET search_path = fingerprint, public;

\ir fingerprint_data.sql

SELECT count(*) FROM unlearn_train('fp_logistic', 'cancer', 'y', '{x}', sigma => 0);
SELECT count(*) FROM unlearn_train('fp_ovr', 'digits', 'y', '{x}', sigma => 0);
SELECT count(*) FROM unlearn_train('fp_squared', 'diabetes', 'y', '{x}', loss => 'squared', sigma => 0);

DELETE FROM cancer WHERE id = 7;
DELETE FROM cancer WHERE id BETWEEN 100 AND 199;
UPDATE cancer SET x[1] = x[1] + 1 WHERE id = 300;
INSERT INTO cancer (x, y) SELECT x, 1 - y FROM cancer WHERE id = 301;
DELETE FROM digits WHERE id = 7;
DELETE FROM digits WHERE id BETWEEN 100 AND 199;
UPDATE digits SET x[20] = 16 - x[20] WHERE id = 300;
INSERT INTO digits (x, y) SELECT x, (y + 1) % 10 FROM digits WHERE id = 301;
DELETE FROM diabetes WHERE id = 7;
DELETE FROM diabetes WHERE id BETWEEN 100 AND 199;
UPDATE diabetes SET x[3] = x[3] + 1 WHERE id = 300;
INSERT INTO diabetes (x, y) SELECT x, y + 10 FROM diabetes WHERE id = 301;

SELECT model, md5(coef::text) AS coefficients, state, rows FROM unlearn.models
	WHERE model LIKE 'fp\_%' ORDER BY model;
SELECT 'fp_logistic' AS model, md5(string_agg(unlearn_predict('fp_logistic', x)::text, ',' ORDER BY id)) AS predictions
	FROM (SELECT id, x FROM cancer ORDER BY id LIMIT 300) s
UNION ALL
SELECT 'fp_ovr', md5(string_agg(unlearn_predict('fp_ovr', x)::text, ',' ORDER BY id))
	FROM (SELECT id, x FROM digits ORDER BY id LIMIT 300) s
UNION ALL
SELECT 'fp_squared', md5(string_agg(unlearn_predict('fp_squared', x)::text, ',' ORDER BY id))
	FROM (SELECT id, x FROM diabetes ORDER BY id LIMIT 300) s;

SELECT unlearn_drop(model) FROM unlearn.models WHERE model LIKE 'fp\_%';
DROP SCHEMA fingerprint CASCADE;
