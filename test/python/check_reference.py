#!/usr/bin/python3
"""Coefficients of unperturbed models (sigma => 0) against independent
float64 references, on real data, to 1e-6 relative:

  * logistic on sklearn's digits, ones vs sevens (d = 64), against a NumPy
    Newton solver written here and against scikit-learn's newton-cg;
  * logistic on sklearn's breast-cancer data (d = 30, a {0, 1} label);
  * one-vs-rest on all ten digits;
  * least squares on diabetes, against a closed-form NumPy solve.

Every reference fits the same mapped rows, computed here independently of
the extension (src/column_map.c, preprocess 'standardize' on one array
column): z = ((x - c) / s, a) and x -> z / max(D, ||z||), D = sqrt(p)
(2 sqrt(p) for least squares), with the
intercept scaling a = 2, s = 2^(round(4 log2 sd) / 4) and c = (s/4)
round(mean / (s/4)) over all the elements; the catalog's centre, spread,
intercept scaling and spread grid are checked against them too.  And the same
objective, sum l(w.x_i, y_i) + (Lambda / 2) ||w||^2 with
Lambda = lambda * n (sklearn: C = 1 / Lambda, fit_intercept=False).
"""

import csv
import gzip
import sys
import warnings

import numpy as np
import psycopg2
from sklearn.linear_model import LogisticRegression

warnings.simplefilter("ignore")
SK = "/usr/lib/python3/dist-packages/sklearn/datasets/data"
failures = 0


def check(what, rel):
    global failures
    ok = rel <= 1e-6
    print("%s %s: relative difference %.3e" % ("ok  " if ok else "FAIL", what, rel))
    if not ok:
        failures += 1


def half_away(v):
    return float(np.sign(v) * np.floor(abs(v) + 0.5))


INTERCEPT_SCALING = 2.0
SPREAD_STEPS = 4


def grid(x):
    """centre and spread of the 'standardize' map over all elements of x"""
    v = x.ravel().astype(np.longdouble)
    mean = v.mean()
    sd = float(np.sqrt(((v - mean) ** 2).mean()))
    mean = float(mean)
    sd = max(sd, 2.0 ** -20 * max(abs(mean), 1.0))
    spread = 2.0 ** (half_away(SPREAD_STEPS * np.log2(sd)) / SPREAD_STEPS)
    step = spread / 4
    return step * half_away(mean / step), spread


def mapped(x, divisor_factor=1.0):
    """divisor_factor: D = factor sqrt(p), 2 for least squares"""
    c, s = grid(x)
    z = np.hstack([(x - c) / s, np.full((x.shape[0], 1), INTERCEPT_SCALING)])
    norms = np.sqrt((z * z).sum(1))
    return z / np.maximum(divisor_factor * np.sqrt(z.shape[1]), norms)[:, None]


def check_map(cur, model, x):
    cur.execute("SELECT centre[1], spread[1], intercept_scaling, spread_steps FROM unlearn.models "
                "WHERE model = %s", (model,))
    c, s, a, k = cur.fetchone()
    check("%s: catalog centre and spread (%g, %g)" % (model, c, s), rel([c, s], list(grid(x))))
    check("%s: catalog intercept scaling and spread steps (%g, %d)" % (model, a, k),
          rel([a, k], [INTERCEPT_SCALING, SPREAD_STEPS]))


def newton_logistic(z, y, reg):
    w = np.zeros(z.shape[1])
    for _ in range(100):
        m = y * (z @ w)
        sig = 1 / (1 + np.exp(-m))
        g = z.T @ ((sig - 1) * y) + reg * w
        if np.linalg.norm(g) < 1e-13 * max(1.0, np.linalg.norm(z.T @ (-0.5 * y))):
            break
        h = (z * (sig * (1 - sig))[:, None]).T @ z + reg * np.eye(z.shape[1])
        w -= np.linalg.solve(h, g)
    return w


def train_unperturbed(cur, model, table, label, features, lam, loss="logistic"):
    """Train with sigma => 0 and return the extension's coefficients."""
    cur.execute("SELECT * FROM unlearn_train(%s, %s, %s, %s, loss => %s, lambda => %s, sigma => 0)",
                (model, table, label, features, loss, lam))
    cur.execute("SELECT unlearn_coef(%s)", (model,))
    return np.array(cur.fetchone()[0])


def rel(a, b):
    return np.linalg.norm(np.asarray(a) - np.asarray(b)) / np.linalg.norm(b)


