-- unlearn 0.13.0 -> 0.14.0: the row functions of the training passes
-- declare their cost.  A call of unlearn._row_values or unlearn._row_x
-- detoasts (often decompresses), converts or maps a whole row of features;
-- declared at the default cost of one operator, a pass over a table of some
-- 10,000 rows of wide arrays (Fashion-MNIST's 784 pixels, 15 MB) looked
-- too cheap to the planner for parallel workers, and its gradient-only and
-- moments passes ran in one process.  With COST 100 they are planned as
-- Partial Aggregate under Gather, as the Hessian passes already were
-- (their transition function has COST 100).
\echo Use "ALTER EXTENSION unlearn UPDATE TO '0.14.0'" to load this file. \quit

ALTER FUNCTION unlearn._row_values(VARIADIC "any") COST 100;
ALTER FUNCTION unlearn._row_x(text, float8[], float8[]) COST 100;
