#!/usr/bin/python3
"""Cohorts (seed 003): erasing a whole cohort (a tenant, a partition) from a
model trained with cohort => 'tenant', against the same statement on a
plain copy of the table and against unlearn_retrain.

Synthetic rows generated in SQL (--rows, default 1,000,000; --dims features
in one float8[] column x; tenant = id % --cohorts; a logistic label y from
a fixed weight vector plus logistic noise; a regression target t), in a
table partitioned BY LIST (tenant), one partition per cohort, and an
identical plain copy with no model; --holdout further rows in a third table
for held-out metrics.  One model at a time on the partitioned table (the
others dropped, so that each timing measures one model): least squares
(sigma 0) and logistic at each --sigma-logistic (default 1 and 10), all
lambda --lambda and cohort => 'tenant'.  For each model:

  (a) unlearn_retrain, median of --reps;
  (b) erasing cohort 3 (a tenth of the rows) by DELETE ... WHERE tenant = 3,
      by ALTER TABLE ... DETACH PARTITION + DROP TABLE, and by TRUNCATE of
      the partition, each in a transaction that is rolled back, interleaved
      with the same statements on the plain copy, medians of --reps: the
      model's added time, as a ratio to unlearn_retrain against the issue's
      bar (1/1000 least squares, 1/100 logistic), and retrain / added as a
      speed-up against FedEraser's 4x and SISA's 4.6x; how the statement
      erased (ledger lines; the debug1 lines: the bound, or the residual
      measured by chord-step passes).  The plain copy is timed with no
      model in the database (its own time) and while the model exists on
      the other table (unlearn's event triggers run for every DROP TABLE);
      with the server's jit on, the model's statements are also timed
      under SET LOCAL jit = off;
  (c) once, committed: DETACH + DROP, then unlearn_verify (least squares:
      retrain_distance <= 1e-9 ||coef||; logistic: certified, residual <=
      spent) and held-out accuracy against --reps fresh unlearn_retrains
      (bar: within 0.1 point of their mean);
  (d) unlearn.status.cohort_bytes per fitted class (bar: below 1 MB).

A committed single-row DELETE warms each model up before the timings (the
first change after a server restart rebuilds the matrices).  No assertion
on time: exits 1 only when a soundness check of (c) fails.
"""

import argparse
import sys
import time

import numpy as np

import common as C

PLAIN, TRAIN, TEST = "co_plain", "co_train", "co_test"
FORMS = (("DELETE WHERE tenant", ["DELETE FROM {t} WHERE tenant = {c}"]),
         ("DETACH + DROP", ["ALTER TABLE {t} DETACH PARTITION {t}_{c}", "DROP TABLE {t}_{c}"]),
         ("TRUNCATE partition", ["TRUNCATE {t}_{c}"]))
FEDERASER, SISA = 4.0, 4.6
failures = 0


def check(what, ok, detail=""):
    global failures
    print("%s %s%s" % ("ok  " if ok else "FAIL", what, detail))
    if not ok:
        failures += 1


def drop_models(conn, table):
    C.execute(conn, "SELECT unlearn_drop(model) FROM unlearn.models WHERE source::text = %s", (table,))


def generate(conn, table, first, last, dims, cohorts):
    """Rows first..last: x uniform in [-1, 1]^d, z = sum_j cos(1.7 j) x_j,
    y = z + logistic noise > 0, t = z + uniform noise."""
    C.execute(conn, """INSERT INTO %s (id, tenant, y, t, x)
        SELECT g, g %% %d, s.z - ln(1 / (random() * 0.999998 + 1e-6) - 1) > 0, s.z + random() - 0.5, s.x
        FROM generate_series(%d, %d) g,
             LATERAL (SELECT array_agg(v ORDER BY j) AS x, sum(v * cos(1.7 * j)) AS z
                      FROM (SELECT j, 2 * random() - 1 AS v FROM generate_series(1, %d) j WHERE g > 0) q) s"""
              % (table, cohorts, first, last, dims))


