-- unlearn 0.17.0 -> 0.18.0: the Noisy-GD mechanism (seed 002).
-- unlearn_train(..., mechanism => 'noisy_gd') trains by Noisy-GD from the
-- stationary start, and every change runs K(S) noisy steps on the rows
-- after it; the model keeps no state.  unlearn.models gains the mechanism
-- and Noisy-GD's public parameters and accounting; unlearn.status the
-- mechanism; unlearn_privacy(model) reports the guarantees.
\echo Use "ALTER EXTENSION unlearn UPDATE TO '0.18.0'" to load this file. \quit

ALTER TABLE unlearn.models
	ADD COLUMN mechanism text NOT NULL DEFAULT 'newton' CHECK (mechanism IN ('newton', 'noisy_gd')),
	ADD COLUMN step_size float8 NOT NULL DEFAULT 0,
	ADD COLUMN training_steps bigint NOT NULL DEFAULT 0,
	ADD COLUMN gd_steps bigint NOT NULL DEFAULT 0,
	ADD COLUMN fewest_rows bigint NOT NULL DEFAULT 0,
	ADD COLUMN given_parameters integer NOT NULL DEFAULT 0 CHECK (given_parameters BETWEEN 0 AND 7);
ALTER TYPE unlearn.train_options
	ADD ATTRIBUTE noise float8,
	ADD ATTRIBUTE step_size float8,
	ADD ATTRIBUTE training_steps float8;
COMMENT ON COLUMN unlearn.models.mechanism IS 'newton: certified Newton removal with loss perturbation (exact for least squares); noisy_gd: Noisy-GD, whose changes run noisy steps on the rows after them and which keeps no state (see unlearn_privacy)';
COMMENT ON COLUMN unlearn.models.step_size IS 'noisy_gd: the step size eta, 1 / (1/4 + lambda); sigma is then the noise of a step, N(0, 2 eta sigma^2 I), and budget the deletion epsilon every change reaches';
COMMENT ON COLUMN unlearn.models.training_steps IS 'noisy_gd: the steps of a training from the stationary start';
COMMENT ON COLUMN unlearn.models.gd_steps IS 'noisy_gd: the steps run since the last training, its own included';
COMMENT ON COLUMN unlearn.models.given_parameters IS 'noisy_gd: which parameters unlearn_train was given (1 noise, 2 step_size, 4 training_steps) and every training keeps; the others are chosen afresh from the rows at each training';
COMMENT ON COLUMN unlearn.models.fewest_rows IS 'noisy_gd: the fewest rows the model reflected since its last training, the n of its accountant';
DROP FUNCTION unlearn_train(text, regclass, text, text[], text, float8, float8, float8, float8, jsonb, boolean, boolean);
DROP FUNCTION unlearn._train(text, regclass, text, text[], text, float8, float8, float8, float8, boolean, text, text, text, boolean, boolean, text, float8[], float8[], text, text[], text);

CREATE OR REPLACE VIEW unlearn.status WITH (security_barrier) AS
SELECT m.model, m.source, m.loss,
	   coalesce(array_length(m.classes, 1), 0) AS classes,
	   m.dims, m.rows, m.skipped, m.removed, m.inserted, m.retrains,
	   m.budget, m.spent,
	   greatest(m.budget - m.spent, 0) AS remaining,
	   CASE WHEN m.budget > 0 THEN round((100 * m.spent / m.budget)::numeric, 2) END AS pct_spent,
	   CASE WHEN m.state = 'ready' AND u.changed > 0 AND m.mechanism = 'newton' AND m.loss <> 'squared' THEN
		   floor(least(greatest(m.budget - m.spent, 0) / nullif(u.bound / u.changed, 0), 1e15))::bigint
	   END AS deletions_left,
	   m.bound, m.on_exhausted, m.steps, m.state,
	   m.trained_at, m.updated_at,
	   m.state = 'ready' AND unlearn._resident(m.model) AS resident,
	   m.removal,
	   (SELECT pg_catalog.count(*) FROM unlearn.pending q WHERE q.model = m.model) AS pending,
	   m.mechanism
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

CREATE FUNCTION unlearn._train(model text, source regclass, label text, features text[],
	loss text, lambda float8, sigma float8, epsilon float8, delta float8,
	intercept boolean, bound text, on_exhausted text, steps text,
	replace boolean, verbose boolean, preprocess text, centre float8[], spread float8[],
	nulls text, classes text[], removal text, mechanism text, noise float8, step_size float8,
	training_steps float8)
RETURNS void AS 'MODULE_PATHNAME', 'unlearn_train' LANGUAGE C VOLATILE;

