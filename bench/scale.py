#!/usr/bin/python3
"""Training at scale: the time of each pass, peak memory, re-anchoring
against one pass, and scikit-learn's default lbfgs side by side.

Synthetic logistic data generated in SQL (scale_<rows>_<dims>, UNLOGGED to
keep the generation short): x uniform on [-1, 1]^d in a float8[] column,
y = (random() < sigmoid(beta . x)) with beta_j = ((37 j mod 11) - 5) / 5,
and a held-out table of --test-rows rows drawn the same way.  Optionally
Fashion-MNIST T-shirt vs Shirt (tshirt_shirt, d = 784), held out on the
t10k split.

For each data set, in one Python process:

* the extension, sigma => 1 (the default): unlearn_train(..., verbose =>
  true) in a fresh connection; the NOTICE of each pass gives its time
  (census, column moments, Newton passes); peak backend memory is VmHWM of
  /proc/<pid>/status (root can read it);
* re-anchoring: unlearn_evict, then a one-row DELETE, which rebuilds the
  removal state by re-anchoring (one Hessian pass and, for guo, a Gram
  pass); its time minus that of a one-row DELETE without eviction, against
  the median Newton pass;
* at sigma => 0 (with --sklearn): the extension's training time and
  held-out accuracy (unlearn_evaluate) at lambda = 1e-3 (the default) and
  at lambda = 1/n (Lambda = lambda n = 1, the penalty weight of C = 1),
  against scikit-learn's
  LogisticRegression() with its defaults (lbfgs, C = 1, max_iter = 100):
  export by binary COPY plus fit, and its held-out accuracy.

Prints tables; asserts nothing about timing.  Run through bench/run:

  bench/run scale.py --rows 10000000 --dims 100 --no-sklearn
  bench/run scale.py --rows 1000000 --dims 50 --fashion
"""

import argparse
import re
import time
import warnings

import numpy as np
from psycopg2 import sql
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

import common as C

PASS_RE = re.compile(r"pass (\d+) \(([^)]*)\) over .* in ([0-9.]+) s")
CHUNK = 1000000


def beta(d):
    return [((37 * j) % 11 - 5) / 5.0 for j in range(1, d + 1)]


def generate(conn, table, rows, d, seed):
    """Create table (id, y, x float8[d]) of rows synthetic rows, in chunks."""
    if C.one(conn, "SELECT to_regclass(%s) IS NOT NULL", (table,)):
        if C.one(conn, sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))) == rows:
            return 0.0
        C.execute(conn, sql.SQL("DROP TABLE {}").format(sql.Identifier(table)))
    C.execute(conn, sql.SQL("CREATE UNLOGGED TABLE {} (id bigint PRIMARY KEY, y boolean NOT NULL, "
                            "x float8[] NOT NULL)").format(sql.Identifier(table)))
    xs = ", ".join("random() * 2 - 1" for _ in range(d))
    z = " + ".join("x[%d] * %r" % (j + 1, b) for j, b in enumerate(beta(d)))
    C.execute(conn, "SELECT setseed(%s)", (seed,))
    t0 = time.perf_counter()
    for start in range(0, rows, CHUNK):
        n = min(CHUNK, rows - start)
        C.execute(conn, sql.SQL(
            "INSERT INTO {t} SELECT i, random() < 1 / (1 + exp(-(" + z + "))), x "
            "FROM (SELECT i, ARRAY[" + xs + "] AS x FROM generate_series(%s, %s) i) s").format(
                t=sql.Identifier(table)), (start + 1, start + n))
        print("  %s: %d of %d rows (%.0f s)" % (table, start + n, rows, time.perf_counter() - t0),
              flush=True)
    C.execute(conn, sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(table)))
    return time.perf_counter() - t0


def train_phases(table, features, label, sigma, lam=1e-3):
    """Train in a fresh connection with verbose NOTICEs; returns (seconds,
    (phase, seconds) of each pass, peak backend bytes)."""
    conn = C.connect()
    pid = C.one(conn, "SELECT pg_backend_pid()")
    C.execute(conn, "SET client_min_messages = notice")
    del conn.notices[:]
    t = C.timed(conn, "SELECT * FROM unlearn_train('scale', %s, %s, %s, sigma => %s, lambda => %s, "
                "replace => true, verbose => true)", (table, label, [features], sigma, lam))
    peak = C.proc_status(pid).get("VmHWM", 0)
    passes = [(m.group(2), float(m.group(3))) for m in (PASS_RE.search(n) for n in conn.notices) if m]
    conn.close()
    return t, passes, peak


def reanchor_time(conn, table, ids):
    """A one-row DELETE after unlearn_evict (rebuild = re-anchoring) minus
    a one-row DELETE without it; each in a transaction rolled back."""
    def delete(row_id, evict):
        conn.autocommit = False
        try:
            if evict:
                C.execute(conn, "SELECT unlearn_evict('scale')")
            t = C.timed(conn, sql.SQL("DELETE FROM {} WHERE id = %s").format(sql.Identifier(table)),
                        (row_id,))
        finally:
            conn.rollback()
            conn.autocommit = True
        return t
    plain = delete(ids[0], False)
    evicted = delete(ids[1], True)
    return evicted, plain


