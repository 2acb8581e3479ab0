-- unlearn 0.10.0 -> 0.11.0: a deferred removal path.  A model trained with
-- removal => 'deferred' has row triggers that queue the table's row changes
-- in unlearn.pending, and unlearn_apply_pending applies them; this is what
-- a table with foreign partitions (postgres_fdw) needs, whose statement
-- triggers cannot collect transition rows.

ALTER TABLE unlearn.models ADD COLUMN removal text NOT NULL DEFAULT 'immediate'
	CHECK (removal IN ('immediate', 'deferred'));
COMMENT ON COLUMN unlearn.models.removal IS 'immediate: the table''s statement triggers apply each change to the model in the changing transaction; deferred: its row triggers queue each change in unlearn.pending, and unlearn_apply_pending applies the queue (foreign partitions, Citus-style engines); the model withholds its weights while changes are queued';

-- The changes queued for models trained with removal => 'deferred': one
-- row per changed row of the table, written by the row trigger
-- unlearn._defer() and consumed (applied, then deleted) by
-- unlearn_apply_pending in one transaction.  A contribution is the row as
-- the model decodes it (its features as float8 and its label), never the
-- table's other columns; NULL for a row outside the model for a null.  Only
-- the model's owner (who may read those columns of the table) and
-- superusers can see a row.
CREATE TABLE unlearn.pending (
	id			bigserial PRIMARY KEY,
	model		text NOT NULL REFERENCES unlearn.models ON DELETE CASCADE ON UPDATE CASCADE,
	owner		regrole NOT NULL,
	at			timestamptz NOT NULL DEFAULT clock_timestamp(),
	change		smallint NOT NULL CHECK (change IN (-1, 1)),
	contribution bytea
);
CREATE INDEX ON unlearn.pending (model, id);
COMMENT ON TABLE unlearn.pending IS 'row changes queued for deferred models (removal => deferred): change -1 removes the row, +1 adds it; consumed by unlearn_apply_pending';
-- A grantee reads a deferred model through the functions only, which
-- withhold its weights while changes are queued (deferred.c).
ALTER POLICY model_readers ON unlearn.models
	USING (pg_catalog.pg_has_role(current_user, owner, 'USAGE')
		   OR (removal = 'immediate'
			   AND EXISTS (SELECT 1 FROM unlearn.model_grants g
						   WHERE g.model = models.model AND g.privilege = 'read'
							 AND pg_catalog.pg_has_role(current_user, g.grantee, 'USAGE'))));

ALTER TABLE unlearn.pending ENABLE ROW LEVEL SECURITY;
CREATE POLICY pending_owner ON unlearn.pending FOR SELECT
	USING (pg_catalog.pg_has_role(current_user, owner, 'USAGE'));
REVOKE ALL ON unlearn.pending FROM PUBLIC;
REVOKE ALL ON SEQUENCE unlearn.pending_id_seq FROM PUBLIC;
GRANT SELECT ON unlearn.pending TO PUBLIC;
GRANT SELECT ON SEQUENCE unlearn.pending_id_seq TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('unlearn.pending',
	'WHERE pg_catalog.pg_has_role(owner, ''USAGE'')');
SELECT pg_catalog.pg_extension_config_dump('unlearn.pending_id_seq', '');

CREATE OR REPLACE VIEW unlearn.status WITH (security_barrier) AS
SELECT m.model, m.source, m.loss,
	   coalesce(array_length(m.classes, 1), 0) AS classes,
	   m.dims, m.rows, m.skipped, m.removed, m.inserted, m.retrains,
	   m.budget, m.spent,
	   greatest(m.budget - m.spent, 0) AS remaining,
	   CASE WHEN m.budget > 0 THEN round((100 * m.spent / m.budget)::numeric, 2) END AS pct_spent,
	   CASE WHEN m.state = 'ready' AND u.changed > 0 THEN
		   floor(least(greatest(m.budget - m.spent, 0) / nullif(u.bound / u.changed, 0), 1e15))::bigint
	   END AS deletions_left,
	   m.bound, m.on_exhausted, m.steps, m.state,
	   m.trained_at, m.updated_at,
	   m.state = 'ready' AND unlearn._resident(m.model) AS resident,
	   m.removal,
	   (SELECT pg_catalog.count(*) FROM unlearn.pending q WHERE q.model = m.model) AS pending
