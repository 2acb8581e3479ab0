"""unlearn_export against the extension's own predictions, rebuilt in NumPy.

In a database of its own (unlearn_check_export), on synthetic rows with a
fixed seed:

  1. four models: a binary classifier (standardize map, columns), a
     3-class one-vs-rest classifier (declared map), least squares (no map)
     and a classifier on one array column (one centre and spread for all
     its elements);
  2. for 1,000 held-out rows each, the exported weights and row map give,
     in NumPy, what unlearn_predict returns (the probability of classes[1],
     the value) and, for the 3-class model, what unlearn_predict_proba
     returns, to 1e-12;
  3. the export carries the extension's version, the features and the
     classes; a role granted 'read' may export, one without a grant gets
     42501, and a model that releases no weights 55000.

Exits 1 on any failure.  The server is the libpq environment's.
"""

import json
import sys

import numpy as np
import psycopg2

DB = "unlearn_check_export"
ROWS = 3000
HELD_OUT = 1000
failures = 0


def check(what, ok, detail=""):
    global failures
    print("%s %s%s" % ("ok  " if ok else "FAIL", what, detail))
    if not ok:
        failures += 1


def mapped(export, x):
    """the row map of the export, on raw rows x (n x d)"""
    m = export["map"]
    z = np.array(x, dtype=float)
    if m["centre"] is not None:
        c = np.array(m["centre"], dtype=float)
        s = np.array(m["spread"], dtype=float)
        if export["feature_array"]:
            c = np.full(z.shape[1], c[0])
            s = np.full(z.shape[1], s[0])
        clamp = float(m["clamp"])   # jsonb keeps 1e150 as a numeric
        z = np.clip((z - c) * (1.0 / s), -clamp, clamp)
    if m["intercept"]:
        z = np.hstack([z, np.full((z.shape[0], 1), float(m["intercept_scaling"]))])
    norm = np.sqrt((z * z).sum(axis=1))
    return z / np.maximum(float(m["scale"]), norm)[:, None]


def predicted(export, x):
    """unlearn_predict's value and, one-vs-rest, every class's probability"""
    w = np.array(export["weights"], dtype=float)
    scores = mapped(export, x) @ w.T
    if export["loss"] == "squared":
        return scores[:, 0], None
    sig = 1.0 / (1.0 + np.exp(-scores))
    if w.shape[0] == 1:
        return sig[:, 0], None
    proba = sig / sig.sum(axis=1, keepdims=True)
    return sig.max(axis=1), proba


def compare(cur, model, table, columns, array=False):
    cur.execute("SELECT unlearn_export(%s)", (model,))
    export = cur.fetchone()[0]
    if array:
        cur.execute("SELECT x, unlearn_predict(%%s, x) FROM %s ORDER BY id" % table, (model,))
        rows = cur.fetchall()
        x = np.array([r[0] for r in rows], dtype=float)
    else:
        cur.execute("SELECT %s, unlearn_predict(%%s, ARRAY[%s]) FROM %s ORDER BY id"
                    % (", ".join(columns), ", ".join(columns), table), (model,))
        rows = cur.fetchall()
        x = np.array([r[:len(columns)] for r in rows], dtype=float)
    theirs = np.array([r[-1] for r in rows], dtype=float)
    mine, proba = predicted(export, x)
    diff = float(np.max(np.abs(mine - theirs) / np.maximum(1.0, np.abs(theirs))))
    check("%s: %d predictions rebuilt from the export" % (model, len(rows)), diff <= 1e-12,
          " (largest difference %.2e)" % diff)
    if proba is not None:
        cur.execute("SELECT unlearn_predict_proba(%%s, ARRAY[%s]) FROM %s ORDER BY id"
                    % (", ".join(columns), table), (model,))
        theirs_p = np.array([r[0] for r in cur.fetchall()], dtype=float)
        diff = float(np.max(np.abs(proba - theirs_p)))
        check("%s: every class's probability rebuilt" % model, diff <= 1e-12,
              " (largest difference %.2e)" % diff)
    return export