def main():
    conn = psycopg2.connect("")
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("CREATE EXTENSION IF NOT EXISTS unlearn")
    cur.execute("DROP SCHEMA IF EXISTS refcheck CASCADE")
    cur.execute("CREATE SCHEMA refcheck")

    with gzip.open(SK + "/digits.csv.gz", "rt") as f:
        digits = np.array([[float(v) for v in row] for row in csv.reader(f)])
    dx, dy = digits[:, :64], digits[:, 64].astype(int)

    with open(SK + "/breast_cancer.csv") as f:
        rows = list(csv.reader(f))[1:]
    bc = np.array([[float(v) for v in r] for r in rows])
    bx, by = bc[:, :30], bc[:, 30].astype(int)

    cur.execute("CREATE TABLE refcheck.digits (id int, label int, pixels float8[])")
    for i, (x, y) in enumerate(zip(dx, dy)):
        cur.execute("INSERT INTO refcheck.digits VALUES (%s, %s, %s)", (i, int(y), list(x)))
    cur.execute("CREATE TABLE refcheck.cancer (id int, benign int, x float8[])")
    for i, (x, y) in enumerate(zip(bx, by)):
        cur.execute("INSERT INTO refcheck.cancer VALUES (%s, %s, %s)", (i, int(y), list(x)))

    lam = 1e-3
    # binary: ones against sevens, boolean label
    cur.execute("CREATE TABLE refcheck.ones AS SELECT id, label = 1 AS one, pixels FROM refcheck.digits "
                "WHERE label IN (1, 7) ORDER BY id")
    w_ext = train_unperturbed(cur, "ref_ones", "refcheck.ones", "one", ["pixels"], lam)
    sel = np.isin(dy, [1, 7])
    check_map(cur, "ref_ones", dx[sel])
    z = mapped(dx[sel])
    y = np.where(dy[sel] == 1, 1.0, -1.0)
    reg = lam * z.shape[0]
    w_np = newton_logistic(z, y, reg)
    check("digits 1 vs 7, against NumPy Newton", rel(w_ext, w_np))
    sk = LogisticRegression(C=1 / reg, fit_intercept=False, solver="newton-cg", tol=1e-12, max_iter=1000).fit(z, y)
    check("digits 1 vs 7, against scikit-learn newton-cg", rel(w_ext, sk.coef_.ravel()))

    # binary, {0, 1} integer label, second data set
    w_ext = train_unperturbed(cur, "ref_cancer", "refcheck.cancer", "benign", ["x"], lam)
    check_map(cur, "ref_cancer", bx)
    z = mapped(bx)
    y = np.where(by == 1, 1.0, -1.0)
    w_np = newton_logistic(z, y, lam * z.shape[0])
    check("breast cancer, against NumPy Newton", rel(w_ext, w_np))

    # one-vs-rest over ten digits
    w_ext = train_unperturbed(cur, "ref_ovr", "refcheck.digits", "label", ["pixels"], lam)
    check_map(cur, "ref_ovr", dx)
    z = mapped(dx)
    reg = lam * z.shape[0]
    w_np = np.array([newton_logistic(z, np.where(dy == k, 1.0, -1.0), reg) for k in range(10)])
    check("digits one-vs-rest (10 x 65), against NumPy Newton", rel(w_ext, w_np))

    # least squares: (2 Z'Z + Lambda I) w = 2 Z'y
    with gzip.open(SK + "/diabetes_data_raw.csv.gz", "rt") as f:
        xs = np.array([[float(v) for v in line.split()] for line in f])
    with gzip.open(SK + "/diabetes_target.csv.gz", "rt") as f:
        ys = np.array([float(line) for line in f])
    cur.execute("CREATE TABLE refcheck.diab (x float8[], y float8)")
    for x, t in zip(xs, ys):
        cur.execute("INSERT INTO refcheck.diab VALUES (%s, %s)", (list(x), float(t)))
    w_ext = train_unperturbed(cur, "ref_diab", "refcheck.diab", "y", ["x"], lam, loss="squared")
    check_map(cur, "ref_diab", xs)
    z = mapped(xs, 2.0)
    reg = lam * z.shape[0]
    w_np = np.linalg.solve(2 * z.T @ z + reg * np.eye(z.shape[1]), 2 * z.T @ ys)
    check("diabetes least squares, against NumPy solve", rel(w_ext, w_np))

    for m in ("ref_ones", "ref_cancer", "ref_ovr", "ref_diab"):
        cur.execute("SELECT unlearn_drop(%s)", (m,))
    cur.execute("DROP SCHEMA refcheck CASCADE")
    cur.execute("DELETE FROM unlearn.ledger WHERE model LIKE 'ref\\_%%'")
    print("%d failed" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
