-- The first hour of a new user, replayed: a customers table with a
-- NULL-able visit count, a text region, a signup date and a churn label,
-- loaded with COPY; a purchases table referencing it; a churn model on the
-- first and a spend model on the second, both with the defaults; then the
-- erasure of one customer across both (a DELETE cascading to the
-- purchases), and more writes with NULLs.  Every statement succeeds, and
-- each model ends certified.  A third model takes its regions from the
-- rows (category(region)): a new region enters it, and the erasure of the
-- region's only customer takes the region out of its features.
SET client_min_messages = warning;
CREATE TABLE fh_customers (id int PRIMARY KEY, region text, visits int, signup date, churned boolean);
CREATE TABLE fh_purchases (id int PRIMARY KEY, customer int REFERENCES fh_customers ON DELETE CASCADE,
	amount numeric, at date, promo boolean);
CREATE TEMP TABLE fh_source AS
SELECT i AS id, (ARRAY['north', 'south', 'east', NULL])[i % 4 + 1] AS region,
	   CASE WHEN i % 9 = 0 THEN NULL ELSE (i * 13) % 40 END AS visits,
	   date '2018-01-01' + (i * 37) % 1500 AS signup,
	   ((i * 13) % 40 < 12) <> (i % 17 = 0) AS churned
FROM generate_series(1, 600) i;
COPY fh_source TO '/tmp/unlearn_fh_customers.copy';
COPY fh_customers FROM '/tmp/unlearn_fh_customers.copy';
INSERT INTO fh_purchases SELECT j, 1 + (j * 7) % 600, CASE WHEN j % 23 = 0 THEN NULL ELSE 5 + (j % 50) END,
	date '2020-01-01' + j % 700, j % 5 = 0
FROM generate_series(1, 2000) j;

SELECT model, rows, classes, state FROM unlearn_train('fh_churn', 'fh_customers', 'churned',
	ARRAY['visits', 'signup', 'category(region, ''{north,south,east}'')'], sigma => 10);
SELECT model, rows, state FROM unlearn_train('fh_spend', 'fh_purchases', 'amount', '{at,promo}',
	loss => 'squared', sigma => 0);
SELECT model, rows, classes, state FROM unlearn_train('fh_churn_regions', 'fh_customers', 'churned',
	ARRAY['visits', 'signup', 'category(region)'], sigma => 10);
SELECT model, rows, skipped FROM unlearn.status WHERE model LIKE 'fh\_%' ORDER BY model;

-- writes with NULLs and a new region go through
INSERT INTO fh_customers VALUES (1001, 'atlantis', NULL, date '2021-02-03', false), (1002, NULL, 5, NULL, true);
UPDATE fh_customers SET visits = NULL WHERE id % 50 = 1;
COPY fh_purchases FROM stdin;
5001	1001	\N	2021-03-01	f
5002	1002	12.5	\N	t
\.

-- the erasure of customer 7 (and, by the cascade, of their purchases)
SELECT count(*) AS purchases_of_7 FROM fh_purchases WHERE customer = 7;
DELETE FROM fh_customers WHERE id = 7;
SELECT model, rows = (SELECT count(*) FROM fh_customers) AS every_customer FROM unlearn.status WHERE model = 'fh_churn';
SELECT model, rows = (SELECT count(*) FROM fh_purchases WHERE amount IS NOT NULL) AS every_priced_purchase
FROM unlearn.status WHERE model = 'fh_spend';
SELECT operation, rows_removed FROM unlearn.ledger WHERE model LIKE 'fh\_%' AND operation = 'delete' ORDER BY model, id;
SELECT model, certified FROM unlearn.models, LATERAL unlearn_verify(model) WHERE model LIKE 'fh\_%' ORDER BY model;
SELECT array_to_string(features, ' ') LIKE '%atlantis%' AS knows_atlantis
FROM unlearn.models WHERE model = 'fh_churn_regions';
DELETE FROM fh_customers WHERE id = 1001;
SELECT array_to_string(features, ' ') LIKE '%atlantis%' AS knows_atlantis,
	   rows = (SELECT count(*) FROM fh_customers) AS every_customer
FROM unlearn.models WHERE model = 'fh_churn_regions';
SELECT certified FROM unlearn_verify('fh_churn_regions');

RESET client_min_messages;
SELECT unlearn_drop('fh_churn'), unlearn_drop('fh_spend'), unlearn_drop('fh_churn_regions');
DROP TABLE fh_purchases, fh_customers;
