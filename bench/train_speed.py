#!/usr/bin/python3
"""Training speed and memory of unlearn_train against scikit-learn's lbfgs.

Fashion-MNIST T-shirt (class 0) vs Shirt (class 6), the 12,000 training rows,
at d = 784 (tshirt_shirt) and d = 196 (tshirt_shirt_pooled, 2x2 mean pooling).

For each table, in one Python process:

* the extension: SELECT unlearn_train('b', <table>, 'is_shirt', '{pixels}',
  lambda => 1e-3, sigma => 0, replace => true), several times, median;
* scikit-learn: the same rows fetched with psycopg2 (binary COPY), the
  extension's row map applied (x -> (x, 1) / max(s, ||(x, 1)||), s = max over
  the rows of ||(x, 1)||), and LogisticRegression(C = 1/Lambda,
  fit_intercept=False, solver='lbfgs') on the augmented matrix, which
  minimises the same objective sum_i log(1 + exp(-y_i w.x_i)) +
  (Lambda/2)||w||^2 with Lambda = lambda * n;
* "equal tolerance": the relative gradient norm ||grad L(w)|| / ||grad L(0)||
  of both solutions.  sklearn's tol is swept and the loosest tol that gets
  within 10x of the extension's relative gradient is used for the timing
  (or the tol that gets closest, if none does: sklearn 1.2 passes no ftol to
  L-BFGS-B, whose default relative-decrease test then stops it early);
  plain scipy L-BFGS-B with ftol=0 is shown too, for reference;
* peak memory of the backend: VmHWM from /proc/<pg_backend_pid()>/status
  before and after one training in a fresh connection, against the data
  matrix n*(d+1)*8 bytes.

Prints tables; asserts nothing about timing.  Run through bench/run.
"""

import argparse
import sys
import time

import numpy as np
from scipy import optimize
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

import common as C

TRAIN_SQL = ("SELECT * FROM unlearn_train('b', %s, 'is_shirt', '{pixels}', "
             "lambda => %s, sigma => 0, replace => true)")
TABLES = [("tshirt_shirt", 784), ("tshirt_shirt_pooled", 196)]