COMMENT ON FUNCTION unlearn._train(text, regclass, text, text[], text, float8, float8, float8, float8, boolean, text, text, text, boolean, boolean, text, float8[], float8[], text, text[], text, text, float8, float8, float8) IS 'internal: unlearn_train''s implementation';

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
	options jsonb DEFAULT '{}',
	replace boolean DEFAULT false,
	verbose boolean DEFAULT false,
	mechanism text DEFAULT 'newton')
RETURNS SETOF unlearn.status
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
	-- a Noisy-GD model maps its rows by nothing computed from them
	SELECT unlearn._train($1, $2, $3, $4, $5, $6, $7, $8, $9, o.intercept, o.bound,
						  o.on_exhausted, o.steps, $11, $12,
						  CASE WHEN $13 = 'noisy_gd' AND NOT $10 ? 'preprocess' THEN 'none'
							   ELSE o.preprocess END,
						  o.centre, o.spread, o.nulls, o.classes, o.removal, $13,
						  o.noise, o.step_size, o.training_steps)
	FROM unlearn._train_options($10) o;
	SELECT * FROM unlearn.status s WHERE s.model = $1;
$$;
COMMENT ON FUNCTION unlearn_train(text, regclass, text, text[], text, float8, float8, float8, float8, jsonb, boolean, boolean, text)
IS 'train a removal-ready L2-regularised, loss-perturbed linear model on the rows of a table; features are columns or expressions over the row such as log(income) (built-in immutable functions only); options is a JSON object of rarely changed settings: nulls (skip or error), classes (a classifier''s declared labels), preprocess (standardize, declared with centre and spread, or none), removal (immediate or deferred), bound (taylor, guo or exact), on_exhausted (retrain or suspend), steps (statement or row), intercept (true or false), and for noisy_gd noise, step_size and training_steps, which replace the chosen ones; mechanism newton (the default) or noisy_gd (Noisy-GD: a guarantee over every release, no state, noise and steps chosen from epsilon and delta; sigma is ignored)';

CREATE TYPE unlearn.privacy AS (
	model text,
	mechanism text,
	dp_epsilon float8,
	dp_delta float8,
	deletion_epsilon float8,
	deletion_delta float8,
	deletion_target float8,
	noise float8,
	step_size float8,
	training_steps bigint,
	steps bigint,
	fewest_rows bigint);
COMMENT ON TYPE unlearn.privacy IS 'what unlearn_privacy returns: a model''s guarantees, and for Noisy-GD the parameters and accounting they come from';

CREATE FUNCTION unlearn_privacy(model text)
RETURNS unlearn.privacy
AS 'MODULE_PATHNAME', 'unlearn_privacy' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION unlearn_privacy(text) IS 'a model''s guarantees (owner and grantees): for noisy_gd the (epsilon, delta)-DP of the rows present and the data-deletion (epsilon, delta) reached by every change since training, over all its releases, from its Renyi accountant; for newton the certified-removal (epsilon, delta) of one release';

CREATE FUNCTION unlearn._renyi_epsilon(lambda float8, step_size float8, noise float8,
	n float8, rows_changed float8, steps float8, delta float8,
	OUT epsilon float8, OUT alpha float8)
AS 'MODULE_PATHNAME', 'unlearn_renyi_epsilon' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn._renyi_epsilon(float8, float8, float8, float8, float8, float8, float8) IS 'internal: Noisy-GD''s accountant, the least epsilon over its orders of exp(-lambda eta K / alpha) S^2 eps0(alpha) (test/python/check_renyi.py)';

CREATE FUNCTION unlearn._renyi_steps(lambda float8, step_size float8, noise float8,
	n float8, rows_changed float8, epsilon float8, delta float8)
RETURNS bigint
AS 'MODULE_PATHNAME', 'unlearn_renyi_steps' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn._renyi_steps(float8, float8, float8, float8, float8, float8, float8) IS 'internal: K(S), the steps after which S changed rows reach the deletion epsilon; NULL when none does';

CREATE FUNCTION unlearn._renyi_noise(lambda float8, n float8, epsilon float8, delta float8)
RETURNS float8
AS 'MODULE_PATHNAME', 'unlearn_renyi_noise' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION unlearn._renyi_noise(float8, float8, float8, float8) IS 'internal: the least Noisy-GD noise whose training DP for one row is within epsilon; NULL when no noise up to 1e6 is';


COMMENT ON FUNCTION unlearn_verify(text) IS 'exact gradient residual against spent, distance to and accuracy of a fresh retrain with the same noise (owner only; one pass over the table); for a noisy_gd model the residual is NULL, certified says that every change reached the deletion epsilon (spent <= budget), and the retrain is noiseless';
