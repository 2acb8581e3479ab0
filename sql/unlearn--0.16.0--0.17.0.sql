-- unlearn 0.16.0 -> 0.17.0: unlearn_train groups its rarely changed
-- settings in one argument, options jsonb, so that its signature reads
-- in \df.  The settings, their values and their defaults are unchanged.
\echo Use "ALTER EXTENSION unlearn UPDATE TO '0.17.0'" to load this file. \quit

DROP FUNCTION unlearn_train(text, regclass, text, text[], text, float8, float8, float8, float8, boolean, text, text, text, boolean, boolean, text, float8[], float8[], text, text[], text);

CREATE TYPE unlearn.train_options AS (
	intercept boolean,
	bound text,
	on_exhausted text,
	steps text,
	preprocess text,
	centre float8[],
	spread float8[],
	nulls text,
	classes text[],
	removal text);
COMMENT ON TYPE unlearn.train_options IS 'internal: unlearn_train''s options with their defaults filled in (unlearn._train_options)';

CREATE FUNCTION unlearn._train_options(options jsonb)
RETURNS unlearn.train_options AS 'MODULE_PATHNAME', 'unlearn_train_options' LANGUAGE C IMMUTABLE;
COMMENT ON FUNCTION unlearn._train_options(jsonb) IS 'internal: checks unlearn_train''s options by name and JSON type and fills in the defaults';

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
	verbose boolean DEFAULT false)
RETURNS SETOF unlearn.status
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT unlearn._train($1, $2, $3, $4, $5, $6, $7, $8, $9, o.intercept, o.bound,
						  o.on_exhausted, o.steps, $11, $12, o.preprocess, o.centre,
						  o.spread, o.nulls, o.classes, o.removal)
	FROM unlearn._train_options($10) o;
	SELECT * FROM unlearn.status s WHERE s.model = $1;
$$;
COMMENT ON FUNCTION unlearn_train(text, regclass, text, text[], text, float8, float8, float8, float8, jsonb, boolean, boolean)
IS 'train a removal-ready L2-regularised, loss-perturbed linear model on the rows of a table; features are columns or expressions over the row such as log(income) (built-in immutable functions only); options is a JSON object of rarely changed settings: nulls (skip or error), classes (a classifier''s declared labels), preprocess (standardize, declared with centre and spread, or none), removal (immediate or deferred), bound (taylor, guo or exact), on_exhausted (retrain or suspend), steps (statement or row), intercept (true or false)';

COMMENT ON TABLE unlearn.pending IS 'row changes queued for deferred models (the option "removal": "deferred" of unlearn_train): change -1 removes the row, +1 adds it; consumed by unlearn_apply_pending';
COMMENT ON COLUMN unlearn.models.classes_declared IS 'true when the classes were declared (the option "classes" of unlearn_train, or a boolean label''s false and true) rather than taken from the rows: they never change, and a row with another label is refused';

-- unlearn_evaluate, unlearn_runtime, unlearn_verify and unlearn_plan
-- return a composite type instead of OUT parameters, which \df printed in
-- full; their columns are the same
DROP FUNCTION unlearn_evaluate(text, regclass);
DROP FUNCTION unlearn_runtime();
DROP FUNCTION unlearn_verify(text);
DROP FUNCTION unlearn_plan(bigint, text, bigint, integer, integer, float8, float8, float8, text, boolean);
CREATE TYPE unlearn.evaluation AS (
	rows bigint, skipped bigint,
	accuracy float8, log_loss float8, roc_auc float8, f1 float8,
	classes text[], class_precision float8[], class_recall float8[],
	class_f1 float8[], confusion bigint[],
	r2 float8, rmse float8, mae float8);
COMMENT ON TYPE unlearn.evaluation IS 'what unlearn_evaluate returns';
CREATE FUNCTION unlearn_evaluate(model text, source regclass DEFAULT NULL)
RETURNS unlearn.evaluation
AS 'MODULE_PATHNAME', 'unlearn_evaluate' LANGUAGE C STABLE;
COMMENT ON FUNCTION unlearn_evaluate(text, regclass) IS 'held-out metrics of a model on the labelled rows of a table (default: its source): accuracy, log-loss, ROC AUC (one-vs-rest macro), macro F1, per-class precision, recall and F1 and the confusion matrix (rows: true class, columns: predicted) for a classifier; R2, RMSE and MAE for squared loss; NULL where a metric is undefined (ROC AUC when a class has no row or every row, R2 for a constant target)';
CREATE TYPE unlearn.runtime AS (
	blas_core text, blas_fallback boolean, blas_threads integer, blas_config text,
	state_store boolean, state_memory bigint, resident_models bigint,
	hits bigint, misses bigint, evictions bigint);
COMMENT ON TYPE unlearn.runtime IS 'what unlearn_runtime returns';
CREATE FUNCTION unlearn_runtime()
RETURNS unlearn.runtime
AS 'MODULE_PATHNAME', 'unlearn_runtime' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION unlearn_runtime() IS 'the OpenBLAS core (and whether it is a generic fallback on a CPU with AVX2), its threads for training, and the shared memory of the removal matrices with its use since start-up';
CREATE TYPE unlearn.verification AS (residual float8, spent float8, budget float8,
	certified boolean, retrain_distance float8, accuracy float8, retrain_accuracy float8);