def sklearn_side(conn, table, test_table, label, features):
    t0 = time.perf_counter()
    _, y, X = C.export_rows(conn, table, label=label, features=features)
    t_export = time.perf_counter() - t0
    _, yt, Xt = C.export_rows(conn, test_table, label=label, features=features)
    clf = LogisticRegression()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0 = time.perf_counter()
        clf.fit(X, y)
        t_fit = time.perf_counter() - t0
    acc = float((clf.predict(Xt) == yt).mean())
    return t_export, t_fit, int(clf.n_iter_[0]), acc


def phase_names(passes):
    """Name each pass by its phase, numbering the Newton passes."""
    names, newton = [], 0
    for phase, _ in passes:
        if phase.startswith("gradient"):
            newton += 1
            names.append("Newton %d (%s)" % (newton, phase))
        else:
            names.append(phase)
    return names


def run_set(conn, name, table, test_table, label, features, args):
    C.banner(name)
    rows = C.one(conn, sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table)))
    size = C.one(conn, "SELECT pg_total_relation_size(%s)", (table,))
    print("%d rows, %.2f GB on disk" % (rows, size / 1e9))

    t, passes, peak = train_phases(table, features, label, 1.0)
    names = phase_names(passes)
    seconds = [p for _, p in passes]
    C.table(["phase", "seconds"], list(zip(names, seconds)) +
            [("other (solves, catalog)", t - sum(seconds)), ("total", t)], ["", ".2f"])
    newton = [p for (phase, p) in passes if phase == "gradient and Hessian"]
    print("peak backend memory (VmHWM): %.0f MB; data %.0f MB" % (peak / 2**20, size / 2**20))

    if args.reanchor:
        ids = [r[0] for r in C.execute(conn, sql.SQL("SELECT id FROM {} ORDER BY id LIMIT 2").format(
            sql.Identifier(table)))]
        evicted, plain = reanchor_time(conn, table, ids)
        one_pass = C.median(newton)
        C.table(["statement", "seconds"],
                [("one-row DELETE", plain), ("one-row DELETE after eviction (re-anchors)", evicted),
                 ("re-anchoring (difference)", evicted - plain),
                 ("one Newton pass (median of training's)", one_pass)], ["", ".2f"])
        print("re-anchoring / one gradient-and-Hessian pass = %.2f" % ((evicted - plain) / one_pass))

    if args.sklearn and test_table is not None:
        # lambda = 1e-3 (the default), and lambda = 1 / n: Lambda = lambda n
        # = 1, the penalty weight of scikit-learn's C = 1
        ours = []
        for lam, what in ((1e-3, "lambda = 1e-3"), (1.0 / rows, "lambda = 1/n (C = 1)")):
            t0, _, _ = train_phases(table, features, label, 0.0, lam)
            acc = C.one(conn, "SELECT accuracy FROM unlearn_evaluate('scale', %s)", (test_table,))
            ours.append((what, t0, acc))
        t_export, t_fit, iters, sk_acc = sklearn_side(conn, table, test_table, label, features)
        sk = t_export + t_fit
        C.table(["method (sigma = 0)", "seconds", "held-out accuracy", "sklearn / this"],
                [("unlearn_train, " + what, t0, acc, sk / t0) for what, t0, acc in ours] +
                [("sklearn LogisticRegression() export + fit (%d iterations)" % iters,
                  sk, sk_acc, 1.0),
                 ("  of which export (binary COPY)", t_export, None, None)],
                ["", ".2f", ".4f", ".2f"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1000000)
    ap.add_argument("--dims", type=int, default=50)
    ap.add_argument("--test-rows", type=int, default=100000)
    ap.add_argument("--seed", type=float, default=0.42)
    ap.add_argument("--sklearn", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--reanchor", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--fashion", action=argparse.BooleanOptionalAction, default=False)
    args = ap.parse_args()

    conn = C.connect()
    C.preamble(conn, "scale: training passes, memory and re-anchoring")
    print("max_parallel_workers_per_gather = %s, work_mem = %s" % (
        C.one(conn, "SHOW max_parallel_workers_per_gather"), C.one(conn, "SHOW work_mem")))
    table = "scale_%d_%d" % (args.rows, args.dims)
    test_table = "scale_%d_%d_test" % (args.test_rows, args.dims)
    secs = generate(conn, table, args.rows, args.dims, args.seed)
    if secs:
        print("generated %s in %.0f s" % (table, secs))
    if args.sklearn:
        generate(conn, test_table, args.test_rows, args.dims, args.seed / 2)
    run_set(conn, "%d x %d synthetic" % (args.rows, args.dims), table,
            test_table if args.sklearn else None, "y", "x", args)
    if args.fashion:
        C.execute(conn, "CREATE TABLE IF NOT EXISTS tshirt_shirt_test AS SELECT id, label = 6 AS is_shirt, "
                  "pixels FROM fashion WHERE id > 60000 AND label IN (0, 6)")
        run_set(conn, "Fashion-MNIST T-shirt vs Shirt (d = 784)", "tshirt_shirt", "tshirt_shirt_test",
                "is_shirt", "pixels", args)


if __name__ == "__main__":
    main()