def build(conn, args):
    cols = "(id int, tenant int, y boolean, t float8, x float8[])"
    for table in (PLAIN, TRAIN, TEST):
        drop_models(conn, table)
        C.execute(conn, "DROP TABLE IF EXISTS %s CASCADE" % table)
    for table in (PLAIN, TRAIN):
        C.execute(conn, "CREATE TABLE %s %s PARTITION BY LIST (tenant)" % (table, cols))
        for c in range(args.cohorts):
            C.execute(conn, "CREATE TABLE %s_%d PARTITION OF %s FOR VALUES IN (%d)" % (table, c, table, c))
    C.execute(conn, "CREATE TABLE %s %s" % (TEST, cols))
    C.execute(conn, "SELECT setseed(0.2026)")
    t0 = time.perf_counter()
    generate(conn, PLAIN, 1, args.rows, args.dims, args.cohorts)
    generate(conn, TEST, args.rows + 1, args.rows + args.holdout, args.dims, args.cohorts)
    C.execute(conn, "INSERT INTO %s SELECT * FROM %s" % (TRAIN, PLAIN))
    for table in (PLAIN, TRAIN, TEST):
        C.execute(conn, "VACUUM ANALYZE %s" % table)
    print("tables built in %.1f s: %s and %s (%d rows, %d partitions, %s), %s (%d held-out rows)"
          % (time.perf_counter() - t0, PLAIN, TRAIN, args.rows, args.cohorts,
             C.one(conn, "SELECT pg_size_pretty(sum(pg_total_relation_size(relid))) "
                   "FROM pg_partition_tree(%s)", (TRAIN,)), TEST, args.holdout))


def train(conn, args, model, label, loss, sigma):
    t0 = time.perf_counter()
    C.execute(conn, "SELECT count(*) FROM unlearn_train(%s, %s, %s, '{x}', loss => %s, lambda => %s, "
              "sigma => %s, cohort => 'tenant')", (model, TRAIN, label, loss, args.lam, sigma))
    return time.perf_counter() - t0


def last_id(conn):
    return C.one(conn, "SELECT coalesce(max(id), 0) FROM unlearn.ledger")


def ledger_since(conn, model, since):
    return C.execute(conn, "SELECT operation, rows_removed, bound, spent, retrained, reanchored "
                     "FROM unlearn.ledger WHERE model = %s AND id > %s ORDER BY id", (model, since))


def path_of(lines, notes):
    """How a statement changed the model, from its ledger lines and debug1 lines."""
    if not lines:
        return "no ledger line"
    parts = []
    for op, rows, bound, spent, retrained, reanchored in lines:
        parts.append("%s %d%s" % (op, rows, " RETRAINED" if retrained else " re-anchored" if reanchored else ""))
    measured = [n for n in notes if "measured residual" in n]
    if any("not erased from their statistics" in n for n in notes):
        parts.insert(0, "FELL BACK (not erased from the statistics):")
    if any(op == "cohort" for op, *_ in lines):
        parts.append("by measurement, %s chord steps" % measured[-1].split(" after ")[1].split(" chord")[0]
                     if measured else "by its bound")
    return ", ".join(parts)


def signature(lines):
    return [(op, rows, retrained, reanchored) for op, rows, _, _, retrained, reanchored in lines]


def rolled_back(conn, table, stmts, model=None, debug=False, jit_off=False):
    """Seconds of stmts in a transaction rolled back (the catalog read inside
    it first), the model's ledger lines and the debug1 lines of unlearn."""
    C.execute(conn, "BEGIN")
    try:
        since = last_id(conn)
        if model:
            C.one(conn, "SELECT spent FROM unlearn.models WHERE model = %s", (model,))
        if jit_off:
            C.execute(conn, "SET LOCAL jit = off")
        if debug:
            C.execute(conn, "SET LOCAL client_min_messages = debug1")
            del conn.notices[:]
        t = sum(C.timed(conn, s) for s in stmts)
        notes = [n.strip() for n in conn.notices if "unlearn:" in n or "time to inline" in n] if debug else []
        if debug:
            C.execute(conn, "SET LOCAL client_min_messages = warning")
        lines = ledger_since(conn, model, since) if model else []
    finally:
        C.execute(conn, "ROLLBACK")
    return t, lines, notes


