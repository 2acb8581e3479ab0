-- Who can do what: the model owner, a role that may only DELETE, a reader.
\set SHOW_CONTEXT never
CREATE ROLE ul_owner;
CREATE ROLE ul_deleter;
CREATE ROLE ul_reader;
CREATE TABLE priv AS SELECT * FROM ones_sevens;
ALTER TABLE priv OWNER TO ul_owner;
GRANT DELETE, SELECT (id) ON priv TO ul_deleter;
SET ROLE ul_owner;
SELECT model, rows FROM unlearn_train('priv', 'priv', 'is_one', '{pixels}', lambda => 1e-2, sigma => 2);
SELECT count(*) AS owner_sees_state FROM unlearn.model_state WHERE model = 'priv';
RESET ROLE;

-- the deleting role can delete, and the model follows
SET ROLE ul_deleter;
DELETE FROM priv WHERE id IN (SELECT id FROM priv ORDER BY id LIMIT 2);
-- without a grant it sees nothing of the model (every read path is in
-- 17_model_reads): no catalog row, no ledger row, no state, no prediction
SELECT count(*) AS visible_models FROM unlearn.models WHERE model = 'priv';
SELECT count(*) AS visible_ledger FROM unlearn.ledger WHERE model = 'priv';
SELECT count(*) AS visible_state FROM unlearn.model_state;
SELECT * FROM unlearn_verify('priv');
SELECT unlearn_residual('priv');
SELECT unlearn_predict('priv', array_fill(0::float8, ARRAY[64])) BETWEEN 0 AND 1 AS predicts;
-- nor change or drop it
SELECT unlearn_drop('priv');
SELECT unlearn_retrain('priv');
UPDATE unlearn.models SET spent = 0 WHERE model = 'priv';
DELETE FROM unlearn.ledger WHERE model = 'priv';
-- nor train on a table it cannot read
SELECT unlearn_train('steal', 'priv', 'is_one', '{pixels}');
RESET ROLE;
SELECT spent > 0 AS untouched FROM unlearn.models WHERE model = 'priv';
SELECT count(*) > 0 AS ledger_kept FROM unlearn.ledger WHERE model = 'priv';

-- the update ran as the model owner: the ledger row is the owner's
SELECT operation, owner, rows_removed FROM unlearn.ledger WHERE model = 'priv' ORDER BY id;

-- a search_path trap does not hijack maintenance
CREATE SCHEMA trap;
CREATE FUNCTION trap.sqrt(float8) RETURNS float8 LANGUAGE sql AS 'SELECT 0::float8';
CREATE FUNCTION trap.count(anyelement) RETURNS bigint LANGUAGE sql AS 'SELECT 0::bigint';
GRANT USAGE ON SCHEMA trap TO PUBLIC;
SET ROLE ul_deleter;
SET search_path = trap, public;
DELETE FROM priv WHERE id = (SELECT min(id) FROM priv);
RESET search_path;
RESET ROLE;
SELECT rows = (SELECT count(*) FROM priv) AS in_step, removed FROM unlearn.models WHERE model = 'priv';

-- the owner verifies
SET ROLE ul_owner;
SELECT certified FROM unlearn_verify('priv');
SELECT unlearn_drop('priv');
RESET ROLE;
DROP TABLE priv;
DROP SCHEMA trap CASCADE;
DROP ROLE ul_owner, ul_deleter, ul_reader;
