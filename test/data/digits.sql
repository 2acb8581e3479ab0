-- Fixture: sklearn's 8x8 digits, 1797 rows, read straight from the file that
-- python3-sklearn ships.  Use from a pg_regress test (which runs from the
-- repository root) with:  \i test/data/digits.sql
-- Each line of digits.csv.gz is 64 pixel values then the label; sed turns it
-- into "label;{p1,...,p64}" so that one client-side \copy fills both columns.
CREATE TABLE digits (id serial PRIMARY KEY, label int NOT NULL, pixels float8[] NOT NULL);
\copy digits (label, pixels) FROM PROGRAM 'zcat /usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz | sed -E "s/^(.*),([0-9]+)$/\2;{\1}/"' (DELIMITER ';')
ANALYZE digits;
