#!/usr/bin/python3
"""Scoring a table: unlearn_score_row and unlearn_score against plain SQL.

A synthetic table of N rows x 50 float8 columns (default N = 1,000,000;
--rows) with a binary label, a model trained on it, then every row scored
in one process, side by side, each way timed --reps times (median):

  plain SQL     SELECT id, unlearn_predict(m, ARRAY[c1, ..., c50]) FROM t, the
                same with unlearn_predict_class too, and with the key as
                jsonb_build_object('id', id::text) (what unlearn_score
                returns)
  score_row     SELECT t.id, s.* FROM t, unlearn_score_row(m, t) s, and the
                same with the function in a subquery's select list
  score (key)   SELECT * FROM unlearn_score(m)   (jsonb primary key, label,
                score): aggregated on the server, and returned to the client;
                with workers, the rows are scored in them
                against plain SQL returning id, unlearn_predict_class and
                unlearn_predict
  numpy         the same weights and row map applied to the rows in NumPy
                (fetched once, not timed in the fetch)

Plain SQL, score_row and unlearn_score run serially and with 2 parallel workers, each
aggregating its output on the server (count and sum of the scores), so
that the client's transfer is not what is measured.  unlearn_score returns
its rows to the client, and so does the plain SQL it is compared with;
psycopg2 parses each jsonb key into a dict, so it is also fetched as
key::text.  The sums are compared to show that every way computes the
same scores.
"""

import argparse
import statistics
import time

import numpy as np

import common

D = 50


def build(conn, rows):
    cols = ", ".join("c%d float8" % j for j in range(1, D + 1))
    common.execute(conn, "DROP TABLE IF EXISTS bench_score")
    common.execute(conn, "CREATE TABLE bench_score (id bigint PRIMARY KEY, y boolean, %s)" % cols)
    # deterministic pseudo-random features; the label depends on a few of them
    exprs = ", ".join("sin(g * %d.123 + %d) * %d" % (j, j, 1 + j % 7) for j in range(1, D + 1))
    common.execute(conn, "INSERT INTO bench_score SELECT g, sin(g * 1.123 + 1) + cos(g * 0.5) > 0, %s "
                   "FROM generate_series(1, %d) g" % (exprs, rows))
    common.execute(conn, "VACUUM ANALYZE bench_score")


