-- unlearn 0.4.0 -> 0.5.0: reading a model is a privilege, per model.
-- The owner reads its models; unlearn_grant lets other roles read one
-- ('read': weights, predictions and figures; 'monitor': figures only).
-- Row-level security on the catalog and the status view's filter show
-- each role only the models it owns or holds a grant on.

\echo Use "ALTER EXTENSION unlearn UPDATE TO '0.5.0'" to load this file. \quit

-- Who may read a model besides its owner: 'read' (its weights and
-- predictions, its catalog row, and everything 'monitor' gives) or
-- 'monitor' (its line in unlearn.status and its ledger rows).  Written by
-- unlearn_grant and unlearn_revoke only; a replaced or dropped model loses
-- its grants.
CREATE TABLE unlearn.model_grants (
	model		text NOT NULL REFERENCES unlearn.models ON DELETE CASCADE ON UPDATE CASCADE,
	owner		regrole NOT NULL,
	grantee		regrole NOT NULL,
	privilege	text NOT NULL CHECK (privilege IN ('read', 'monitor')),
	granted_at	timestamptz NOT NULL DEFAULT clock_timestamp(),
	PRIMARY KEY (model, grantee, privilege)
);
COMMENT ON TABLE unlearn.model_grants IS 'per-model read grants (unlearn_grant): read gives the weights, predictions and everything monitor gives; monitor gives the status line and the ledger rows';

ALTER TABLE unlearn.models ENABLE ROW LEVEL SECURITY;
CREATE POLICY model_readers ON unlearn.models FOR SELECT
	USING (pg_catalog.pg_has_role(current_user, owner, 'USAGE')
		   OR EXISTS (SELECT 1 FROM unlearn.model_grants g
					  WHERE g.model = models.model AND g.privilege = 'read'
						AND pg_catalog.pg_has_role(current_user, g.grantee, 'USAGE')));
ALTER TABLE unlearn.ledger ENABLE ROW LEVEL SECURITY;
CREATE POLICY ledger_readers ON unlearn.ledger FOR SELECT
	USING (pg_catalog.pg_has_role(current_user, owner, 'USAGE')
		   OR EXISTS (SELECT 1 FROM unlearn.model_grants g
					  WHERE g.model = ledger.model AND g.owner = ledger.owner
						AND pg_catalog.pg_has_role(current_user, g.grantee, 'USAGE')));
ALTER TABLE unlearn.model_grants ENABLE ROW LEVEL SECURITY;
CREATE POLICY grant_parties ON unlearn.model_grants FOR SELECT
	USING (pg_catalog.pg_has_role(current_user, owner, 'USAGE')
		   OR pg_catalog.pg_has_role(current_user, grantee, 'USAGE'));
REVOKE ALL ON unlearn.model_grants FROM PUBLIC;
GRANT SELECT ON unlearn.model_grants TO PUBLIC;

-- the status view filters its rows: made again (the functions that
-- return its rows with it)
DROP FUNCTION unlearn_train(text, regclass, text, text[], text, float8, float8, float8, float8, boolean, text, text, text, boolean, boolean, text, float8[], float8[], text);
DROP FUNCTION unlearn_retrain(text, boolean);
DROP VIEW unlearn.status;

CREATE VIEW unlearn.status WITH (security_barrier) AS
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
	   m.state = 'ready' AND unlearn._resident(m.model) AS resident
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
GRANT SELECT ON unlearn.status TO PUBLIC;
COMMENT ON VIEW unlearn.status IS 'one line per model the caller owns or holds a grant on: rows (and rows skipped for a null), removals, budget left, an estimate of the row changes left before the next re-anchoring or retrain, and whether its removal matrices are in shared memory (resident; otherwise its next change rebuilds them)';
COMMENT ON COLUMN unlearn.status.deletions_left IS 'row deletions the remaining budget is expected to cover before the next re-anchoring or retrain: remaining over the mean bound per changed row since the last one; NULL when the model is not ready, no row has changed since, or its removals cost nothing (squared loss)';

SELECT pg_catalog.pg_extension_config_dump('unlearn.ledger',
	'WHERE pg_catalog.pg_has_role(owner, ''USAGE'')');
SELECT pg_catalog.pg_extension_config_dump('unlearn.model_grants',
	'WHERE pg_catalog.pg_has_role(owner, ''USAGE'')');

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
	nulls text DEFAULT 'error')
RETURNS SETOF unlearn.status
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT unlearn._train($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19);
	SELECT * FROM unlearn.status s WHERE s.model = $1;
