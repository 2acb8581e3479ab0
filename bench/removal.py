#!/usr/bin/python3
"""Removal benchmarks of unlearn (issue 3): DELETE cost, batching, steps,
bound soundness and removals per retrain.

Fashion-MNIST T-shirt vs Shirt, 12,000 rows, d = 784, lambda 1e-3, sigma 10,
epsilon 1, delta 1e-4.  Every part works on bench_rm, a copy of tshirt_shirt
(with id as primary key) made afresh when a part needs the full table, with
one model 'm' on it:

  (a) single-row DELETE (rolled back and committed) against unlearn_retrain;
  (b) one 100-row DELETE statement against one single-row DELETE statement;
  (c) steps => 'row' against steps => 'statement' for 1, 10 and 100-row
      statements: time, spent increase and ledger bound, per bound type;
  (d) soundness of guo, taylor and exact: the ledger's bound of every
      statement against the true change ||u_t - u_{t-1}|| of the gradient
      residual vector returned by unlearn_residual; exit status 1 if any
      bound is below the true change (or the residual ever exceeds spent);
  (e) single-row removals before the first retrain (on_exhausted =>
      'retrain'), per bound with re-anchoring on (the default) and off
      (Algorithm 2 strictly), against the paper's Algorithm 2 / Corollary 1
      re-implemented in NumPy on the same rows in the same order.

Prints tables; asserts nothing about timing.  Exit status: 0, 1 when (d)
finds an unsound bound, 2 when a statement failed.  Run through bench/run.
"""

import argparse
import json
import math
import sys
import time
import traceback

import numpy as np
import psycopg2
from scipy import linalg
from scipy.linalg import blas

import common as C

TABLE = "bench_rm"
SOURCE = "tshirt_shirt"
MODEL = "m"
LAMBDA, SIGMA, EPSILON, DELTA = 1e-3, 10.0, 1.0, 1e-4

ERRORS = []


def fresh_table(conn):
    """bench_rm := a copy of tshirt_shirt, without any model on it."""
    C.fresh_copy(conn, TABLE, SOURCE)
    return [r[0] for r in C.execute(conn, "SELECT id FROM %s ORDER BY id" % TABLE)]


def train(conn, **opts):
    """unlearn_train of model m on bench_rm with the benchmark's lambda,
    sigma, epsilon, delta and the given options (bound, steps,
    on_exhausted); options not given take the extension's defaults."""
    return C.timed(conn, "SELECT * FROM unlearn_train(%s, %s, 'is_shirt', '{pixels}', "
                   "lambda => %s, sigma => %s, epsilon => %s, delta => %s, options => %s, "
                   "replace => true)",
                   (MODEL, TABLE, LAMBDA, SIGMA, EPSILON, DELTA, json.dumps(opts)))


def state(conn):
    return C.model_row(conn, MODEL)


def last_ledger(conn):
    with conn.cursor() as cur:
        cur.execute("SELECT id, operation, rows_removed, bound, spent, retrained "
                    "FROM unlearn.ledger WHERE model = %s ORDER BY id DESC LIMIT 1", (MODEL,))
        r = cur.fetchone()
    return None if r is None else dict(zip(("id", "operation", "rows_removed", "bound",
                                            "spent", "retrained"), r))


def delete(conn, ids, commit=True):
    """One DELETE statement for ids; returns (seconds of the DELETE, the
    model's spent before and after, retrains before and after, the ledger
    row of the statement (or None)).  With commit=False the
    statement runs in an explicit transaction that is rolled back after the
    catalog has been read inside it."""
    ids = [int(i) for i in ids]
    if len(ids) == 1:
        q, a = "DELETE FROM %s WHERE id = %%s" % TABLE, (ids[0],)
    else:
        q, a = "DELETE FROM %s WHERE id = ANY(%%s)" % TABLE, (ids,)
    before = state(conn)
    led0 = last_ledger(conn)
    if commit:
        t = C.timed(conn, q, a)
        after = state(conn)
        led = last_ledger(conn)
    else:
        C.execute(conn, "BEGIN")
        try:
            t = C.timed(conn, q, a)
            after = state(conn)
            led = last_ledger(conn)
        finally:
            C.execute(conn, "ROLLBACK")
    if led is not None and led0 is not None and led["id"] == led0["id"]:
        led = None
    return dict(t=t, spent0=before["spent"], spent1=after["spent"],
                retrains0=before["retrains"], retrains1=after["retrains"],
                retrained=after["retrains"] > before["retrains"], ledger=led,
                rows1=after["rows"])


