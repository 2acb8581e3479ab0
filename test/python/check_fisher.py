"""The KL bound of every fisher release against an independent computation.

In a database of its own (unlearn_check_fisher), on sklearn's breast cancer
(binary, 30 features) and iris (three classes, one-vs-rest), each with a
fisher model (nats => 1), a seeded randomized run of mixed statements:
DELETEs of one to ten rows, INSERTs of deleted rows back, UPDATEs of a
label or a feature, a statement rolled back.  After every committed
statement, from what the catalog holds (read as the superuser: the secret
w, the anchor w0, the noise scale c, the published coef) and the table's
rows mapped by the model's row map (unlearn_export):

  1. the exact minimiser w* of the rows left, by Newton's method in NumPy
     (no objective noise, the model's Lambda), and the Hessian B at the
     anchor over the same rows; the exact KL of the release against w*
     with the same noise, sum_k (w_k - w*_k)' B_k (w_k - w*_k) / (2 c),
     is at most the nats the statement's ledger line reports (a statement
     that retrained reports 0: its release reads only the rows it keeps);
  2. the nats reported are within the target (1);
  3. the published noise has the stated covariance: (coef - w)' B (coef -
     w) / c, over the statements, averages Kp (a chi-square with Kp degrees
     of freedom), within 6 standard deviations;
  4. unlearn.status.nats is the sum of the ledger's nats.

Exits 1 on any failure.  The server is the libpq environment's.
"""

import struct
import sys
import time

import numpy as np
import psycopg2
from sklearn.datasets import load_breast_cancer, load_iris

DB = "unlearn_check_fisher"
STATEMENTS = 60
failures = 0
stats = {"compared": 0, "retrained": 0, "largest ratio": 0.0, "noise": []}


def check(what, ok, detail=""):
    global failures
    if not ok:
        print("FAIL %s%s" % (what, detail))
        failures += 1