$$;
COMMENT ON FUNCTION unlearn_train(text, regclass, text, text[], text, float8, float8, float8, float8, boolean, text, text, text, boolean, boolean, text, float8[], float8[], text)
IS 'train a removal-ready L2-regularised, loss-perturbed linear model on the rows of a table; preprocess standardizes each feature column (standardize), with a declared centre and spread (declared), or not at all (none); nulls => skip leaves rows with a null in a model column outside the model';

CREATE FUNCTION unlearn_retrain(model text, verbose boolean DEFAULT false)
RETURNS SETOF unlearn.status
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT unlearn._retrain($1, $2);
	SELECT * FROM unlearn.status s WHERE s.model = $1;
$$;
COMMENT ON FUNCTION unlearn_retrain(text, boolean)
IS 'retrain a model from scratch on the current rows with fresh noise, resetting its spent budget';

CREATE FUNCTION unlearn_grant(model text, grantee regrole, privilege text DEFAULT 'read')
RETURNS void
AS 'MODULE_PATHNAME', 'unlearn_grant' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION unlearn_grant(text, regrole, text) IS 'let a role (and its members) read a model (owner only): read gives its weights, predictions, scores, evaluation and catalog row, and everything monitor gives; monitor gives its line in unlearn.status and its ledger rows.  A grantee who compares the model before and after a deletion can reconstruct the deleted row: grant only to roles trusted with the training data';

CREATE FUNCTION unlearn_revoke(model text, grantee regrole, privilege text DEFAULT 'read')
RETURNS void
AS 'MODULE_PATHNAME', 'unlearn_revoke' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION unlearn_revoke(text, regrole, text) IS 'take back a grant of unlearn_grant (owner only)';

CREATE FUNCTION unlearn._check_read(model text, privilege text) RETURNS regclass
AS 'MODULE_PATHNAME', 'unlearn_check_read' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn._check_read(text, text) IS 'the table of a model the caller may read (read or monitor), or an error 42501';

CREATE FUNCTION unlearn_ledger(model text) RETURNS SETOF unlearn.ledger
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM unlearn._check_read(model, 'monitor');
	RETURN QUERY SELECT l.* FROM unlearn.ledger l WHERE l.model = unlearn_ledger.model ORDER BY l.id;
END
$$;
COMMENT ON FUNCTION unlearn_ledger(text) IS 'the ledger rows of a model, oldest first: one per statement that changed it, with the rows removed and added and the bound spent (owner, and roles granted read or monitor)';

-- what unlearn_score calls: in the extension's own schema, where no other
-- role can create an overload that would win for a table's row type
CREATE FUNCTION unlearn._score_row(model text, r record) RETURNS unlearn.scored
AS 'MODULE_PATHNAME', 'unlearn_score_row' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn._score_row(text, record) IS 'unlearn_score_row, for unlearn_score';

-- unlearn_score checks the grant before it reads the catalog
CREATE OR REPLACE FUNCTION unlearn_score(model text, source regclass DEFAULT NULL)
RETURNS TABLE (key jsonb, label text, score float8)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	model_source regclass := unlearn._check_read(model, 'read');
	rel regclass := coalesce(source, model_source);
	keys text;
BEGIN
	-- each key column as its type's output text (format's %s), never
	-- through a cast: a cast may be the table owner's code
	SELECT string_agg(format('%L, pg_catalog.format(''%%s'', t.%I)', a.attname, a.attname), ', ' ORDER BY k.n)
	INTO keys
	FROM pg_catalog.pg_index i
	CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
	JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
	WHERE i.indrelid = rel AND i.indisprimary;
	IF keys IS NULL THEN
		RAISE EXCEPTION 'relation % has no primary key', rel USING ERRCODE = 'wrong_object_type',
			HINT = 'Select the columns that identify a row yourself: SELECT t.id, s.* FROM t, unlearn_score_row(''model'', t) s.';
	END IF;
	-- the row function in the select list of a subquery that is not
	-- flattened: called once per row, without a function scan per row
	RETURN QUERY EXECUTE format(
		'SELECT k, (s).label, (s).score FROM (SELECT pg_catalog.jsonb_build_object(%s) AS k, '
		'unlearn._score_row($1, t) AS s FROM %s t OFFSET 0) x',
		keys, rel) USING model;
END
$$;
COMMENT ON FUNCTION unlearn_score(text, regclass) IS 'the primary key (jsonb: each column''s text), predicted label and score of every row of a table (default: the model''s source)';