COMMENT ON TYPE unlearn.verification IS 'what unlearn_verify returns';
CREATE FUNCTION unlearn_verify(model text)
RETURNS SETOF unlearn.verification
AS 'MODULE_PATHNAME', 'unlearn_verify' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION unlearn_verify(text) IS 'exact gradient residual against spent, distance to and accuracy of a fresh retrain with the same noise (owner only; one pass over the table)';
CREATE TYPE unlearn.plan AS (basis text, sigma float8, budget float8, bound_per_removal float8,
	weight_shift float8, accuracy_at_zero float8, accuracy float8, accuracy_cost float8);
COMMENT ON TYPE unlearn.plan IS 'what unlearn_plan returns';
CREATE FUNCTION unlearn_plan(
	removals bigint,
	model text DEFAULT NULL,
	rows bigint DEFAULT NULL,
	dims integer DEFAULT NULL,
	classes integer DEFAULT 2,
	epsilon float8 DEFAULT 1,
	delta float8 DEFAULT 1e-4,
	lambda float8 DEFAULT NULL,
	loss text DEFAULT 'logistic',
	intercept boolean DEFAULT true)
RETURNS SETOF unlearn.plan
AS 'MODULE_PATHNAME', 'unlearn_plan' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION unlearn_plan(bigint, text, bigint, integer, integer, float8, float8, float8, text, boolean)
IS 'the sigma that lets a model absorb a number of single-row removals between re-anchorings: worst case from the table size, and measured from a model''s ledger; for a model (owner only), the accuracy cost of that sigma measured by fitting its rows';

-- unlearn_audit: a membership-inference audit with canaries
CREATE TYPE unlearn.audit AS (
	population text,
	rows integer,
	auc float8,
	tpr_at_0_1 float8, tpr_at_0_1_low float8, tpr_at_0_1_high float8,
	tpr_at_1 float8, tpr_at_1_low float8, tpr_at_1_high float8,
	epsilon_lower_bound float8,
	ceiling_at_0_1 float8, ceiling_at_1 float8,
	error float8, mean_confidence float8, mean_entropy float8,
	relearn_passes integer,
	release_cosine float8);
COMMENT ON TYPE unlearn.audit IS 'what unlearn_audit returns: per population of canaries (present, deleted, never seen, retrained) and of the rows of forget the attack''s AUC and its TPR at FPR 0.1% and 1% with 95% Clopper-Pearson intervals, the lower bound on epsilon they prove, the certificate''s ceilings, the read-outs (error, confidence, entropy, and for the deleted canaries the Newton passes until relearned) and the two-release statistic';

CREATE FUNCTION unlearn_audit(
	model text,
	canaries integer DEFAULT 2000,
	shadows integer DEFAULT 16,
	attack text DEFAULT 'loo',
	forget text DEFAULT NULL,
	canary_kind text DEFAULT 'mislabeled',
	seed bigint DEFAULT NULL)
RETURNS SETOF unlearn.audit
AS 'MODULE_PATHNAME', 'unlearn_audit' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION unlearn_audit(text, integer, integer, text, text, text, bigint)
IS 'membership-inference audit of a binary logistic model (owner only): canaries made from the table''s rows enter it through INSERT, half of them leave through DELETE, an attacker (loo, the strongest, or analytic in closed form, or lira with shadow models) scores them, and everything the audit wrote is rolled back; forget => a query over the table audits the erasure of its rows before it is run (population forget)';

CREATE FUNCTION unlearn._audit_canaries(model text, canaries integer, shadows integer,
	attack text, forget text, canary_kind text, seed bigint)
RETURNS TABLE (population text, score float8, retrained_score float8, margin float8)
AS 'MODULE_PATHNAME', 'unlearn_audit_canaries' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION unlearn._audit_canaries(text, integer, integer, text, text, text, bigint) IS 'internal: unlearn_audit one row per canary (its population, the attack''s score under the model and under the retrain, its margin); for the benchmark''s ROC curves';

CREATE FUNCTION unlearn._audit_statistics(members float8[], non_members float8[],
	OUT auc float8, OUT tpr_at_0_1 float8, OUT tpr_at_0_1_low float8, OUT tpr_at_0_1_high float8,
	OUT tpr_at_1 float8, OUT tpr_at_1_low float8, OUT tpr_at_1_high float8)
AS 'MODULE_PATHNAME', 'unlearn_audit_statistics' LANGUAGE C IMMUTABLE STRICT;
COMMENT ON FUNCTION unlearn._audit_statistics(float8[], float8[]) IS 'internal: the AUC and TPRs with Clopper-Pearson intervals that unlearn_audit reports for given scores; for tests';

COMMENT ON COLUMN unlearn.progress.command IS 'training (unlearn_train), retraining (unlearn_retrain, or a retrain after a change), re-anchoring, class census (a model that releases nothing lists its classes), or audit (unlearn_audit: inserting canaries, deleting canaries, scoring canaries, training shadow models, relearning)';
