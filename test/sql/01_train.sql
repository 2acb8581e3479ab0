-- Training: binary, one-vs-rest, least squares; the catalog; prediction.
SELECT model, source, loss, classes, dims, rows, removed, retrains,
	   round(budget::numeric, 6) AS budget, spent <= budget / 20 AS tiny_residual, bound, steps
FROM unlearn_train('ones', 'ones_sevens', 'is_one', '{pixels}', sigma => 1);

SELECT model, loss, classes, dims, rows FROM unlearn_train('digits10', 'digits', 'label', '{pixels}', lambda => 1e-4, sigma => 0.5);

SELECT model, loss, classes, dims, rows, spent < 1e-6 AS exact
FROM unlearn_train('diab', 'diabetes', 'target', '{age,sex,bmi,bp,s1,s2,s3,s4,s5,s6}',
				   loss => 'squared', lambda => 1e-6, sigma => 0);

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
SELECT model, classes, dims FROM unlearn_train('small01', 'small01', 'three', '{a,b,c,d}');
SELECT (SELECT classes FROM unlearn.models WHERE model = 'small01');
SELECT unlearn_predict_class('small01', ARRAY[0, 0, 0, 0]::float8[]);