def norm(conn, model):
    return float(np.linalg.norm(C.coef(conn, model)))


def plain_times(conn, args, erase):
    """Each form on the plain copy, rolled back, --reps times (after one untimed run)."""
    out = {}
    for name, tmpl in FORMS:
        stmts = [x.format(t=PLAIN, c=erase) for x in tmpl]
        rolled_back(conn, PLAIN, stmts)
        out[name] = C.median([rolled_back(conn, PLAIN, stmts)[0] for _ in range(args.reps)])
    return out


def run_model(conn, args, idx, model, label, loss, sigma, jit):
    ls = loss == "squared"
    erase = min(3, args.cohorts - 1)
    res = dict(model=model, loss=loss, sigma=sigma)
    C.banner("%s: %s, sigma %g, lambda %g, cohort => 'tenant'" % (model, loss, sigma, args.lam))
    # the plain copy's own time, with no model in the database (the event
    # triggers run for any DROP TABLE while some model exists)
    alone = plain_times(conn, args, erase)
    res["train"] = train(conn, args, model, label, loss, sigma)
    res["retrain"] = C.median([C.timed(conn, "SELECT count(*) FROM unlearn_retrain(%s)", (model,))
                               for _ in range(args.reps)])
    st = C.one(conn, "SELECT rows, cohorts, cohort_bytes, budget FROM unlearn.status WHERE model = %s", (model,))
    coef = C.one(conn, "SELECT unlearn_coef(%s)", (model,))
    res["K"] = len(coef) if isinstance(coef[0], list) else 1
    res["rows"], res["cohorts"], res["bytes"], res["budget"] = st
    print("trained in %.2f s; unlearn_retrain %.3f s (median of %d); %d rows, %d cohorts, %d bytes of "
          "cohort statistics, %d fitted class(es), budget %.4g"
          % (res["train"], res["retrain"], args.reps, st[0], st[1], st[2], res["K"], st[3]))
    # warm-up: one committed single-row change of another cohort, on both tables
    warm = args.cohorts * (idx + 1)
    for table in (TRAIN, PLAIN):
        C.execute(conn, "DELETE FROM %s WHERE tenant = 0 AND id = %d" % (table, warm))
    res["erased_rows"] = C.one(conn, "SELECT count(*) FROM %s_%d" % (TRAIN, erase))
    res["forms"] = []
    for name, tmpl in FORMS:
        plain_stmts = [x.format(t=PLAIN, c=erase) for x in tmpl]
        model_stmts = [x.format(t=TRAIN, c=erase) for x in tmpl]
        rolled_back(conn, PLAIN, plain_stmts)      # untimed: warms the partition's pages
        _, lines, notes = rolled_back(conn, TRAIN, model_stmts, model, debug=True)
        for n in notes:
            print("  [%s] %s" % (name, n))
        path, first = path_of(lines, notes), signature(lines)
        plain, with_model, no_jit, other = [], [], [], []
        for _ in range(args.reps):
            plain.append(rolled_back(conn, PLAIN, plain_stmts)[0])
            t, lines, _ = rolled_back(conn, TRAIN, model_stmts, model)
            with_model.append(t)
            if signature(lines) != first:
                other.append(path_of(lines, []))
            if jit:
                no_jit.append(rolled_back(conn, TRAIN, model_stmts, model, jit_off=True)[0])
        if other:
            path += " (but timed runs: %s)" % "; ".join(sorted(set(other)))
        res["forms"].append((name, alone[name], C.median(plain), C.median(with_model),
                             C.median(no_jit) if jit else None, path))
    # (c) once, committed: DETACH + DROP, then the checks
    since = last_id(conn)
    C.execute(conn, "SET client_min_messages = debug1")
    del conn.notices[:]
    res["committed"] = sum(C.timed(conn, x.format(t=TRAIN, c=erase)) for x in FORMS[1][1])
    notes = [n.strip() for n in conn.notices if "unlearn:" in n]
    C.execute(conn, "SET client_min_messages = warning")
    res["committed_path"] = path_of(ledger_since(conn, model, since), notes)
    print("committed DETACH + DROP of %s_%d: %.1f ms, %s"
          % (TRAIN, erase, 1000 * res["committed"], res["committed_path"]))
    v = C.one(conn, "SELECT residual, spent, budget, certified, retrain_distance, accuracy, retrain_accuracy "
              "FROM unlearn_verify(%s)", (model,))
    res["verify"] = v
    res["norm"] = float(np.linalg.norm(C.coef(conn, model)))
    metric = "r2" if ls else "accuracy"
    res["heldout"] = C.one(conn, "SELECT %s FROM unlearn_evaluate(%%s, %%s)" % metric, (model, TEST))
    retrains = []
    for _ in range(args.reps):
        C.execute(conn, "SELECT count(*) FROM unlearn_retrain(%s)", (model,))
        retrains.append(C.one(conn, "SELECT %s FROM unlearn_evaluate(%%s, %%s)" % metric, (model, TEST)))
    res["retrains"] = retrains
    print("unlearn_verify: residual %.6g, spent %.6g, budget %.6g, certified %s, retrain_distance %.3g "
          "(||coef|| %.4g), accuracy %s, retrain_accuracy %s" % (v[0], v[1], v[2], v[3], v[4], res["norm"],
                                                                 v[5], v[6]))
    check("%s: residual <= spent after the committed erasure" % model, v[0] is not None and v[0] <= v[1],
          " (%.6g <= %.6g)" % (v[0], v[1]))
    if ls:
        check("%s: a refit, retrain_distance <= 1e-9 ||coef||" % model, v[4] <= 1e-9 * res["norm"],
              " (%.3g against %.3g)" % (v[4], 1e-9 * res["norm"]))
    else:
        check("%s: certified (unlearn_verify)" % model, bool(v[3]))
    drop_models(conn, TRAIN)
    C.execute(conn, "CREATE TABLE %s_%d PARTITION OF %s FOR VALUES IN (%d)" % (TRAIN, erase, TRAIN, erase))
    C.execute(conn, "INSERT INTO %s SELECT * FROM %s_%d" % (TRAIN, PLAIN, erase))
    C.execute(conn, "VACUUM ANALYZE %s_%d" % (TRAIN, erase))
    return res