def run(conn):
    cur = conn.cursor()
    rng = np.random.default_rng(20261127)
    x = rng.normal(size=(ROWS, 3)) * [3.0, 0.5, 20.0] + [10.0, -1.0, 100.0]
    t = (x[:, 0] - 10) / 3 + 2 * (x[:, 1] + 1) - (x[:, 2] - 100) / 20 + rng.normal(size=ROWS)
    label = t + rng.logistic(size=ROWS) > 0
    three = np.where(t < -1, "low", np.where(t < 1, "mid", "high"))
    arr = rng.normal(size=(ROWS, 8)) * 4 + 2
    yes_arr = arr[:, 0] - arr[:, 3] + rng.logistic(size=ROWS) > 0
    cur.execute("CREATE EXTENSION unlearn")
    cur.execute("CREATE TABLE ex (id int PRIMARY KEY, a float8, b float8, c float8, y float8, "
                "yes boolean, kind text, x float8[], ya boolean)")
    for i in range(ROWS):
        cur.execute("INSERT INTO ex VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (i, float(x[i, 0]), float(x[i, 1]), float(x[i, 2]), float(t[i]),
                     bool(label[i]), str(three[i]), [float(v) for v in arr[i]], bool(yes_arr[i])))
    cur.execute("CREATE TABLE ex_held AS SELECT * FROM ex WHERE id >= %s", (ROWS - HELD_OUT,))
    cur.execute("DELETE FROM ex WHERE id >= %s", (ROWS - HELD_OUT,))
    cur.execute("SELECT 1 FROM unlearn_train('ex_bin', 'ex', 'yes', '{a,b,c}', sigma => 1)")
    cur.execute("SELECT 1 FROM unlearn_train('ex_ovr', 'ex', 'kind', '{a,b,c}', sigma => 1, "
                "options => '{\"preprocess\": \"declared\", \"centre\": [10, -1, 100], "
                "\"spread\": [3, 0.5, 20]}')")
    cur.execute("SELECT 1 FROM unlearn_train('ex_lsq', 'ex', 'y', '{a,b,c}', loss => 'squared', "
                "sigma => 0, options => '{\"preprocess\": \"none\"}')")
    cur.execute("SELECT 1 FROM unlearn_train('ex_arr', 'ex', 'ya', '{x}', sigma => 1)")
    # a deletion first: the export is of the released weights after it
    cur.execute("DELETE FROM ex WHERE id < 10")

    e = compare(cur, "ex_bin", "ex_held", ["a", "b", "c"])
    cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'unlearn'")
    check("the export names the extension's version", e["version"] == cur.fetchone()[0])
    check("the export names features and classes",
          e["features"] == ["a", "b", "c"] and e["classes"] == ["false", "true"] and
          e["map"]["centre"] is not None)
    e = compare(cur, "ex_ovr", "ex_held", ["a", "b", "c"])
    check("one-vs-rest: three weight vectors and the classes",
          len(e["weights"]) == 3 and sorted(e["classes"]) == ["high", "low", "mid"])
    e = compare(cur, "ex_lsq", "ex_held", ["a", "b", "c"])
    check("least squares: no map and no classes", e["map"]["centre"] is None and e["classes"] is None)
    e = compare(cur, "ex_arr", "ex_held", ["x"], array=True)
    check("an array feature: one centre and spread", len(e["map"]["centre"]) == 1)

    # who may export
    cur.execute("CREATE ROLE check_export_reader")
    cur.execute("CREATE ROLE check_export_stranger")
    cur.execute("SELECT unlearn_grant('ex_bin', 'check_export_reader', 'read')")
    cur.execute("SET ROLE check_export_reader")
    cur.execute("SELECT unlearn_export('ex_bin') ->> 'model'")
    check("a role granted read exports", cur.fetchone()[0] == "ex_bin")
    cur.execute("RESET ROLE")
    cur.execute("SET ROLE check_export_stranger")
    try:
        cur.execute("SAVEPOINT s")
        cur.execute("SELECT unlearn_export('ex_bin')")
        check("a role without a grant is refused", False)
    except psycopg2.Error as err:
        cur.execute("ROLLBACK TO SAVEPOINT s")
        check("a role without a grant is refused (42501)", err.pgcode == "42501")
    cur.execute("RESET ROLE")
    cur.execute("DELETE FROM ex WHERE id >= 10")
    try:
        cur.execute("SAVEPOINT s")
        cur.execute("SELECT unlearn_export('ex_bin')")
        check("a model that releases no weights is refused", False)
    except psycopg2.Error as err:
        cur.execute("ROLLBACK TO SAVEPOINT s")
        check("a model that releases no weights is refused (55000)", err.pgcode == "55000")
    cur.execute("SELECT unlearn_drop(model) FROM unlearn.models")
    cur.execute("DROP ROLE check_export_reader")
    cur.execute("DROP ROLE check_export_stranger")


def main():
    admin = psycopg2.connect("")
    admin.autocommit = True
    acur = admin.cursor()
    acur.execute("DROP DATABASE IF EXISTS %s" % DB)
    acur.execute("CREATE DATABASE %s" % DB)
    try:
        conn = psycopg2.connect(dbname=DB)
        try:
            run(conn)
            conn.commit()
        finally:
            conn.close()
    finally:
        acur.execute("DROP DATABASE IF EXISTS %s" % DB)
        admin.close()
    print("check_export: %s" % ("ok" if failures == 0 else "FAIL (%d)" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