def sk_fit(Xa, y, reg, tol, max_iter, solver="lbfgs"):
    import warnings
    clf = LogisticRegression(C=1.0 / reg, fit_intercept=False, solver=solver,
                             tol=tol, max_iter=max_iter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0 = time.perf_counter()
        clf.fit(Xa, y)
        t = time.perf_counter() - t0
    return clf.coef_.ravel().copy(), int(clf.n_iter_[0]), t


def scipy_lbfgs(Xa, y, reg, gtol, max_iter):
    """L-BFGS-B on the same objective with the relative-decrease test off."""
    def fg(w):
        z = y * (Xa @ w)
        f = np.logaddexp(0.0, -z).sum() + 0.5 * reg * (w @ w)
        g = Xa.T @ ((C.sigmoid(z) - 1.0) * y) + reg * w
        return f, g
    t0 = time.perf_counter()
    res = optimize.minimize(fg, np.zeros(Xa.shape[1]), jac=True, method="L-BFGS-B",
                            options={"ftol": 0.0, "gtol": gtol, "maxiter": max_iter})
    return res.x, int(res.nit), time.perf_counter() - t0, res.message


def memory(table, lam):
    """Peak backend memory of one training in fresh connections: cold (first
    statement of the session) and warm (table pages already in shared memory,
    library loaded), so that the second isolates the training's own memory."""
    out = []
    for mode in ("cold", "warm"):
        conn = C.connect()
        pid = C.one(conn, "SELECT pg_backend_pid()")
        if mode == "warm":
            C.execute(conn, "SELECT sum(cardinality(pixels)) FROM %s" % table)
            C.execute(conn, "SELECT unlearn_budget(1)")
        st0 = C.proc_status(pid)
        with C.RssSampler(pid) as sampler:
            t = C.timed(conn, TRAIN_SQL, (table, lam))
        st1 = C.proc_status(pid)
        conn.close()
        out.append((mode, st0, st1, sampler, t))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5, help="extension trainings per table")
    ap.add_argument("--sk-reps", type=int, default=3, help="sklearn fits per setting")
    ap.add_argument("--lambda", dest="lam", type=float, default=1e-3)
    ap.add_argument("--tols", default="1e-4,1e-6,1e-8,1e-10,1e-12,1e-14",
                    help="sklearn tol values to sweep")
    ap.add_argument("--max-iter", type=int, default=100000)
    ap.add_argument("--nc-tol", type=float, default=1e-10, help="tol of sklearn newton-cholesky")
    ap.add_argument("--tables", default=",".join(t for t, _ in TABLES))
    args = ap.parse_args()
    tols = [float(t) for t in args.tols.split(",")]

    lib0 = C.library_mtime()
    conn = C.connect()
    C.preamble(conn, "train_speed: unlearn_train vs scikit-learn lbfgs (T-shirt vs Shirt)")
    print("lambda = %g, sigma = 0, Lambda = lambda * n; times are medians, wall clock" % args.lam)

    summary, memrows, others = [], [], []
    for table, d in TABLES:
        if table not in args.tables.split(","):
            continue
        C.banner("%s (d = %d)" % (table, d))
        # --- the extension -------------------------------------------------
        ext_times = []
        for _ in range(args.reps):
            ext_times.append(C.timed(conn, TRAIN_SQL, (table, args.lam)))
        m = C.model_row(conn, "b")
        w_ext = C.coef(conn, "b")
        t_ext = C.median(ext_times)
        print("extension: %d trainings: %s s (median %.3f)"
              % (len(ext_times), " ".join("%.3f" % t for t in ext_times), t_ext))

        # --- export, row map, problem definition --------------------------
        t0 = time.perf_counter()
        ids, labels, X = C.export_rows(conn, table)
        t_copy = time.perf_counter() - t0
        centre, spread = C.standardize_grid(X)
        Xa, s = C.row_map(X, centre, spread)
        t_export = time.perf_counter() - t0
        n = X.shape[0]
        reg = args.lam * n
        print("export: %d rows x %d features in %.3f s (COPY+parse %.3f s, row map %.3f s)"
              % (n, d, t_export, t_copy, t_export - t_copy))
        print("row map: D = %.10g (catalog %.10g), centre %s spread %s (catalog %s %s); Lambda = %g (catalog reg %g)"
              % (s, m["scale"], centre, spread, m["centre"], m["spread"], reg, m["reg"]))
        if w_ext.shape[0] != d + 1:
            print("WARNING: unlearn_coef has %d entries, expected %d" % (w_ext.shape[0], d + 1))
        pos, evidence = C.positive_label(conn, "b", table, Xa, ids, labels, w_ext)
        y = C.labels_to_pm1(labels, pos)
        print("positive class: is_shirt = %s (%s; catalog classes %s)" % (pos, evidence, m.get("classes")))

        w_ref, rel_ref = C.newton_reference(Xa, y, reg)
        rel_ext = C.rel_grad(w_ext, Xa, y, reg)
        print("reference (NumPy Newton): rel. grad %.2e" % rel_ref)
        print("extension: rel. grad %.2e, max|w - w_ref| %.2e" % (rel_ext, np.abs(w_ext - w_ref).max()))

        # --- sklearn tol sweep --------------------------------------------
        print()
        print("sklearn LogisticRegression(lbfgs, max_iter=%d) tol sweep (one fit each):" % args.max_iter)
        sweep = []
        for tol in tols:
            w_sk, it, t = sk_fit(Xa, y, reg, tol, args.max_iter)
            sweep.append((tol, w_sk, it, t, C.rel_grad(w_sk, Xa, y, reg)))
        C.table(["tol", "iters", "fit s", "rel grad", "max|w-w_ext|", "max|w-w_ref|"],
                [(tol, it, t, rg, np.abs(w - w_ext).max(), np.abs(w - w_ref).max())
                 for tol, w, it, t, rg in sweep],
                [".0e", "d", ".3f", ".2e", ".2e", ".2e"])
        ok = [r for r in sweep if r[4] <= 10 * rel_ext]
        if ok:
            chosen = ok[0]
            how = "loosest tol within 10x of the extension's rel. grad"
        else:
            chosen = min(sweep, key=lambda r: r[4])
            how = "NONE reaches within 10x of the extension's rel. grad; tol with the smallest"
        tol = chosen[0]
        print("chosen tol = %g (%s)" % (tol, how))

        # --- timed sklearn at the chosen tol ------------------------------
        fit_times, exp_fit_times = [], []
        for _ in range(args.sk_reps):
            w_sk, it, t = sk_fit(Xa, y, reg, tol, args.max_iter)
            fit_times.append(t)
        for _ in range(args.sk_reps):
            t0 = time.perf_counter()
            _, labels2, X2 = C.export_rows(conn, table)
            c2, s2 = C.standardize_grid(X2)
            Xa2, _ = C.row_map(X2, c2, s2)
            y2 = C.labels_to_pm1(labels2, pos)
            sk_fit(Xa2, y2, reg, tol, args.max_iter)
            exp_fit_times.append(time.perf_counter() - t0)
            del Xa2, X2
        t_fit, t_exp_fit = C.median(fit_times), C.median(exp_fit_times)
        rel_sk = C.rel_grad(w_sk, Xa, y, reg)
        # default tol for reference
        default = sweep[0] if tols[0] == 1e-4 else None

        # scipy L-BFGS-B without the ftol test, aiming at the extension's accuracy
        g0 = np.linalg.norm(C.gradient(np.zeros(d + 1), Xa, y, reg))
        gtol = max(rel_ext, 1e-15) * g0 / np.sqrt(d + 1)
        sp_times = []
        for _ in range(args.sk_reps):
            w_sp, sp_it, t, msg = scipy_lbfgs(Xa, y, reg, gtol, args.max_iter)
            sp_times.append(t)
        rel_sp = C.rel_grad(w_sp, Xa, y, reg)
        print("scipy L-BFGS-B ftol=0 gtol=%.1e: %d iters, %.3f s, rel. grad %.2e (%s)"
              % (gtol, sp_it, C.median(sp_times), rel_sp, msg))

        # sklearn's Newton solver (new in 1.2), for reference: it has no ftol cap
        nc_times = []
        for _ in range(args.sk_reps):
            w_nc, nc_it, t = sk_fit(Xa, y, reg, args.nc_tol, args.max_iter, solver="newton-cholesky")
            nc_times.append(t)
        rel_nc = C.rel_grad(w_nc, Xa, y, reg)
        print("sklearn newton-cholesky tol=%g: %d iters, %.3f s, rel. grad %.2e"
              % (args.nc_tol, nc_it, C.median(nc_times), rel_nc))
        others.append((d, t_ext, rel_ext, C.median(sp_times), C.median(sp_times) / t_ext, rel_sp,
                       C.median(nc_times), C.median(nc_times) / t_ext, rel_nc))

        summary.append((d, t_ext, tol, t_fit, t_exp_fit, t_fit / t_ext, t_exp_fit / t_ext,
                        rel_ext, rel_sk, np.abs(w_sk - w_ext).max(),
                        default[3] / t_ext if default else None))

        # --- memory -------------------------------------------------------
        matrix = n * (d + 1) * 8
        for mode, st0, st1, sampler, t in memory(table, args.lam):
            hwm = st1["VmHWM"] - st0["VmHWM"]
            anon = sampler.peak_anon - st0.get("RssAnon", 0)
            memrows.append((d, mode, matrix / 2**20, st0["VmHWM"] / 2**20, st1["VmHWM"] / 2**20,
                            hwm / 2**20, hwm / matrix, anon / 2**20, anon / matrix, t))

    C.banner("train_speed results")
    print("speedup = sklearn seconds / extension seconds (>= 1: the extension is at least as fast)")
    C.table(["d", "ext s", "sk tol", "sk fit s", "sk exp+fit s", "speedup fit", "speedup exp+fit",
             "ext rel grad", "sk rel grad", "max|coef diff|", "speedup@tol1e-4"],
            summary,
            ["d", ".3f", ".0e", ".3f", ".3f", ".2f", ".2f", ".1e", ".1e", ".1e", ".2f"])
    print()
    print("other solvers aiming at the extension's accuracy (fit only, same matrix): scipy L-BFGS-B "
          "with ftol=0, sklearn newton-cholesky")
    C.table(["d", "ext s", "ext rel grad", "scipy s", "speedup", "scipy rel grad",
             "newton-chol s", "speedup", "newton-chol rel grad"],
            others, ["d", ".3f", ".1e", ".3f", ".2f", ".1e", ".3f", ".2f", ".1e"])
    print()
    print("peak backend memory of one unlearn_train in a fresh connection "
          "(matrix = n*(d+1)*8 bytes; ratio = increase / matrix)")
    print("cold: first statement of the connection (includes library load and the table's "
          "shared-buffer pages this backend touches); warm: after reading the table and "
          "loading the library in that connection")
    C.table(["d", "conn", "matrix MiB", "VmHWM before", "VmHWM after", "HWM incr MiB",
             "HWM incr/matrix", "peak RssAnon incr MiB", "RssAnon incr/matrix", "train s"],
            memrows, ["d", "", ".1f", ".1f", ".1f", ".1f", ".2f", ".1f", ".2f", ".2f"])
    C.warn_if_reinstalled(lib0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
