#!/usr/bin/python3
"""What feature expressions cost a table's writers: DELETEs of 50 and 5,000
rows (each rolled back) on copies of one synthetic table of --rows rows,
against the same DELETE on a copy with a model on plain columns.

  no model        a plain copy
  columns         a model on two columns (income, age)
  expressions     a model on ln(income) and age * 2: each changed row is
                  decoded in a subtransaction, so that an expression that
                  fails for a row cannot make the statement fail
  longest linear  trained by a role that does not own the table: income and
                  the longest expression of linear cost such a role may
                  attach (4,096 bytes: region IN a list of 330 strings)
  table owner's   trained by the table's owner: income and
                  age + 0 * length(repeat(region, --repeat)), which a role
                  that does not own the table may not attach (the issue's
                  attack used a repeat count of 1,000,000)

Median wall time of --reps runs each, interleaved over the tables; the
ratio is to the same DELETE with the column model.  No assertion about
time.
"""

import argparse

import common as C

TABLES = [
    ("no model", "ex_plain", None),
    ("columns", "ex_columns", "ARRAY['income', 'age']"),
    ("expressions", "ex_exprs", "ARRAY['ln(income)', 'age * 2']"),
    ("longest linear", "ex_linear", None),   # trained by the non-owner below
    ("table owner's", "ex_owner", None),     # its expression depends on --repeat
]
NON_OWNER = "ex_bench_modeler"


def longest_linear_expression():
    return "region IN (%s)" % ", ".join("'r%04d'" % i for i in range(330))


def setup(conn, rows, repeat):
    C.execute(conn, "DROP TABLE IF EXISTS ex_base")
    C.execute(conn, """CREATE TABLE ex_base AS
        SELECT g AS id, 1 + g %% 50 AS income, 20 + g %% 40 AS age,
               CASE WHEN g %% 3 = 0 THEN 'north' ELSE 'south' END AS region, g %% 7 > 3 AS y
        FROM generate_series(1, %d) g""" % rows)
    for _, table, _ in TABLES:
        C.execute(conn, "DROP TABLE IF EXISTS %s" % table)
        C.execute(conn, "CREATE TABLE %s AS SELECT * FROM ex_base" % table)
        C.execute(conn, "ALTER TABLE %s ADD PRIMARY KEY (id)" % table)
    C.execute(conn, "ALTER TABLE ex_base RENAME TO ex_base_done")
    C.execute(conn, "DROP TABLE ex_base_done")
    for _, table, features in TABLES:
        if features is not None:
            C.execute(conn, "SELECT count(*) FROM unlearn_train(%s, %s, 'y', " + features + ", sigma => 1)",
                      (table, table))
    C.execute(conn, "DROP ROLE IF EXISTS %s" % NON_OWNER)
    C.execute(conn, "CREATE ROLE %s" % NON_OWNER)
    C.execute(conn, "GRANT SELECT, TRIGGER ON ex_linear TO %s" % NON_OWNER)
    C.execute(conn, "SET ROLE %s" % NON_OWNER)
    C.execute(conn, "SELECT count(*) FROM unlearn_train('ex_linear', 'ex_linear', 'y', %s, sigma => 1)",
              (["income", longest_linear_expression()],))
    C.execute(conn, "RESET ROLE")
    C.execute(conn, "SELECT count(*) FROM unlearn_train('ex_owner', 'ex_owner', 'y', %s, sigma => 1)",
              (["income", "age + 0 * length(repeat(region, %d))" % repeat],))
    C.execute(conn, "CHECKPOINT")


def teardown(conn):
    for _, table, _ in TABLES:
        C.execute(conn, "DROP TABLE IF EXISTS %s" % table)
    C.execute(conn, "DROP ROLE IF EXISTS %s" % NON_OWNER)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=10000)
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    conn = C.connect()
    C.preamble(conn, "expressions: what a model's feature expressions cost a DELETE")
    setup(conn, args.rows, args.repeat)
    conn.autocommit = False
    times = {}
    for k in (50, 5000):
        for _ in range(args.reps):
            for label, table, _ in TABLES:
                t = C.timed(conn, "DELETE FROM %s WHERE id <= %d" % (table, k))
                conn.rollback()
                times.setdefault((label, k), []).append(t * 1e3)
    conn.autocommit = True
    rows = []
    for label, _, _ in TABLES:
        row = [label]
        for k in (50, 5000):
            ms = C.median(times[(label, k)])
            row += [ms, ms / C.median(times[("columns", k)])]
        rows.append(row)
    print()
    C.table(["table", "50 rows ms", "x columns", "5,000 rows ms", "x columns"], rows,
            ["", ".2f", ".2f", ".1f", ".2f"])
    teardown(conn)


if __name__ == "__main__":
    main()
