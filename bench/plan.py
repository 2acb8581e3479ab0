#!/usr/bin/python3
"""unlearn_plan: the accuracy a model gives up for the removals it absorbs.

For each data set (Debian python3-sklearn's digits, ten classes, and breast
cancer, two), a model is trained with the defaults (sigma 1) and 30 rows
are deleted one statement each, so that its ledger holds measured bounds.
Then, for a target T of single-row removals between re-anchorings,
unlearn_plan(T, model => ...) returns two noise levels:

  worst case  sigma from the table size alone (Guo et al., Theorem 1)
  measured    sigma from the model's ledger: its mean bound per removed row

and, for each, the training accuracy of the model's rows fitted with a fresh
draw at that sigma (unlearn_plan fits them in the server), against the
unperturbed fit (sigma 0, which needs a retrain after every removal of a
logistic model).  Each point is the mean of --reps calls.  The trade-off is
plotted to bench/plan.png (matplotlib, Agg).

Usage: bench/run plan.py [--reps 3] [--png bench/plan.png]
"""
import argparse
import os

import numpy as np
from sklearn import datasets

import common as C

TARGETS = [1, 3, 10, 30, 100, 300, 1000, 3000, 10000]


def load(conn, name, X, y):
    C.execute(conn, "DROP TABLE IF EXISTS %s CASCADE" % name)
    C.execute(conn, "CREATE TABLE %s (id int PRIMARY KEY, label int, x float8[])" % name)
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO %s VALUES (%%s, %%s, %%s)" % name,
                        [(i, int(y[i]), [float(v) for v in X[i]]) for i in range(len(y))])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--png", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "plan.png"))
    args = ap.parse_args()
    conn = C.connect()
    C.preamble(conn, "unlearn_plan: sigma and accuracy cost for T removals between re-anchorings")
    C.execute(conn, "SET client_min_messages = warning")
    curves = {}
    for name, loader in [("digits", datasets.load_digits), ("breast_cancer", datasets.load_breast_cancer)]:
        X, y = loader(return_X_y=True)
        table = "plan_" + name
        load(conn, table, X, y)
        C.execute(conn, "SELECT unlearn_drop(model) FROM unlearn.models WHERE model = %s", (table,))
        C.execute(conn, "SELECT count(*) FROM unlearn_train(%s, %s, 'label', '{x}')", (table, table))
        for i in range(30):
            C.execute(conn, "DELETE FROM %s WHERE id = %d" % (table, i * 7))
        rows = []
        for t in TARGETS:
            got = {}
            for _ in range(args.reps):
                for basis, sigma, cost, acc0, acc in C.execute(
                        conn, "SELECT basis, sigma, accuracy_cost, accuracy_at_zero, accuracy "
                        "FROM unlearn_plan(%s, model => %s)", (t, table)):
                    got.setdefault(basis, []).append((sigma, cost, acc0, acc))
            w = np.array(got["worst case"])
            m = np.array(got["measured"])
            rows.append((t, m[0, 0], w[0, 0], w[0, 0] / m[0, 0], m[0, 2],
                         m[:, 3].mean(), 100 * m[:, 1].mean(), w[:, 3].mean(), 100 * w[:, 1].mean()))
        print("\n%s: n = %d, d = %d, %d classes; accuracy on the model's rows (sigma 0: %.4f)"
              % (name, len(y) - 30, X.shape[1], len(set(y)), rows[0][4]))
        C.table(["T", "sigma measured", "sigma worst", "worst/measured", "acc measured",
                 "cost (points)", "acc worst", "cost worst (points)"],
                [(r[0], r[1], r[2], r[3], r[5], r[6], r[7], r[8]) for r in rows],
                ["d", ".4g", ".4g", ".3g", ".4f", ".2f", ".4f", ".2f"])
        curves[name] = rows

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for name, rows in curves.items():
        t = [r[0] for r in rows]
        line, = ax.plot(t, [r[5] for r in rows], marker="o", label="%s, measured bound" % name)
        ax.plot(t, [r[7] for r in rows], marker="x", linestyle="--", color=line.get_color(),
                label="%s, worst-case bound" % name)
        ax.axhline(rows[0][4], color=line.get_color(), linestyle=":", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("single-row removals between re-anchorings (T)")
    ax.set_ylabel("accuracy on the model's rows")
    ax.set_title("unlearn_plan: accuracy against removals absorbed (dotted: sigma = 0)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)
    print("\nplot:", args.png)


if __name__ == "__main__":
    main()
