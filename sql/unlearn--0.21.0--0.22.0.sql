-- unlearn 0.21.0 -> 0.22.0: a feature category(column) takes its
-- categories from the model's rows (unlearn.models.taken_categories).
\echo Use "ALTER EXTENSION unlearn UPDATE TO '0.22.0'" to load this file. \quit

ALTER TABLE unlearn.models ADD COLUMN taken_categories text[];
COMMENT ON COLUMN unlearn.models.taken_categories IS 'the columns of features category(column), whose categories are taken from the rows: public like classes; a change after which a category has no row, or a row has a value that is no category, retrains the model, which takes them afresh; NULL: none';