def timed_median(conn, query, reps, settings=()):
    times = []
    result = None
    with conn.cursor() as cur:
        for s in settings:
            cur.execute(s)
        for _ in range(reps):
            t0 = time.perf_counter()
            cur.execute(query)
            result = cur.fetchall()
            times.append(time.perf_counter() - t0)
        cur.execute("RESET ALL")
    return statistics.median(times), result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1000000)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()

    conn = common.connect()
    common.preamble(conn, "Scoring %d rows x %d columns: unlearn_score_row and unlearn_score "
                    "against plain SQL" % (args.rows, D))
    t0 = time.perf_counter()
    build(conn, args.rows)
    print("table built in %.1f s" % (time.perf_counter() - t0))
    features = "{%s}" % ",".join("c%d" % j for j in range(1, D + 1))
    for (name,) in common.execute(conn, "SELECT model FROM unlearn.models WHERE model = 'bench_score'"):
        common.execute(conn, "SELECT unlearn_drop(%s)", (name,))
    t0 = time.perf_counter()
    common.execute(conn, "SELECT unlearn_train('bench_score', 'bench_score', 'y', %s, sigma => 1)", (features,))
    print("model trained in %.1f s" % (time.perf_counter() - t0))

    array = "ARRAY[%s]" % ", ".join("c%d" % j for j in range(1, D + 1))
    plain = ("SELECT count(*), sum(p) FROM (SELECT id, unlearn_predict('bench_score', %s) AS p "
             "FROM bench_score) x" % array)
    by_row = ("SELECT count(*), sum(s.score) FROM bench_score t, unlearn_score_row('bench_score', t) s")
    by_row_list = ("SELECT count(*), sum((s).score) FROM (SELECT unlearn_score_row('bench_score', t) AS s "
                   "FROM bench_score t OFFSET 0) x")
    by_key = "SELECT * FROM unlearn_score('bench_score')"
    by_key_text = "SELECT key::text, label, score FROM unlearn_score('bench_score')"
    plain_labelled = ("SELECT count(*), sum(p), count(c) FROM (SELECT id, unlearn_predict_class('bench_score', %s) AS c, "
                      "unlearn_predict('bench_score', %s) AS p FROM bench_score) x" % (array, array))
    by_key_sum = "SELECT count(*), sum(score), count(label) FROM unlearn_score('bench_score')"
    plain_keyed = ("SELECT count(*), sum(p), count(c), count(k) FROM (SELECT jsonb_build_object('id', id::text) AS k, "
                   "unlearn_predict_class('bench_score', %s) AS c, unlearn_predict('bench_score', %s) AS p "
                   "FROM bench_score) x" % (array, array))
    plain_rows = ("SELECT id, unlearn_predict_class('bench_score', %s), unlearn_predict('bench_score', %s) "
                  "FROM bench_score" % (array, array))
    serial = ("SET max_parallel_workers_per_gather = 0",)
    parallel = ("SET max_parallel_workers_per_gather = 2", "SET parallel_setup_cost = 0",
                "SET parallel_tuple_cost = 0")

    rows = []
    t_plain, r_plain = timed_median(conn, plain, args.reps, serial)
    rows.append(["plain SQL, serial", t_plain, 1.0, r_plain[0][1]])
    t, r = timed_median(conn, by_row, args.reps, serial)
    rows.append(["unlearn_score_row (FROM t, LATERAL), serial", t, t / t_plain, r[0][1]])
    t, r = timed_median(conn, by_row_list, args.reps, serial)
    rows.append(["unlearn_score_row (select list), serial", t, t / t_plain, r[0][1]])
    t, r = timed_median(conn, plain_labelled, args.reps, serial)
    rows.append(["plain SQL with class, serial", t, t / t_plain, r[0][1]])
    t, r = timed_median(conn, plain_keyed, args.reps, serial)
    rows.append(["plain SQL, jsonb key and class, serial", t, t / t_plain, r[0][1]])
    t, r = timed_median(conn, by_key_sum, args.reps, serial)
    rows.append(["unlearn_score (key, class, score), serial", t, t / t_plain, r[0][1]])
    t, r = timed_median(conn, plain, args.reps, parallel)
    rows.append(["plain SQL, 2 workers", t, t / t_plain, r[0][1]])
    t, r = timed_median(conn, plain_labelled, args.reps, parallel)
    rows.append(["plain SQL with class, 2 workers", t, t / t_plain, r[0][1]])
    t, r = timed_median(conn, plain_keyed, args.reps, parallel)
    rows.append(["plain SQL, jsonb key and class, 2 workers", t, t / t_plain, r[0][1]])
    t, r = timed_median(conn, by_key_sum, args.reps, parallel)
    rows.append(["unlearn_score, 2 workers", t, t / t_plain, r[0][1]])
    t, r = timed_median(conn, by_row, args.reps, parallel)
    rows.append(["unlearn_score_row (LATERAL), 2 workers", t, t / t_plain, r[0][1]])
    t, r = timed_median(conn, by_row_list, args.reps, parallel)
    rows.append(["unlearn_score_row (select list), 2 workers", t, t / t_plain, r[0][1]])
    t_rows, r = timed_median(conn, plain_rows, args.reps, serial)
    rows.append(["rows to client: plain SQL (id, class, score)", t_rows, t_rows / t_plain,
                 sum(x[2] for x in r)])
    t, r = timed_median(conn, by_key, args.reps, serial)
    rows.append(["rows to client: unlearn_score (jsonb key)", t, t / t_plain, sum(x[2] for x in r)])
    t, r = timed_median(conn, by_key_text, args.reps, serial)
    rows.append(["rows to client: unlearn_score (key::text)", t, t / t_plain, sum(x[2] for x in r)])

    # NumPy: the same weights and map on the same rows (fetch not timed)
    X = np.array([r[0] for r in common.execute(conn, "SELECT %s FROM bench_score ORDER BY id" % array)],
                 dtype=np.float64)
    m = common.model_row(conn, "bench_score")
    w = common.coef(conn, "bench_score")
    t0 = time.perf_counter()
    Z, _ = common.row_map(X, np.array(m["centre"]), np.array(m["spread"]), m["scale"])
    p = 1.0 / (1.0 + np.exp(-(Z @ w)))
    t_np = time.perf_counter() - t0
    rows.append(["NumPy on fetched rows (reference)", t_np, t_np / t_plain, float(p.sum())])

    common.table(["way", "seconds", "x plain serial", "sum of scores"], rows,
                 ["", ".3f", ".2f", ".6f"])
    sums = [r[3] for r in rows]
    spread = max(sums) - min(sums)
    print("largest difference between the sums: %.3g (%s)" %
          (spread, "the same scores" if spread <= 1e-6 * max(1.0, abs(sums[0])) else "DIFFERENT"))


if __name__ == "__main__":
    main()
