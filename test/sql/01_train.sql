-- Training: binary, one-vs-rest, least squares; the catalog; prediction.
SELECT model FROM unlearn_train('ones', 'ones_sevens', 'is_one', '{pixels}', sigma => 1);
SELECT model, source, loss, classes, dims, rows, removed, retrains,
	   round(budget::numeric, 6) AS budget, spent <= budget / 20 AS tiny_residual, bound, steps FROM unlearn.status WHERE model = 'ones';

SELECT model FROM unlearn_train('digits10', 'digits', 'label', '{pixels}', lambda => 1e-4, sigma => 0.5);
SELECT model, loss, classes, dims, rows FROM unlearn.status WHERE model = 'digits10';

SELECT model FROM unlearn_train('diab', 'diabetes', 'target', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
				   loss => 'squared', lambda => 1e-6, sigma => 0);
SELECT model, loss, classes, dims, rows, spent < 1e-6 AS exact FROM unlearn.status WHERE model = 'diab';

-- the catalog contract
SELECT model, source, loss, dims, rows, removed, retrains, reg = lambda * rows AS reg_is_lambda_n,
	   sigma, epsilon, delta, round(budget::numeric, 6) AS budget, spent <= budget AS within_budget,
	   trained_at <= now() AS trained
FROM unlearn.models ORDER BY model;

-- the budget is the analytic Gaussian one: 0.314 sigma at epsilon 1, delta 1e-4,
-- 1.38 times the paper's sigma epsilon / sqrt(2 ln(1.5 / delta))
SELECT round(unlearn_budget(1)::numeric, 6) AS analytic,
	   round((unlearn_budget(1) / (1 / sqrt(2 * ln(1.5 / 1e-4))))::numeric, 3) AS gain,
	   unlearn_budget(0) AS no_noise,
	   round(unlearn_budget(10, 0.1, 1e-5)::numeric, 6) AS eps_01;

-- coefficients: p = d + 1 weights, K rows for one-vs-rest
SELECT array_length(unlearn_coef('ones'), 1) AS p,
	   array_dims(unlearn_coef('digits10')) AS ovr_dims,
	   array_length(unlearn_coef('diab'), 1) AS p_diab;

-- training accuracy through the fast scoring path and the per-row one agree
SELECT avg((s.label = o.is_one::text)::int) > 0.98 AS accurate,
	   bool_and(abs(s.score - unlearn_predict('ones', o.pixels)) < 1e-12) AS same_scores
FROM unlearn_score('ones') s JOIN ones_sevens o ON o.id = (s.key->>'id')::int;
SELECT avg((unlearn_predict_class('digits10', pixels) = label::text)::int) > 0.95 AS accurate
FROM digits;
SELECT round(unlearn_predict('diab', ARRAY[50, 1, 25, 90, 190, 110, 50, 4, 4.6, 90]::float8[])::numeric, 0) > 0 AS positive_value;

-- the state table is not public; the status view is
SELECT has_table_privilege('public', 'unlearn.model_state', 'SELECT') AS granted_but_row_secured,
	   relrowsecurity FROM pg_class WHERE oid = 'unlearn.model_state'::regclass;
SELECT model, rows, removed, pct_spent IS NOT NULL AS has_pct FROM unlearn.status ORDER BY model;

-- one set of triggers per table, enabled ALWAYS
SELECT tgrelid::regclass, tgname, tgenabled FROM pg_trigger
WHERE tgname LIKE 'unlearn%' ORDER BY tgrelid::regclass::text, tgname;

-- replace
SELECT model, rows FROM unlearn_train('ones', 'ones_sevens', 'is_one', '{pixels}', replace => true);
SELECT operation, rows_added FROM unlearn.ledger WHERE model = 'ones' ORDER BY id;

-- labels {0, 1} as integers and a column list of features
CREATE TABLE small01 AS SELECT id, (label = 3)::int AS three, pixels[20] AS a, pixels[21] AS b, pixels[36] AS c,
	pixels[44] AS d FROM digits;
SELECT model FROM unlearn_train('small01', 'small01', 'three', '{a,b,c,d}');
SELECT model, classes, dims FROM unlearn.status WHERE model = 'small01';
SELECT (SELECT classes FROM unlearn.models WHERE model = 'small01');
SELECT unlearn_predict_class('small01', ARRAY[0, 0, 0, 0]::float8[]);

-- the summary unlearn_train and unlearn_retrain return: the fit on the
-- model's own rows (accuracy, or R^2 for least squares) as unlearn_evaluate
-- measures it, the budget and spent to 4 and 3 significant digits, the
-- seconds taken; unlearn.status has the rest
CREATE FUNCTION pg_temp.summary_check(s unlearn.summary) RETURNS TABLE (model text, rows_match boolean,
	classes integer, accuracy_of_its_rows boolean, r2_of_its_rows boolean, budget_shown boolean, state text,
	timed boolean) LANGUAGE sql AS $$
	SELECT s.model, s.rows = st.rows, s.classes,
		   s.accuracy IS NOT DISTINCT FROM round(e.accuracy::numeric, 4)::float8,
		   s.r2 IS NOT DISTINCT FROM round(e.r2::numeric, 4)::float8,
		   abs(s.budget - st.budget) <= 5e-4 * st.budget, s.state, s.seconds >= 0
	FROM unlearn.status st, unlearn_evaluate(s.model) e WHERE st.model = s.model
$$;
SELECT c.* FROM unlearn_train('sum_ovr', 'digits', 'label', '{pixels}', lambda => 1e-3, sigma => 0.5) s,
	pg_temp.summary_check(s) c;
SELECT c.* FROM unlearn_train('sum_lsq', 'diabetes', 'target', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
							  loss => 'squared', sigma => 0) s, pg_temp.summary_check(s) c;
SELECT c.* FROM unlearn_retrain('sum_ovr') s, pg_temp.summary_check(s) c;
SELECT unlearn_drop('sum_ovr'), unlearn_drop('sum_lsq');
