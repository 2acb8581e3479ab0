-- unlearn 0.5.0 -> 0.6.0: feature expressions.  A feature may be an
-- expression over the row (log(income), age * age, colour = 'red') that
-- uses only built-in immutable functions and operators; the catalog keeps
-- its canonical text and marks it as an expression.

\echo Use "ALTER EXTENSION unlearn UPDATE TO '0.6.0'" to load this file. \quit

ALTER TABLE unlearn.models ADD COLUMN expressions boolean[];
COMMENT ON COLUMN unlearn.models.features IS 'per feature: a column name, or the canonical text of an expression over the row (see expressions)';
COMMENT ON COLUMN unlearn.models.expressions IS 'per feature: true when it is an expression over the row (built-in immutable functions and operators only), false for a column; NULL: every feature is a column';
COMMENT ON FUNCTION unlearn_train(text, regclass, text, text[], text, float8, float8, float8, float8, boolean, text, text, text, boolean, boolean, text, float8[], float8[], text)
IS 'train a removal-ready L2-regularised, loss-perturbed linear model on the rows of a table; features are columns or expressions over the row such as log(income) (built-in immutable functions only); preprocess standardizes each feature column (standardize), with a declared centre and spread (declared), or not at all (none); nulls => skip leaves rows with a null in a model column outside the model';
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
RETURNS TABLE(basis text, sigma float8, budget float8, bound_per_removal float8,
			  weight_shift float8, accuracy_at_zero float8, accuracy float8, accuracy_cost float8)
AS 'MODULE_PATHNAME', 'unlearn_plan' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION unlearn_plan(bigint, text, bigint, integer, integer, float8, float8, float8, text, boolean)
IS 'the sigma that lets a model absorb a number of single-row removals between re-anchorings: worst case from the table size, and measured from a model''s ledger; for a model (owner only), the accuracy cost of that sigma measured by fitting its rows';
