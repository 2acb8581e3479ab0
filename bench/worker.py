#!/usr/bin/python3
"""Re-anchorings per 10,000 single-row DELETEs, with and without the
maintenance worker.

Fashion-MNIST T-shirt/top vs Shirt (d = 784, n = 12,000), logistic, sigma = 10,
the taylor bound, on_exhausted = retrain.  One connection deletes --deletes rows
one statement at a time, in a fixed random order, committed; then the same on a
fresh copy with the worker switched on (ALTER SYSTEM SET unlearn.worker = on,
unlearn.worker_naptime = 1) at each of --thresholds
(unlearn.worker_reanchor_at).  The runs alternate (off, then each threshold)
--reps times.

For each run the ledger tells who paid the O(n p^2) passes: statements that
re-anchored or retrained, against the worker's 'reanchor' and 'retrain'
entries; and the statements' latency (median, 99th percentile, maximum) shows
what the user sees.
"""

import argparse
import time

import numpy as np

import common as C

SOURCE = "tshirt_shirt"
TABLE = "bench_wk"
SIGMA = 10.0


def fresh(conn):
    C.fresh_copy(conn, TABLE, SOURCE, "id, is_shirt, pixels")
    C.execute(conn, "SELECT count(*) FROM unlearn_train('wk', %s, 'is_shirt', '{pixels}', "
              "sigma => %s)", (TABLE, SIGMA))
    return [r[0] for r in C.execute(conn, "SELECT id FROM %s ORDER BY id" % TABLE)]


def set_worker(conn, on, at=0.5):
    C.execute(conn, "ALTER SYSTEM SET unlearn.worker = %s" % ("on" if on else "off"))
    C.execute(conn, "ALTER SYSTEM SET unlearn.worker_naptime = 1")
    C.execute(conn, "ALTER SYSTEM SET unlearn.worker_reanchor_at = %s" % float(at))
    C.execute(conn, "SELECT pg_reload_conf()")
    time.sleep(1.5)


def run(conn, ids, deletes, seed):
    order = np.random.default_rng(seed).permutation(np.array(ids))[:deletes]
    first = C.one(conn, "SELECT coalesce(max(id), 0) FROM unlearn.ledger")
    lat = []
    for i in order:
        lat.append(C.timed(conn, "DELETE FROM %s WHERE id = %%s" % TABLE, (int(i),)) * 1e3)
    time.sleep(2.0)             # let the worker finish what the last statements asked
    counts = dict(C.execute(conn, """
        SELECT k, count(*) FROM (
          SELECT CASE WHEN operation = 'delete' AND retrained THEN 'stmt_retrain'
                      WHEN operation = 'delete' AND reanchored THEN 'stmt_reanchor'
                      WHEN operation IN ('reanchor', 'retrain') THEN 'worker_' || operation
                 END AS k
          FROM unlearn.ledger WHERE model = 'wk' AND id > %s) t
        WHERE k IS NOT NULL GROUP BY k""", (first,)))
    certified = C.one(conn, "SELECT certified FROM unlearn_verify('wk')")
    lat = np.array(lat)
    return dict(counts=counts, median=float(np.median(lat)), p99=float(np.percentile(lat, 99)),
                max=float(lat.max()), certified=certified)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--deletes", type=int, default=10000)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--thresholds", default="0.5",
                    help="unlearn.worker_reanchor_at values of the runs with the worker")
    args = ap.parse_args()
    conn = C.connect()
    C.preamble(conn, "re-anchorings per %d single-row DELETEs, without and with the worker"
               % args.deletes)
    rows = []
    configs = [None] + [float(t) for t in args.thresholds.split(",")]
    for rep in range(args.reps):
        for at in configs:
            set_worker(conn, False)
            ids = fresh(conn)
            set_worker(conn, at is not None, at or 0.5)
            r = run(conn, ids, args.deletes, seed=rep)
            c = r["counts"]
            rows.append(["off" if at is None else "on, %.2f" % at, rep,
                         c.get("stmt_reanchor", 0), c.get("stmt_retrain", 0),
                         c.get("worker_reanchor", 0), c.get("worker_retrain", 0),
                         "%.2f" % r["median"], "%.1f" % r["p99"], "%.0f" % r["max"],
                         r["certified"]])
    set_worker(conn, False)
    C.execute(conn, "ALTER SYSTEM RESET unlearn.worker_reanchor_at")
    C.execute(conn, "SELECT pg_reload_conf()")
    C.table(["worker, threshold", "rep", "stmt re-anchor", "stmt retrain", "worker re-anchor",
             "worker retrain", "median ms", "p99 ms", "max ms", "certified"], rows)
    fresh(conn)
    C.execute(conn, "SELECT unlearn_drop('wk')")
    C.execute(conn, "DROP TABLE %s" % TABLE)


if __name__ == "__main__":
    main()