FROM unlearn.models m
LEFT JOIN LATERAL (
	SELECT sum(l.bound) AS bound, sum(l.rows_removed + l.rows_added) AS changed
	FROM unlearn.ledger l
	WHERE l.model = m.model AND l.owner = m.owner AND NOT l.retrained AND NOT l.reanchored
	  AND l.id > (SELECT coalesce(max(r.id), 0) FROM unlearn.ledger r
				  WHERE r.model = m.model AND (r.retrained OR r.reanchored))
) u ON true
-- the models the caller owns or holds a grant on (the view reads the
-- catalog as its owner, so it filters the rows itself, before any
-- condition of the caller's query)
WHERE pg_catalog.pg_has_role(current_user, m.owner, 'USAGE')
   OR EXISTS (SELECT 1 FROM unlearn.model_grants g
			  WHERE g.model = m.model
				AND pg_catalog.pg_has_role(current_user, g.grantee, 'USAGE'));
COMMENT ON COLUMN unlearn.status.pending IS 'row changes queued for a deferred model and not yet applied (unlearn_apply_pending); while there are any, the model withholds its weights';

CREATE FUNCTION unlearn._defer() RETURNS trigger
AS 'MODULE_PATHNAME', 'unlearn_defer_trigger' LANGUAGE C;
COMMENT ON FUNCTION unlearn._defer() IS 'row trigger: queues each changed row in unlearn.pending for the table''s deferred models';

CREATE FUNCTION unlearn._apply_pending(model text)
RETURNS void AS 'MODULE_PATHNAME', 'unlearn_apply_pending' LANGUAGE C VOLATILE STRICT;
REVOKE EXECUTE ON FUNCTION unlearn._defer() FROM PUBLIC;

-- a foreign table created as a partition changes the partition set too
DROP EVENT TRIGGER unlearn_ddl_end;
CREATE EVENT TRIGGER unlearn_ddl_end ON ddl_command_end
	WHEN TAG IN ('ALTER TABLE', 'CREATE TABLE', 'CREATE FOREIGN TABLE')
	EXECUTE FUNCTION unlearn._on_ddl_end();

DROP FUNCTION unlearn_train(text, regclass, text, text[], text, float8, float8, float8, float8, boolean, text, text, text, boolean, boolean, text, float8[], float8[], text, text[]);
DROP FUNCTION unlearn._train(text, regclass, text, text[], text, float8, float8, float8, float8, boolean, text, text, text, boolean, boolean, text, float8[], float8[], text, text[]);
CREATE FUNCTION unlearn._train(model text, source regclass, label text, features text[],
	loss text, lambda float8, sigma float8, epsilon float8, delta float8,
	intercept boolean, bound text, on_exhausted text, steps text,
	replace boolean, verbose boolean, preprocess text, centre float8[], spread float8[],
	nulls text, classes text[], removal text)
RETURNS void AS 'MODULE_PATHNAME', 'unlearn_train' LANGUAGE C VOLATILE;

CREATE FUNCTION unlearn_train(
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
	nulls text DEFAULT 'error',
	classes text[] DEFAULT NULL,
	removal text DEFAULT 'immediate')
RETURNS SETOF unlearn.status
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT unlearn._train($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21);
	SELECT * FROM unlearn.status s WHERE s.model = $1;
$$;
COMMENT ON FUNCTION unlearn_train(text, regclass, text, text[], text, float8, float8, float8, float8, boolean, text, text, text, boolean, boolean, text, float8[], float8[], text, text[], text)
IS 'train a removal-ready L2-regularised, loss-perturbed linear model on the rows of a table; features are columns or expressions over the row such as log(income) (built-in immutable functions only); preprocess standardizes each feature column (standardize), with a declared centre and spread (declared), or not at all (none); nulls => skip leaves rows with a null in a model column outside the model; classes declares a classifier''s labels (a boolean label declares false and true), which then never change, and a row with another label is refused; removal => deferred queues the table''s changes for unlearn_apply_pending instead of applying them in the changing transaction (needed for foreign partitions)';

CREATE FUNCTION unlearn_apply_pending(model text)
RETURNS SETOF unlearn.status
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT unlearn._apply_pending($1);
	SELECT * FROM unlearn.status s WHERE s.model = $1;
$$;
COMMENT ON FUNCTION unlearn_apply_pending(text)
IS 'apply the row changes queued for a deferred model in one certified step, as the statement triggers apply an immediate model''s, and delete them from the queue (the model''s owner or the table''s owner)';