class Ids:
    """Row ids in a fixed random order, handed out without repetition."""

    def __init__(self, ids, seed):
        self.ids = list(np.random.default_rng(seed).permutation(np.array(ids)))
        self.pos = 0

    def take(self, k):
        out = self.ids[self.pos:self.pos + k]
        if len(out) < k:
            raise RuntimeError("out of row ids")
        self.pos += k
        return out


def stats(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return (None, None, None)
    return (min(xs), C.median(xs), max(xs))


# ---------------------------------------------------------------------------
# (a) + (b)
# ---------------------------------------------------------------------------

def part_ab(conn, args):
    C.banner("(a) single-row DELETE vs unlearn_retrain, (b) 100-row vs 1-row DELETE "
             "[the extension's default bound, steps and on_exhausted]")
    ids = Ids(fresh_table(conn), seed=1)
    t_train = train(conn)
    m = state(conn)
    print("model m: %d rows, bound %s, steps %s, on_exhausted %s, budget eps' = %.4f, "
          "spent after training %.3e, trained in %.2f s"
          % (m["rows"], m["bound"], m["steps"], m["on_exhausted"], m["budget"], m["spent"], t_train))
    delete(conn, ids.take(1), commit=False)          # warm-up, not counted
    rb1 = [delete(conn, ids.take(1), commit=False) for _ in range(args.n_single)]
    rb100 = [delete(conn, ids.take(100), commit=False) for _ in range(args.n_batch)]
    cm1 = [delete(conn, ids.take(1), commit=True) for _ in range(args.n_single)]
    cm100 = [delete(conn, ids.take(100), commit=True) for _ in range(args.n_batch_commit)]
    rt = [C.timed(conn, "SELECT * FROM unlearn_retrain(%s)", (MODEL,)) for _ in range(args.n_retrain)]
    t_rt = C.median(rt)
    # the first DELETE after the matrices left shared memory (a restart, an
    # eviction): it rebuilds them with one re-anchoring pass
    cold = []
    for _ in range(args.n_retrain):
        C.execute(conn, "SELECT unlearn_evict(%s)", (MODEL,))
        cold.append(delete(conn, ids.take(1), commit=True))
    # the same single-row DELETE on a plain copy without a model
    C.execute(conn, "DROP TABLE IF EXISTS bench_plain")
    C.execute(conn, "CREATE TABLE bench_plain AS SELECT * FROM %s" % TABLE)
    C.execute(conn, "ALTER TABLE bench_plain ADD PRIMARY KEY (id)")
    plain = [C.timed(conn, "DELETE FROM bench_plain WHERE id = %s", (int(i),))
             for i in ids.take(args.n_single)]

    rows = []
    for name, rs in (("DELETE 1 row, rolled back", rb1), ("DELETE 1 row, committed", cm1),
                     ("DELETE 100 rows, rolled back", rb100), ("DELETE 100 rows, committed", cm100)):
        ts = [r["t"] for r in rs]
        mn, md, mx = stats(ts)
        rows.append((name, len(ts), mn * 1e3, md * 1e3, mx * 1e3, sum(r["retrained"] for r in rs),
                     md / t_rt))
    ts = [r["t"] for r in cold]
    mn, md, mx = stats(ts)
    rows.append(("DELETE 1 row, committed, not resident", len(ts), mn * 1e3, md * 1e3, mx * 1e3,
                 sum(r["retrained"] for r in cold), md / t_rt))
    mn, md, mx = stats(plain)
    rows.append(("DELETE 1 row, committed, plain table", len(plain), mn * 1e3, md * 1e3, mx * 1e3,
                 None, md / t_rt))
    mn, md, mx = stats(rt)
    rows.append(("unlearn_retrain('m')", len(rt), mn * 1e3, md * 1e3, mx * 1e3, None, 1.0))
    C.table(["statement", "n", "min ms", "median ms", "max ms", "retrained in stmt", "median / retrain"],
            rows, ["", "d", ".2f", ".2f", ".2f", "", ".5f"])
    d1rb, d1cm = C.median([r["t"] for r in rb1]), C.median([r["t"] for r in cm1])
    d100rb, d100cm = C.median([r["t"] for r in rb100]), C.median([r["t"] for r in cm100])
    print()
    print("(a) single-row DELETE / retrain: rolled back 1/%.0f (%.2e), committed 1/%.0f (%.2e)   "
          "[must be <= 1/100, aim 1/1000]" % (t_rt / d1rb, d1rb / t_rt, t_rt / d1cm, d1cm / t_rt))
    print("(b) 100-row DELETE / 1-row DELETE: rolled back %.2f, committed %.2f   [must be <= 3]"
          % (d100rb / d1rb, d100cm / d1cm))
    print("    single-row DELETE, committed / plain table: %.2f" % (d1cm / C.median(plain)))
    return dict(a_rb=d1rb / t_rt, a_cm=d1cm / t_rt, b_rb=d100rb / d1rb, b_cm=d100cm / d1cm,
                retrain=t_rt, d1rb=d1rb, d1cm=d1cm)


# ---------------------------------------------------------------------------
# (c) steps row vs statement
# ---------------------------------------------------------------------------

def part_c(conn, args):
    C.banner("(c) steps => 'row' vs 'statement' (rolled-back DELETEs, same rows for every "
             "configuration)")
    all_ids = fresh_table(conn)
    ids = Ids(all_ids, seed=3)
    sets = {1: [ids.take(1) for _ in range(args.n_c)],
            10: [ids.take(10) for _ in range(args.n_c)],
            100: [ids.take(100) for _ in range(max(3, args.n_c // 2))]}
    rows = []
    for bound in args.c_bounds.split(","):
        for steps in ("row", "statement"):
            t_train = train(conn, bound=bound, steps=steps)
            m = state(conn)
            delete(conn, sets[1][0], commit=False)      # warm-up
            for k, batches in sets.items():
                rs = [delete(conn, b, commit=False) for b in batches]
                ok = [r for r in rs if not r["retrained"]]
                rows.append((bound, steps, k, len(rs),
                             C.median([r["t"] for r in rs]) * 1e3,
                             C.median([r["spent1"] - r["spent0"] for r in ok]) if ok else None,
                             C.median([r["ledger"]["bound"] for r in ok if r["ledger"]]) if ok else None,
                             max([r["ledger"]["bound"] for r in ok if r["ledger"]], default=None),
                             (C.median([r["spent1"] - r["spent0"] for r in ok]) / m["budget"]) if ok else None,
                             sum(r["retrained"] for r in rs)))
            print("  trained bound=%s steps=%s in %.2f s (budget %.4f, spent %.2e)"
                  % (bound, steps, t_train, m["budget"], m["spent"]))
    C.table(["bound", "steps", "rows/stmt", "n", "median ms", "median spent incr",
             "median ledger bound", "max ledger bound", "spent incr / budget", "retrained"],
            rows, ["", "", "d", "d", ".2f", ".3e", ".3e", ".3e", ".2e", "d"])
    return rows


# ---------------------------------------------------------------------------
# (d) soundness of the bounds
# ---------------------------------------------------------------------------

def part_d(conn, args):
    C.banner("(d) ledger bound per statement vs true residual change ||u_t - u_{t-1}|| "
             "(unlearn_residual), committed DELETEs")
    rel_tol, abs_tol = 1e-9, 1e-12
    summary, failures, notes = [], [], []
    for bound in ("guo", "taylor", "exact"):
        all_ids = fresh_table(conn)
        ids = Ids(all_ids, seed=4)          # the same rows for every bound
        plan = [("row", "1", [ids.take(1) for _ in range(args.d_single)]),
                ("row", "10", [ids.take(10) for _ in range(args.d_b10)]),
                ("row", "100", [ids.take(100) for _ in range(args.d_b100)]),
                ("statement", "10", [ids.take(10) for _ in range(args.d_b10)]),
                ("statement", "100", [ids.take(100) for _ in range(args.d_b100)])]
        current_steps = None
        for steps, size, batches in plan:
            if steps != current_steps:
                train(conn, bound=bound, steps=steps)
                current_steps = steps
                u_prev = C.residual(conn, MODEL)
                m = state(conn)
                if np.linalg.norm(u_prev) > m["spent"] * (1 + rel_tol) + abs_tol:
                    failures.append("%s/%s: after training ||u_0|| = %.6e > spent %.6e"
                                    % (bound, steps, np.linalg.norm(u_prev), m["spent"]))
            ratios, skipped, t_res = [], 0, []
            for b in batches:
                r = delete(conn, b, commit=True)
                t0 = time.perf_counter()
                u = C.residual(conn, MODEL)
                t_res.append(time.perf_counter() - t0)
                true = float(np.linalg.norm(u - u_prev))
                u_prev = u
                m = state(conn)
                if r["retrained"] or r["ledger"] is None or r["ledger"]["retrained"]:
                    skipped += 1
                    continue
                bd = r["ledger"]["bound"]
                ratios.append(bd / true if true > 0 else math.inf)
                if bd < true * (1 - rel_tol) - abs_tol:
                    failures.append("%s steps=%s %s-row DELETE of ids %s: ledger bound %.6e < true "
                                    "change %.6e" % (bound, steps, size, b[:5], bd, true))
                elif bd < true:
                    notes.append("%s steps=%s %s-row: bound %.17g < true %.17g within rounding"
                                 % (bound, steps, size, bd, true))
                nu = float(np.linalg.norm(u))
                if nu > m["spent"] * (1 + rel_tol) + abs_tol:
                    failures.append("%s steps=%s: ||u|| = %.6e > spent %.6e after a %s-row DELETE"
                                    % (bound, steps, nu, m["spent"], size))
            mn, md, mx = stats(ratios)
            summary.append((bound, steps, size, len(ratios), mn, md, mx, skipped,
                            C.median(t_res)))
    C.table(["bound", "steps", "rows/stmt", "stmts", "min bound/true", "median", "max",
             "skipped (retrained)", "residual s"],
            summary, ["", "", "", "d", ".6g", ".4g", ".4g", "d", ".2f"])
    for n in notes:
        print("note:", n)
    if failures:
        print()
        print("!" * 72)
        print("FAIL: (d) found %d unsound bound(s):" % len(failures))
        for f in failures:
            print("FAIL:", f)
        print("!" * 72)
    else:
        print("(d) OK: every ledger bound >= the true residual change, and ||u|| <= spent throughout")
    return summary, failures


# ---------------------------------------------------------------------------
# (e) removals before the first retrain vs the paper
# ---------------------------------------------------------------------------

def paper_count(Xa, y, w0, reg, u0, order, budgets, cap, gamma=0.25, verbose=False):
    """Algorithm 2 of Guo et al. with single-row batches and the data-dependent
    bound of Corollary 1: for each removal r (in `order`, row indexes of Xa),
    Delta = grad l(w.x_r, y_r), H = exact Hessian of L at the current w on the
    remaining rows (Lambda fixed, as the extension uses), v = H^{-1} Delta,
    beta += gamma ||X'||_2 ||v|| ||X'v||, with ||X'||_2 from power iteration
    on K' = X'^T X' (converged; an under-estimate at worst, which only helps
    the paper).  beta starts at ||u_0||.  Returns, per budget, the number of
    removals before beta would exceed it, plus the per-removal bounds."""
    n, p = Xa.shape
    alive = np.ones(n, dtype=bool)
    K = Xa.T @ Xa
    q = np.ones(p) / math.sqrt(p)
    w = w0.copy()
    beta = u0
    counts = {b: None for b in budgets}
    bounds = []
    for t, r in enumerate(order[:cap]):
        x = Xa[r]
        z = y[r] * (x @ w)
        delta = (C.sigmoid(z) - 1.0) * y[r] * x
        alive[r] = False
        K -= np.outer(x, x)
        s = C.sigmoid(y * (Xa @ w))
        B = Xa * np.sqrt(s * (1.0 - s) * alive)[:, None]
        H = blas.dsyrk(1.0, B.T, trans=0)      # upper triangle of B^T B (B.T is F-contiguous)
        H[np.diag_indices(p)] += reg
        v = linalg.cho_solve(linalg.cho_factor(H, lower=False, overwrite_a=True), delta)
        del B
        lam = 0.0
        for _ in range(1000):
            q2 = K @ q
            lam2 = float(np.linalg.norm(q2))
            q = q2 / lam2
            if abs(lam2 - lam) <= 1e-13 * lam2:
                break
            lam = lam2
        Xv = (Xa @ v)[alive]
        bd = gamma * math.sqrt(lam2) * float(np.linalg.norm(v)) * float(np.linalg.norm(Xv))
        bounds.append(bd)
        beta += bd
        for b in budgets:
            if counts[b] is None and beta > b:
                counts[b] = t
        if all(c is not None for c in counts.values()):
            break
        w = w + v
        if verbose and t % 50 == 0:
            print("    paper: %d removals, beta %.4f" % (t + 1, beta))
    return counts, bounds


TRAJ_AT = (1, 11, 101, 501, 1001, 2001, 5001, 10001)


def trajectory(bounds):
    out = []
    for k in TRAJ_AT:
        chunk = bounds[k - 1:k + 9]
        out.append(float(np.mean(chunk)) if chunk else None)
    return tuple(out)


def part_e(conn, args):
    C.banner("(e) single-row removals before the first retrain (on_exhausted => 'retrain') "
             "vs the paper's Corollary 1 / Algorithm 2")
    classic = SIGMA * EPSILON / math.sqrt(2 * math.log(1.5 / DELTA))
    rows, paper, traj = [], None, []
    configs = [c.split(":") for c in args.e_configs.split(",")]
    for bound, reanchor in configs:
        all_ids = fresh_table(conn)
        order_ids = Ids(all_ids, seed=5).ids          # the same order for every configuration
        C.execute(conn, "SET unlearn.reanchor = %s" % ("on" if reanchor == "on" else "off"))
        train(conn, bound=bound, on_exhausted="retrain")
        m = state(conn)
        print("  model m: bound %s, steps %s, unlearn.reanchor %s" % (m["bound"], m["steps"], reanchor))
        w0 = C.coef(conn, MODEL)
        u0 = float(np.linalg.norm(C.residual(conn, MODEL)))
        led0 = last_ledger(conn)
        if paper is None:
            ids, labels, X = C.export_rows(conn, TABLE)
            Xa, _ = C.row_map(X, m["centre"], m["spread"], m["scale"])
            pos, _ = C.positive_label(conn, MODEL, TABLE, Xa, ids, labels, w0)
            y = C.labels_to_pm1(labels, pos)
            index = {int(i): k for k, i in enumerate(ids)}
            order = [index[int(i)] for i in order_ids]
            print("  paper simulation (NumPy, Lambda = %g, ||u_0|| = %.3e from the extension's model "
                  "trained with bound %s) ..." % (m["reg"], u0, bound))
            t0 = time.perf_counter()
            counts, pbounds = paper_count(Xa, y, w0, m["reg"], u0, order,
                                          [classic, m["budget"]], args.paper_cap, verbose=args.verbose)
            paper = dict(counts=counts, bounds=pbounds, secs=time.perf_counter() - t0, u0=u0)
            del X
            print("  ... %.1f s; Corollary 1 bound per removal: median %.3e" %
                  (paper["secs"], C.median(pbounds)))
        count, ts, capped, why = 0, [], True, "cap"
        t0 = time.perf_counter()
        for i in order_ids[:args.cap + 1]:
            r = delete(conn, [i], commit=True)
            ts.append(r["t"])
            if r["retrained"] or r["retrains1"] >= 1:
                capped = False
                break
            count += 1
            if count >= args.cap:
                break
            if time.perf_counter() - t0 > args.e_time_limit:
                why = "time limit %.0f s" % args.e_time_limit
                break
        elapsed = time.perf_counter() - t0
        reanchors = C.one(conn, "SELECT reanchors FROM unlearn.models WHERE model = %s", (MODEL,))
        led = C.execute(conn, "SELECT bound, spent, retrained FROM unlearn.ledger WHERE model = %s "
                        "AND id > %s ORDER BY id", (MODEL, led0["id"] if led0 else 0))
        bds = [b for b, s, rt in led if not rt]
        rows.append((bound, reanchor, m["budget"], count, capped, reanchors, C.median(bds) if bds else None,
                     C.median(ts) * 1e3, float(np.mean(ts)) * 1e3 if ts else None, elapsed))
        traj.append(("%s (re-anchor %s)" % (bound, reanchor),) + trajectory(bds))
        print("  bound %s, re-anchor %s: %s removals before the first retrain, %d re-anchorings (%.0f s%s)" %
              (bound, reanchor, (">= %d" % count) if capped else count, reanchors, elapsed,
               ("; stopped at the " + why) if capped else ""))
    C.execute(conn, "RESET unlearn.reanchor")

    def cnt(c):
        return (">= %d" % args.paper_cap) if c is None else str(c)
    print()
    print("paper's procedure (NumPy): gamma = 1/4, Corollary 1 with the exact Hessian on the remaining "
          "rows at the current w, ||X'||_2 by power iteration, beta_0 = ||u_0|| = %.3e, same rows "
          "in the same order" % paper["u0"])
    print("  classic budget eps' = sigma*eps/sqrt(2 ln(1.5/delta)) = %.4f: %s removals"
          % (classic, cnt(paper["counts"][classic])))
    other = [b for b in paper["counts"] if b != classic]
    for b in other:
        print("  the extension's budget (analytic Gaussian) %.4f: %s removals" % (b, cnt(paper["counts"][b])))
    pc = paper["counts"][classic]
    out = []
    for bound, reanchor, budget, count, capped, reanchors, mbd, mdel, meandel, el in rows:
        ratio = (count / pc) if pc else (math.inf if pc == 0 else None)
        out.append((bound, reanchor, budget, (">= %d" % count) if capped else str(count), reanchors,
                    mbd, mdel, meandel, cnt(pc), ratio,
                    ">=" if (capped or pc is None) else ""))
    C.table(["bound", "re-anchor", "budget", "removals before retrain", "re-anchorings",
             "median bound/row", "median DELETE ms", "mean DELETE ms", "paper (classic)", "ratio", ""],
            out, ["", "", ".4f", "", "d", ".3e", ".2f", ".2f", "", ".1f", ""])
    print("ratio = extension removals / paper removals (target >= 10); '>=' when the extension hit "
          "the cap or the paper never exhausted its budget within it.  The mean DELETE time includes "
          "the statements that re-anchored.")
    print()
    print("per-removal bound along the sequence (mean over removals k..k+9, 1-based; '-' past the end)")
    traj.append(("paper Cor. 1",) + trajectory(paper["bounds"]))
    C.table(["configuration"] + ["@%d" % k for k in TRAJ_AT], traj, [""] + [".2e"] * len(TRAJ_AT))
    return rows, paper


# ---------------------------------------------------------------------------

def run_part(name, fn, conn, args):
    try:
        return fn(conn, args), conn
    except psycopg2.Error as e:
        msg = "(%s) %s: %s" % (name, e.pgcode, str(e).strip())
        print("ERROR in part", msg)
        ERRORS.append(msg)
    except Exception as e:  # noqa: BLE001 - report and go on with the other parts
        traceback.print_exc()
        ERRORS.append("(%s) %s: %s" % (name, type(e).__name__, e))
    # the backend may be gone (crash): reconnect
    try:
        conn.close()
    except Exception:  # noqa: BLE001
        pass
    for _ in range(60):
        try:
            return None, C.connect()
        except psycopg2.OperationalError:
            time.sleep(1)
    raise SystemExit("cannot reconnect after the failure in part %s" % name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--parts", default="a,c,d,e", help="a (includes b), c, d, e")
    ap.add_argument("--n-single", type=int, default=60)
    ap.add_argument("--n-batch", type=int, default=10)
    ap.add_argument("--n-batch-commit", type=int, default=5)
    ap.add_argument("--n-retrain", type=int, default=3)
    ap.add_argument("--n-c", type=int, default=10, help="statements per size in (c)")
    ap.add_argument("--c-bounds", default="taylor,exact,guo")
    ap.add_argument("--d-single", type=int, default=50)
    ap.add_argument("--d-b10", type=int, default=5)
    ap.add_argument("--d-b100", type=int, default=3)
    ap.add_argument("--e-configs", default="taylor:on,guo:on,taylor:off,guo:off,exact:off",
                    help="(e): bound:reanchor pairs, reanchor on or off (unlearn.reanchor)")
    ap.add_argument("--cap", type=int, default=11000,
                    help="(e): most single-row DELETEs per configuration (the table has 12,000 rows, "
                    "p = 785)")
    ap.add_argument("--paper-cap", type=int, default=3000, help="(e): most removals of the paper's replay")
    ap.add_argument("--e-time-limit", type=float, default=900.0,
                    help="(e): seconds of DELETEs per bound before stopping (reported as >=)")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    parts = args.parts.split(",")

    lib0 = C.library_mtime()
    conn = C.connect()
    C.preamble(conn, "removal: certified removal costs (d = 784, 12,000 rows, lambda %g, sigma %g, "
               "epsilon %g, delta %g)" % (LAMBDA, SIGMA, EPSILON, DELTA))
    print("budget: analytic %.4f, classic %.4f" % (
        C.one(conn, "SELECT unlearn_budget(%s, %s, %s)", (SIGMA, EPSILON, DELTA)),
        SIGMA * EPSILON / math.sqrt(2 * math.log(1.5 / DELTA))))

    failures = []
    if "a" in parts or "b" in parts:
        _, conn = run_part("a/b", part_ab, conn, args)
    if "c" in parts:
        _, conn = run_part("c", part_c, conn, args)
    if "d" in parts:
        res, conn = run_part("d", part_d, conn, args)
        if res is not None:
            failures = res[1]
    if "e" in parts:
        _, conn = run_part("e", part_e, conn, args)

    C.banner("removal: done")
    C.warn_if_reinstalled(lib0)
    if ERRORS:
        print("statements that failed:")
        for e in ERRORS:
            print("  ", e)
    if failures:
        print("FAIL: (d) unsound bounds: %d (see above)" % len(failures))
        return 1
    return 2 if ERRORS else 0


if __name__ == "__main__":
    sys.exit(main())
