#!/usr/bin/python3
"""Held-out accuracy of unlearn's default model against scikit-learn.

The four classification sets bundled with Debian's python3-sklearn (iris,
wine, breast cancer, digits), each column a float8 column of a table.  For
each of 3 x 5 stratified folds (seeds 0-2) the fold's training rows go into a
fresh table, unlearn_train runs with its defaults (preprocess =>
'standardize', lambda 1e-3) at sigma 0 and at the default sigma 1, and
unlearn_predict_class scores the held-out rows in SQL.  Side by side, in this
process on the same folds:

  sk-ovr    StandardScaler + LogisticRegression(multi_class='ovr'), the
            same model family as unlearn (one binary model per class)
  sk-multi  StandardScaler + LogisticRegression() (multinomial)

both at the same regularisation: unlearn minimises sum l + (lambda n / 2)
||w||^2 over rows standardised and divided by D = sqrt(p), which is C = 1 /
(lambda n p) on standardised rows (scikit-learn leaves the intercept
unpenalised; unlearn penalises it).  And sk-C1, scikit-learn's default C = 1.

Usage: bench/run accuracy.py [--lam 1e-3]
"""
import argparse
import warnings

import numpy as np
from sklearn import datasets
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler

import common as C

warnings.filterwarnings("ignore")
SETS = [("iris", datasets.load_iris), ("wine", datasets.load_wine),
        ("breast cancer", datasets.load_breast_cancer), ("digits", datasets.load_digits)]


def load_table(conn, name, X, y):
    cols = ", ".join("f%d float8" % j for j in range(X.shape[1]))
    C.execute(conn, "DROP TABLE IF EXISTS %s" % name)
    C.execute(conn, "CREATE TABLE %s (id int PRIMARY KEY, label int, %s)" % (name, cols))
    with conn.cursor() as cur:
        rows = [(i, int(y[i])) + tuple(float(v) for v in X[i]) for i in range(len(y))]
        ph = "(" + ", ".join(["%s"] * (X.shape[1] + 2)) + ")"
        cur.executemany("INSERT INTO %s VALUES %s" % (name, ph), rows)


def unlearn_accuracy(conn, X, y, test_X, test_y, lam, sigma):
    d = X.shape[1]
    load_table(conn, "acc_train", X, y)
    load_table(conn, "acc_test", test_X, test_y)
    feats = "{" + ",".join("f%d" % j for j in range(d)) + "}"
    C.execute(conn, "SELECT count(*) FROM unlearn_train('acc', 'acc_train', 'label', %s, "
              "lambda => %s, sigma => %s, replace => true)", (feats, lam, sigma))
    arr = "ARRAY[" + ",".join("f%d" % j for j in range(d)) + "]"
    return C.one(conn, "SELECT avg((unlearn_predict_class('acc', %s) = label::text)::int) FROM acc_test" % arr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lam", type=float, default=1e-3)
    args = ap.parse_args()
    conn = C.connect()
    C.ensure_extension(conn)
    C.execute(conn, "SET client_min_messages = warning")
    C.preamble(conn, "accuracy: unlearn's defaults against scikit-learn, 3 x 5-fold held-out")
    print("%-14s %5s %3s | %9s %9s | %9s %9s %9s | %s"
          % ("set", "n", "d", "sigma 0", "sigma 1", "sk-ovr", "sk-multi", "sk-C1", "sigma 0 - sk-ovr / - sk-multi (points)"))
    for name, loader in SETS:
        X, y = loader(return_X_y=True)
        acc = {k: [] for k in ("u0", "u1", "ovr", "multi", "c1")}
        for seed in range(3):
            for tr, te in StratifiedKFold(5, shuffle=True, random_state=seed).split(X, y):
                n, d = len(tr), X.shape[1]
                c = 1.0 / (args.lam * n * (d + 1))
                acc["u0"].append(unlearn_accuracy(conn, X[tr], y[tr], X[te], y[te], args.lam, 0))
                acc["u1"].append(unlearn_accuracy(conn, X[tr], y[tr], X[te], y[te], args.lam, 1))
                sc = StandardScaler().fit(X[tr])
                a, b = sc.transform(X[tr]), sc.transform(X[te])
                acc["ovr"].append(LogisticRegression(C=c, multi_class="ovr", max_iter=10000).fit(a, y[tr]).score(b, y[te]))
                acc["multi"].append(LogisticRegression(C=c, max_iter=10000).fit(a, y[tr]).score(b, y[te]))
                acc["c1"].append(LogisticRegression(max_iter=10000).fit(a, y[tr]).score(b, y[te]))
        m = {k: 100 * float(np.mean(v)) for k, v in acc.items()}
        print("%-14s %5d %3d | %8.2f%% %8.2f%% | %8.2f%% %8.2f%% %8.2f%% | %+.2f / %+.2f"
              % (name, len(y), X.shape[1], m["u0"], m["u1"], m["ovr"], m["multi"], m["c1"],
                 m["u0"] - m["ovr"], m["u0"] - m["multi"]))
    C.execute(conn, "SELECT unlearn_drop('acc')")
    C.execute(conn, "DROP TABLE acc_train, acc_test")


if __name__ == "__main__":
    main()
