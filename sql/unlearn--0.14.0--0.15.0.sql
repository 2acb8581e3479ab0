-- unlearn 0.14.0 -> 0.15.0: safety, round two.
--  * nulls => 'skip' is the default: a row with a NULL in a model column is
--    outside the model, so no model makes an ordinary write fail.
--  * The DDL event trigger also sees CREATE TRIGGER and ALTER TRIGGER, so
--    that a table's own triggers cannot take or leave the names of the
--    extension's triggers (a renamed trigger made every DELETE of the
--    table fail, and every DROP in the database).
\echo Use "ALTER EXTENSION unlearn UPDATE TO '0.15.0'" to load this file. \quit

ALTER TABLE unlearn.models ALTER COLUMN nulls SET DEFAULT 'skip';

DROP EVENT TRIGGER unlearn_ddl_end;
CREATE EVENT TRIGGER unlearn_ddl_end ON ddl_command_end
	WHEN TAG IN ('ALTER TABLE', 'CREATE TABLE', 'CREATE FOREIGN TABLE', 'CREATE TRIGGER',
				 'ALTER TRIGGER')
	EXECUTE FUNCTION unlearn._on_ddl_end();
CREATE OR REPLACE FUNCTION unlearn_train(
	model text,
	source regclass,
	label text,
	features text[],
	loss text DEFAULT 'logistic',
	lambda float8 DEFAULT 1e-3,
	sigma float8 DEFAULT 1,
	epsilon float8 DEFAULT 1,
	delta float8 DEFAULT 1e-4,
	intercept boolean DEFAULT true,
	bound text DEFAULT 'taylor',
	on_exhausted text DEFAULT 'retrain',
	steps text DEFAULT 'statement',
	replace boolean DEFAULT false,
	verbose boolean DEFAULT false,
	preprocess text DEFAULT 'standardize',
	centre float8[] DEFAULT NULL,
	spread float8[] DEFAULT NULL,
	nulls text DEFAULT 'skip',
	classes text[] DEFAULT NULL,
	removal text DEFAULT 'immediate')
RETURNS SETOF unlearn.status
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT unlearn._train($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21);
	SELECT * FROM unlearn.status s WHERE s.model = $1;
$$;
