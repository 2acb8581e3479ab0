-- unlearn demo: Fashion-MNIST T-shirt/top vs Shirt, 12,000 rows, d = 784.
-- Needs the table tshirt_shirt (scripts/load_data.py tshirt_shirt) and the
-- extension installed; scripts/demo runs this file in a throw-away server:
--   psql -X -f scripts/demo.sql
\set ON_ERROR_STOP on
\set QUIET on
\pset footer off

\echo
\echo '==================================================================='
\echo ' 1. The data: Fashion-MNIST train split, T-shirt/top (0) vs Shirt (6)'
\echo '==================================================================='
CREATE EXTENSION IF NOT EXISTS unlearn;
SELECT count(*) AS rows, count(*) FILTER (WHERE is_shirt) AS shirts,
       count(*) FILTER (WHERE NOT is_shirt) AS tshirts,
       max(array_length(pixels, 1)) AS features
FROM tshirt_shirt;

\echo
\echo '==================================================================='
\echo ' 2. Train: L2-regularised logistic regression, loss-perturbed with'
\echo '    Gaussian noise sigma = 10; removal budget for (epsilon, delta) = (1, 1e-4)'
\echo '==================================================================='
\echo 'SELECT * FROM unlearn_train(''shirts'', ''tshirt_shirt'', ''is_shirt'', ''{pixels}'','
\echo '                            lambda => 1e-3, sigma => 10);'
\timing on
\x on
SELECT * FROM unlearn_train('shirts', 'tshirt_shirt', 'is_shirt', '{pixels}',
                            lambda => 1e-3, sigma => 10);
\x off
\timing off

\echo
\echo '==================================================================='
\echo ' 3. SELECT * FROM unlearn.status'
\echo '==================================================================='
\x on
SELECT * FROM unlearn.status;
\x off

\echo
\echo '==================================================================='
\echo ' 4. Predict a few rows: P(shirt) and the predicted class'
\echo '==================================================================='
SELECT id, is_shirt,
       round(unlearn_predict('shirts', pixels)::numeric, 4) AS p_shirt,
       unlearn_predict_class('shirts', pixels) AS predicted
FROM tshirt_shirt ORDER BY id LIMIT 8;

SELECT round(avg((unlearn_predict_class('shirts', pixels) = is_shirt::text)::int)::numeric, 4)
       AS training_accuracy
FROM tshirt_shirt;

-- The rows we are going to delete, with what the model says of them now.
CREATE TEMP TABLE forgotten AS
SELECT id, is_shirt, pixels, 'A: one DELETE of 50 shirts'::text AS how,
       unlearn_predict('shirts', pixels) AS p_before
FROM tshirt_shirt WHERE is_shirt ORDER BY id LIMIT 50;
INSERT INTO forgotten
SELECT id, is_shirt, pixels, 'B: 20 single-row DELETEs', unlearn_predict('shirts', pixels)
FROM tshirt_shirt WHERE NOT is_shirt ORDER BY id LIMIT 20;

\echo
\echo '==================================================================='
\echo ' 5. Delete 50 shirts in one statement: the trigger removes them from'
\echo '    the model in the same transaction (certified Newton removal)'
\echo '==================================================================='
\echo 'DELETE FROM tshirt_shirt WHERE id IN (SELECT id FROM forgotten WHERE is_shirt);'
\timing on
DELETE FROM tshirt_shirt WHERE id IN (SELECT id FROM forgotten WHERE is_shirt);
\timing off

\echo
\echo '==================================================================='
\echo ' 6. 20 single-row deletes of T-shirts, one statement (and transaction) each'
\echo '==================================================================='
\echo 'DELETE FROM tshirt_shirt WHERE id = ...;   -- x 20'
SELECT clock_timestamp() AS t0 \gset
SELECT format('DELETE FROM tshirt_shirt WHERE id = %s', id)
FROM forgotten WHERE NOT is_shirt ORDER BY id \gexec
SELECT count(*) AS rows_left,
       round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric * 1000 / 20, 1)
           AS ms_per_delete
FROM tshirt_shirt;

\echo
\echo '==================================================================='
\echo ' 7. SELECT * FROM unlearn.ledger: one line per statement, no feature values'
\echo '==================================================================='
SELECT id, model, operation, rows_removed, rows_added,
       round(bound::numeric, 6) AS bound, round(spent::numeric, 6) AS spent, retrained
FROM unlearn.ledger ORDER BY id;

\x on
SELECT * FROM unlearn.status;
\x off

\echo
\echo '==================================================================='
\echo ' 8. SELECT * FROM unlearn_verify(''shirts''): the exact gradient residual'
\echo '    must not exceed the certified bound spent; distance to a retrain'
\echo '    from scratch on the remaining rows with the same noise'
\echo '==================================================================='
\x on
SELECT * FROM unlearn_verify('shirts');
\x off

\echo
\echo '==================================================================='
\echo ' 9. The deleted rows: probability of their true class, before and after'
\echo '==================================================================='
SELECT how, count(*) AS rows,
       round(avg(CASE WHEN is_shirt THEN p_before ELSE 1 - p_before END)::numeric, 4) AS p_true_before,
       round(avg(CASE WHEN is_shirt THEN p_after ELSE 1 - p_after END)::numeric, 4) AS p_true_after,
       round(max(abs(p_after - p_before))::numeric, 4) AS max_change
FROM (SELECT *, unlearn_predict('shirts', pixels) AS p_after FROM forgotten) f
GROUP BY how ORDER BY how;

(SELECT how, id, is_shirt, round(p_before::numeric, 4) AS p_shirt_before,
        round(unlearn_predict('shirts', pixels)::numeric, 4) AS p_shirt_after
 FROM forgotten WHERE is_shirt ORDER BY id LIMIT 5)
UNION ALL
(SELECT how, id, is_shirt, round(p_before::numeric, 4),
        round(unlearn_predict('shirts', pixels)::numeric, 4)
 FROM forgotten WHERE NOT is_shirt ORDER BY id LIMIT 5);

\echo
\echo '==================================================================='
\echo '10. For comparison: retraining from scratch (fresh noise, budget reset)'
\echo '==================================================================='
\echo 'SELECT model, rows, retrains, spent FROM unlearn_retrain(''shirts'');'
\timing on
SELECT model, rows, retrains, spent FROM unlearn_retrain('shirts');
\timing off

\echo
\echo 'Done.'