def report(args, results, jit):
    title = ("erasing cohort %d (%d rows, 1/%d of the table), rolled back, medians of %d"
             % (min(3, args.cohorts - 1), results[0]["erased_rows"], args.cohorts, args.reps))
    C.banner("(b) times (ms): " + title)
    rows = []
    for r in results:
        for name, alone, plain, with_model, no_jit, path in r["forms"]:
            rows.append([r["model"], name, 1000 * alone, 1000 * plain, 1000 * with_model, 1000 * (with_model - alone),
                         None if no_jit is None else 1000 * no_jit,
                         None if no_jit is None else 1000 * (no_jit - alone), 1000 * r["retrain"]])
    C.table(["model", "statement", "plain", "plain, model elsewhere", "with model", "added",
             "with model, jit off", "added, jit off", "unlearn_retrain"], rows,
            ["", "", ".2f", ".2f", ".2f", ".2f", ".2f", ".2f", ".1f"])
    print("plain: the plain copy with no model in the database; model elsewhere: the plain copy while the model "
          "exists on the other table; added: with model - plain; jit off: SET LOCAL jit = off "
          "(server: jit %s)" % ("on" if jit else "off or unavailable"))
    C.banner("(b) ratios: " + title)
    rows = []
    for r in results:
        bar = 1e-3 if r["loss"] == "squared" else 1e-2
        for name, alone, plain, with_model, no_jit, path in r["forms"]:
            added = with_model - alone
            speed = r["retrain"] / added if added > 0 else float("inf")
            rows.append([r["model"], name, added / r["retrain"], "1/%d" % round(1 / bar),
                         "met" if added <= bar * r["retrain"] else "missed", speed, speed / FEDERASER,
                         speed / SISA, None if no_jit is None else (no_jit - alone) / r["retrain"], path])
    C.table(["model", "statement", "added/retrain", "bar", "", "retrain/added", "/FedEraser 4x", "/SISA 4.6x",
             "jit off: added/retrain", "how it erased (ledger; debug1)"], rows,
            ["", "", ".2e", "", "", ".1f", ".1f", ".1f", ".2e", ""])

    C.banner("(c) after a committed DETACH + DROP: unlearn_verify, and held-out accuracy (R2 for least "
             "squares) against %d fresh unlearn_retrain(s)" % args.reps)
    rows = []
    for r in results:
        v = r["verify"]
        ls = r["loss"] == "squared"
        k = 1 if ls else 100     # R2 as is, accuracy in %
        mean = float(np.mean(r["retrains"]))
        gap = k * (r["heldout"] - mean)
        rows.append([r["model"], r["committed_path"], v[0], v[1], v[2], str(v[3]).lower(), v[4] / r["norm"],
                     "-" if ls else "%+.3f" % (100 * (v[5] - v[6])), k * r["heldout"], k * mean,
                     "%.4f..%.4f" % (k * min(r["retrains"]), k * max(r["retrains"])),
                     "%+.2e" % gap if ls else "%+.3f" % gap,
                     "-" if ls else ("met" if abs(gap) <= 0.1 else "missed")])
    C.table(["model", "how it erased", "residual", "spent", "budget", "certified", "distance/||coef||",
             "train acc - same-noise retrain (pts)", "held-out", "retrains mean", "retrains range", "difference",
             "bar 0.1 pt"], rows,
            ["", "", ".4g", ".4g", ".4g", "", ".2e", "", ".4f", ".4f", "", "", ""])
    print("distance/||coef||: unlearn_verify's retrain_distance (a retrain with the same noise and row map) "
          "over the erased model's norm; least squares bar 1e-9.  Fresh retrains draw new noise and recompute "
          "the row map, so their held-out metric is a distribution: its mean is the reference")

    C.banner("(d) cohort statistics at d = %d, %d cohorts (unlearn.status.cohort_bytes after training)"
             % (args.dims, args.cohorts))
    C.table(["model", "cohorts", "fitted classes", "bytes", "per cohort", "per class", "bar 1 MB per class"],
            [[r["model"], r["cohorts"], r["K"], r["bytes"], r["bytes"] // max(r["cohorts"], 1),
              r["bytes"] // r["K"], "met" if r["bytes"] / r["K"] < 1 << 20 else "missed"] for r in results])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1000000)
    ap.add_argument("--dims", type=int, default=50)
    ap.add_argument("--cohorts", type=int, default=10)
    ap.add_argument("--holdout", type=int, default=None, help="held-out rows (default: rows / 10)")
    ap.add_argument("--reps", type=int, default=3, help="medians of this many timings and fresh retrains")
    ap.add_argument("--sigma-logistic", default="1,10", help="comma-separated sigmas of the logistic models")
    ap.add_argument("--lambda", dest="lam", type=float, default=1e-3)
    ap.add_argument("--keep", action="store_true", help="keep the tables at the end")
    args = ap.parse_args()
    if args.holdout is None:
        args.holdout = max(args.rows // 10, 1000)
    sigmas = [float(s) for s in args.sigma_logistic.split(",") if s.strip()]

    lib0 = C.library_mtime()
    conn = C.connect()
    C.preamble(conn, "cohort: erasing one cohort of %d rows x %d features in %d partitions against "
               "unlearn_retrain" % (args.rows, args.dims, args.cohorts))
    C.execute(conn, "SET client_min_messages = warning")
    build(conn, args)
    specs = [("co_ls", "t", "squared", 0.0)] + \
        [("co_lg_s%s" % ("%g" % s).replace(".", "_"), "y", "logistic", s) for s in sigmas]
    jit = C.one(conn, "SELECT current_setting('jit')::boolean AND pg_jit_available()")
    results = [run_model(conn, args, i, *spec, jit) for i, spec in enumerate(specs)]
    report(args, results, jit)
    if not args.keep:
        for table in (PLAIN, TRAIN, TEST):
            drop_models(conn, table)
            C.execute(conn, "DROP TABLE %s" % table)
    C.warn_if_reinstalled(lib0)
    if failures:
        print("FAIL: %d soundness check(s) failed (see above)" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
