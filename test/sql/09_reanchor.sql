-- Re-anchoring: when a removal would take spent past the budget, the model
-- first rebuilds its Hessian at the current w and replaces spent by the
-- measured residual ||grad L_b(w; D)|| (plus its rounding allowance).  Only
-- if that does not fit either does it retrain (or suspend, under 'suspend').
\set SHOW_CONTEXT never
-- (the 90% NOTICE fires again after each re-anchoring; 03_removal shows it)
SET client_min_messages = warning;
-- n single-row DELETE statements, oldest id first
CREATE FUNCTION pg_temp.delete_oldest(t regclass, n int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1..n LOOP
		EXECUTE format('DELETE FROM %s WHERE id = (SELECT min(id) FROM %s)', t, t);
	END LOOP;
END $$;
CREATE TABLE ra AS SELECT * FROM ones_sevens;
ALTER TABLE ra ADD PRIMARY KEY (id);
SELECT model FROM unlearn_train('ra', 'ra', 'is_one', '{pixels}', lambda => 1e-2, sigma => 0.05);
SELECT anchor AS anchor0, noise AS noise0 FROM unlearn.model_state WHERE model = 'ra' \gset

-- single-row DELETE statements until the first re-anchoring
DO $$
BEGIN
	FOR i IN 1..100 LOOP
		DELETE FROM ra WHERE id = (SELECT min(id) FROM ra);
		EXIT WHEN (SELECT reanchors FROM unlearn.models WHERE model = 'ra') > 0;
	END LOOP;
END $$;
SELECT retrains, reanchors, rows = (SELECT count(*) FROM ra) AS in_step, spent <= budget AS within_budget
FROM unlearn.models WHERE model = 'ra';
-- the ledger shows it; spent fell below what the sum of bounds would give
SELECT l.reanchored, l.retrained, l.spent < p.spent + l.bound AS spent_reset
FROM unlearn.ledger l,
	 LATERAL (SELECT spent FROM unlearn.ledger q WHERE q.model = 'ra' AND q.id < l.id ORDER BY q.id DESC LIMIT 1) p
WHERE l.model = 'ra' AND l.id = (SELECT max(id) FROM unlearn.ledger WHERE model = 'ra');
-- spent is now the measured residual, just above it; w0 moved to w; b stayed
SELECT certified, spent >= residual AS covers, spent <= residual * (1 + 1e-6) AS tight
FROM unlearn_verify('ra');
SELECT anchor <> :'anchor0' AS anchor_moved, noise = :'noise0' AS same_noise
FROM unlearn.model_state WHERE model = 'ra';

-- and removals go on, re-anchoring again when needed, never retraining here
SELECT pg_temp.delete_oldest('ra', 40);
SELECT retrains, reanchors > 1 AS reanchored_again, rows = (SELECT count(*) FROM ra) AS in_step
FROM unlearn.models WHERE model = 'ra';
SELECT certified, residual <= spent AS covers FROM unlearn_verify('ra');

-- under "on_exhausted": "suspend" a re-anchoring that fits keeps the model ready
CREATE TABLE ra_strict AS SELECT * FROM ones_sevens;
SELECT model FROM unlearn_train('ra_strict', 'ra_strict', 'is_one', '{pixels}', lambda => 1e-2, sigma => 0.05,
								options => '{"on_exhausted": "suspend"}');
SELECT pg_temp.delete_oldest('ra_strict', 40);
SELECT state, retrains, reanchors > 0 AS reanchored FROM unlearn.models WHERE model = 'ra_strict';

-- unlearn.reanchor = off follows Algorithm 2 strictly: the same deletions retrain
SELECT model FROM unlearn_train('ra_strict', 'ra_strict', 'is_one', '{pixels}', lambda => 1e-2, sigma => 0.05,
								replace => true);
SET unlearn.reanchor = off;
SELECT pg_temp.delete_oldest('ra_strict', 40);
RESET unlearn.reanchor;
SELECT retrains > 0 AS retrained, reanchors FROM unlearn.models WHERE model = 'ra_strict';

RESET client_min_messages;
SELECT unlearn_drop('ra'), unlearn_drop('ra_strict');
DROP TABLE ra, ra_strict;