def doubles(b):
    b = bytes(b)
    return np.array(struct.unpack("<%dd" % (len(b) // 8), b))


def mapped(export, x):
    m = export["map"]
    z = np.array(x, dtype=float)
    if m["centre"] is not None:
        c = np.array(m["centre"], dtype=float)
        s = np.array(m["spread"], dtype=float)
        clamp = float(m["clamp"])
        z = np.clip((z - c) * (1.0 / s), -clamp, clamp)
    if m["intercept"]:
        z = np.hstack([z, np.full((z.shape[0], 1), float(m["intercept_scaling"]))])
    norm = np.sqrt((z * z).sum(axis=1))
    return z / np.maximum(float(m["scale"]), norm)[:, None]


def sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def exact_minimiser(x, y, reg):
    """argmin sum log(1 + exp(-y x.w)) + reg/2 ||w||^2, to a gradient of 1e-13"""
    w = np.zeros(x.shape[1])
    for _ in range(100):
        z = x @ w
        s = sigmoid(y * z)
        g = x.T @ ((s - 1.0) * y) + reg * w
        if np.linalg.norm(g) < 1e-13 * max(1.0, reg):
            break
        h = (x * (s * (1 - s))[:, None]).T @ x + reg * np.eye(x.shape[1])
        w = w - np.linalg.solve(h, g)
    return w


def verify(cur, model, table, columns, label, xact):
    cur.execute("SELECT unlearn_export(%s)", (model,))
    export = cur.fetchone()[0]
    cur.execute("SELECT m.reg, m.coef, m.nats, m.nats_spent, m.classes, s.weights, s.anchor, s.release_scale "
                "FROM unlearn.models m JOIN unlearn.model_state s USING (model) WHERE model = %s", (model,))
    reg, coef, target, nats_spent, classes, weights, anchor, c = cur.fetchone()
    # the statement's release: its last line with nats
    cur.execute("SELECT nats, retrained, count(*) OVER (), max(nats) OVER () FROM unlearn.ledger "
                "WHERE model = %s AND xact = %s AND nats IS NOT NULL ORDER BY id DESC LIMIT 1", (model, xact))
    found = cur.fetchone()
    reported, retrained, lines, largest = found if found else (0.0, False, 0, 0.0)
    cur.execute("SELECT nats FROM unlearn.status WHERE model = %s", (model,))
    shown = cur.fetchone()[0]
    cur.execute("SELECT coalesce(sum(nats), 0) FROM unlearn.ledger WHERE model = %s", (model,))
    ledger_sum = cur.fetchone()[0]
    check("%s: unlearn.status.nats is the ledger's sum" % model,
          abs(shown - ledger_sum) <= 1e-9 * max(1.0, ledger_sum) and abs(nats_spent - shown) <= 1e-12 * max(1, shown),
          " (%r against %r)" % (shown, ledger_sum))
    if lines == 0:
        check("%s: a statement that changed the model published a release" % model, False)
        return
    check("%s: the release's nats within the target" % model, largest <= target, " (%r)" % largest)
    cur.execute("SELECT %s, %s::text FROM %s ORDER BY id" % (", ".join(columns), label, table))
    rows = cur.fetchall()
    x = mapped(export, np.array([r[:-1] for r in rows], dtype=float))
    labels = np.array([r[-1] for r in rows])
    p = x.shape[1]
    k = len(classes) if len(classes) > 2 else 1
    w = doubles(weights).reshape(k, p)
    w0 = doubles(anchor).reshape(k, p)
    published = np.array(coef, dtype=float).reshape(k, p)
    kl = 0.0
    noise = 0.0
    for j in range(k):
        positive = classes[1] if k == 1 else classes[j]
        y = np.where(labels == positive, 1.0, -1.0)
        s0 = sigmoid(x @ w0[j])
        b = (x * (s0 * (1 - s0))[:, None]).T @ x + reg * np.eye(p)
        d = w[j] - exact_minimiser(x, y, reg)
        kl += 0.5 * d @ b @ d / c
        z = published[j] - w[j]
        noise += z @ b @ z / c
    stats["noise"].append(noise / (k * p))
    if retrained:
        stats["retrained"] += 1
        cur.execute("SELECT operation, rows_removed, rows_added, retrained, reanchored, nats FROM unlearn.ledger "
                    "WHERE model = %s AND xact = %s ORDER BY id", (model, xact))
        check("%s: a retraining statement reports 0 nats" % model, reported == 0,
              " (%r: %r)" % (reported, cur.fetchall()))
        return
    stats["compared"] += 1
    stats["largest ratio"] = max(stats["largest ratio"], kl / reported)
    check("%s: exact KL within the nats reported" % model, kl <= reported,
          " (exact %.6g, reported %.6g)" % (kl, reported))


def load(cur, table, data, target, names):
    cols = ", ".join("%s float8" % n for n in names)
    cur.execute("CREATE TABLE %s (id int PRIMARY KEY, %s, label text)" % (table, cols))
    for i, (row, t) in enumerate(zip(data, target)):
        cur.execute("INSERT INTO %s VALUES (%s)" % (table, ", ".join(["%s"] * (len(names) + 2))),
                    [i] + [float(v) for v in row] + [str(names_of(table, t))])


def names_of(table, t):
    return ("benign", "malignant")[t] if table == "bc" else ("setosa", "versicolor", "virginica")[t]


def run(conn):
    cur = conn.cursor()
    rng = np.random.default_rng(20261127)
    cur.execute("CREATE EXTENSION unlearn")
    cancer = load_breast_cancer()
    iris = load_iris()
    sets = [("bc", "fi_bc", cancer.data, 1 - cancer.target, ["f%d" % i for i in range(30)], 0.01),
            ("ir", "fi_ir", iris.data, iris.target, ["f%d" % i for i in range(4)], 0.01)]
    for table, model, data, target, names, lam in sets:
        load(cur, table, data, target, names)
        cur.execute("SELECT 1 FROM unlearn_train(%s, %s, 'label', %s, lambda => %s, mechanism => 'fisher')",
                    (model, table, names, lam))
    conn.commit()
    for table, model, data, target, names, lam in sets:
        gone = []
        for step in range(STATEMENTS):
            cur.execute("SELECT array_agg(id ORDER BY id) FROM %s" % table)
            ids = cur.fetchone()[0]
            kind = rng.choice(["delete", "delete many", "insert", "update label", "update feature",
                               "rollback"], p=[0.3, 0.2, 0.15, 0.15, 0.1, 0.1])
            if kind == "insert" and not gone:
                kind = "delete"
            if kind == "delete":
                i = int(rng.choice(ids))
                cur.execute("DELETE FROM %s WHERE id = %%s RETURNING *" % table, (i,))
                gone += cur.fetchall()
            elif kind in ("delete many", "rollback"):
                chosen = [int(i) for i in rng.choice(ids, size=int(rng.integers(2, 11)), replace=False)]
                cur.execute("DELETE FROM %s WHERE id = ANY(%%s) RETURNING *" % table, (chosen,))
                removed = cur.fetchall()
                if kind == "rollback":
                    conn.rollback()
                    continue
                gone += removed
            elif kind == "insert":
                back = [gone.pop(int(rng.integers(len(gone)))) for _ in range(min(len(gone), int(rng.integers(1, 4))))]
                one = "(%s)" % ", ".join(["%s"] * len(back[0]))
                cur.execute("INSERT INTO %s VALUES %s" % (table, ", ".join([one] * len(back))),
                            [v for r in back for v in r])
            elif kind == "update label":
                i = int(rng.choice(ids))
                cur.execute("UPDATE %s SET label = CASE WHEN label = %%s THEN %%s ELSE %%s END WHERE id = %%s"
                            % table, (names_of(table, 0), names_of(table, 1), names_of(table, 0), i))
            else:
                i = int(rng.choice(ids))
                cur.execute("UPDATE %s SET f0 = f0 * 1.1 WHERE id = %%s" % table, (i,))
            cur.execute("SELECT pg_current_xact_id()")
            xact = cur.fetchone()[0]
            conn.commit()
            verify(cur, model, table, names, "label", xact)
            conn.commit()


def main():
    started = time.time()
    admin = psycopg2.connect("")
    admin.autocommit = True
    acur = admin.cursor()
    acur.execute("DROP DATABASE IF EXISTS %s WITH (FORCE)" % DB)
    acur.execute("CREATE DATABASE %s" % DB)
    try:
        conn = psycopg2.connect(dbname=DB)
        conn.cursor().execute("SET client_min_messages = warning")
        try:
            run(conn)
        finally:
            conn.close()
    finally:
        acur.execute("DROP DATABASE IF EXISTS %s WITH (FORCE)" % DB)
        admin.close()
    noise = np.array(stats["noise"])
    # each term is chi-square(Kp) / Kp: mean 1, variance 2 / Kp; p = 31 or 5 x 3
    spread = np.sqrt(2.0 / 15.0 / len(noise))
    check("the published noise has covariance c B^-1", abs(noise.mean() - 1.0) <= 6 * spread,
          " (mean of (coef - w)' B (coef - w) / (c K p): %.3f over %d releases)" % (noise.mean(), len(noise)))
    if stats["compared"] < 30:
        check("enough releases compared", False, " (%d)" % stats["compared"])
    print("check_fisher: %d releases compared with the exact retrain (%d statements retrained), largest "
          "exact KL / nats reported %.3g; noise scale %.3f of its expectation; %.1f s"
          % (stats["compared"], stats["retrained"], stats["largest ratio"], noise.mean(), time.time() - started))
    print("check_fisher: %s" % ("FAIL (%d)" % failures if failures else "ok"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
