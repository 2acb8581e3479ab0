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
