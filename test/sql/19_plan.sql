-- unlearn_plan: the sigma for a number of single-row removals between
-- re-anchorings, from the table size (worst case) and from a model's
-- ledger (measured), and the accuracy that sigma costs, measured by
-- fitting the model's rows.

-- 1. worst case: sigma = sqrt(K) T gamma (n - 1) / Lambda^2 / eps'(1)
-- (Guo et al., Theorem 1), recomputed here
SELECT basis,
	   abs(sigma / (100 * (1 / (6 * sqrt(3))) * 999 / (1e-3 * 1000)^2 / unlearn_budget(1)) - 1) < 1e-12 AS sigma_formula,
	   budget >= 100 * bound_per_removal AS covers_removals,
	   abs(weight_shift - sigma * sqrt(11) / (1e-3 * 1000)) < 1e-9 * weight_shift AS shift_formula,
	   accuracy IS NULL AS no_model_no_accuracy
FROM unlearn_plan(100, rows => 1000, dims => 10);
-- one-vs-rest spends per class: sqrt(K) times the noise; epsilon and lambda move it
SELECT round(((SELECT sigma FROM unlearn_plan(100, rows => 1000, dims => 10, classes => 10)) /
			 (SELECT sigma FROM unlearn_plan(100, rows => 1000, dims => 10)))::numeric, 9) AS ratio_ten_classes,
	   round(((SELECT sigma FROM unlearn_plan(100, rows => 1000, dims => 10, lambda => 1e-2)) /
			 (SELECT sigma FROM unlearn_plan(100, rows => 1000, dims => 10)))::numeric, 9) AS ratio_lambda_ten,
	   (SELECT sigma FROM unlearn_plan(100, rows => 1000, dims => 10, epsilon => 2)) <
	   (SELECT sigma FROM unlearn_plan(100, rows => 1000, dims => 10)) AS more_epsilon_less_noise;
-- one statement of k rows is one Newton step, whose worst-case bound is
-- gamma (n - k) k^2 / Lambda^2: the budget of 100 single-row removals from
-- 1,000 rows covers one statement of 10 (10^2 990 <= 100 999 < 11^2 989),
-- and, for a measured bound, k^2 times it: 7 rows for 50 removals
SELECT basis, statement_rows FROM unlearn_plan(100, rows => 1000, dims => 10);
-- least squares removes exactly: no noise needed
SELECT sigma, bound_per_removal FROM unlearn_plan(1000, rows => 1000, dims => 10, loss => 'squared');

-- 2. a model: the measured bound is its ledger's mean per changed row, and
-- the accuracy cost is measured on its rows
CREATE TABLE pl AS SELECT id, label = 1 AS is_one, pixels FROM digits WHERE label IN (1, 7);
ALTER TABLE pl ADD PRIMARY KEY (id);
SELECT rows FROM unlearn_train('pl', 'pl', 'is_one', '{pixels}', sigma => 10);
SET client_min_messages = warning;
DELETE FROM pl WHERE id IN (SELECT id FROM pl ORDER BY id LIMIT 5);
DELETE FROM pl WHERE id IN (SELECT id FROM pl ORDER BY id LIMIT 3);
RESET client_min_messages;
SELECT p.basis,
	   abs(p.bound_per_removal - (SELECT sum(bound) / sum(rows_removed + rows_added) FROM unlearn.ledger
								  WHERE model = 'pl' AND NOT retrained AND NOT reanchored))
		 <= 1e-12 * p.bound_per_removal AS ledger_mean,
	   p.bound_per_removal < w.bound_per_removal AS tighter_than_worst_case,
	   round(p.accuracy_at_zero::numeric, 3) AS accuracy_at_zero,
	   p.accuracy BETWEEN 0 AND 1 AS accuracy_measured,
	   p.accuracy_cost = p.accuracy_at_zero - p.accuracy AS cost,
	   p.statement_rows
FROM unlearn_plan(50, model => 'pl') p, unlearn_plan(50, model => 'pl') w
WHERE p.basis = 'measured' AND w.basis = 'worst case';
-- the accuracy at sigma = 0 is that of an unperturbed fit of the same rows
SELECT rows FROM unlearn_train('pl_zero', 'pl', 'is_one', '{pixels}', sigma => 0,
							   lambda => (SELECT reg / trained_rows FROM unlearn.models WHERE model = 'pl'));
SELECT round(p.accuracy_at_zero::numeric, 9) = round(v.accuracy::numeric, 9) AS same_as_unperturbed_fit
FROM unlearn_plan(1, model => 'pl') p, unlearn_verify('pl_zero') v WHERE p.basis = 'worst case';
-- a model with no change yet has only the worst case
SELECT basis FROM unlearn_plan(10, model => 'pl_zero');

-- 3. a model trained at the worst-case sigma takes that many single-row
-- DELETEs without a retrain and stays certified.  (It may re-anchor once:
-- Theorem 1 bounds one removal from the optimum, while the model's own
-- per-step bounds also pay for the stale Hessian, so 0 or 1 re-anchorings
-- are both sound and the count is not shown.)
SELECT rows FROM unlearn_train('pl_planned', 'pl', 'is_one', '{pixels}',
	sigma => (SELECT sigma FROM unlearn_plan(20, rows => (SELECT count(*) FROM pl), dims => 64)));
SET client_min_messages = warning;
DO $$ BEGIN FOR i IN 1..20 LOOP
	DELETE FROM pl WHERE id = (SELECT min(id) FROM pl);
END LOOP; END $$;
RESET client_min_messages;
SELECT removed, retrains, spent <= budget AS within_budget FROM unlearn.models WHERE model = 'pl_planned';
SELECT certified FROM unlearn_verify('pl_planned');

-- 4. bad input, and a model of another role
SELECT * FROM unlearn_plan(0, rows => 100, dims => 3);
SELECT * FROM unlearn_plan(10, rows => 1, dims => 3);
SELECT * FROM unlearn_plan(10, dims => 3);
SELECT * FROM unlearn_plan(10, rows => 100, dims => 3, classes => 1);
SELECT * FROM unlearn_plan(10, rows => 100, dims => 3, loss => 'hinge');
SELECT * FROM unlearn_plan(10, rows => 100, dims => 3, epsilon => 0);
SELECT * FROM unlearn_plan(10, rows => 100, dims => 3, lambda => -1);
SELECT * FROM unlearn_plan(NULL, rows => 100, dims => 3);
SELECT * FROM unlearn_plan(10, rows => 100, dims => 3, loss => NULL);
SELECT * FROM unlearn_plan(10, rows => 100, dims => 3, epsilon => NULL);
SELECT * FROM unlearn_plan(10, model => 'no_such_model');
CREATE ROLE pl_other;
SET ROLE pl_other;
SELECT * FROM unlearn_plan(10, model => 'pl');
RESET ROLE;
DROP ROLE pl_other;

SELECT unlearn_drop(model) FROM unlearn.models WHERE model LIKE 'pl%' ORDER BY model;
DROP TABLE pl;
