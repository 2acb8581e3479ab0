#!/usr/bin/python3
"""What comparing two versions of a model reveals, and who may compare them.

The certificate of Guo et al. covers an observer of the model after a
removal, not one who reads it before and after.  The removal step is
v = w_before - w_after = -H^-1 grad l(w, z_r) with H the Hessian of the
remaining rows (certified-removal.md), so H v points along the deleted
row's mapped vector z_r, and H can be rebuilt at the public w from the
rows that are left.  This check runs that attack on sklearn's breast
cancer data (30 features, a logistic model at the default settings):

  * a role with SELECT and DELETE on the table but no grant on the model
    reads nothing of it, before or after its DELETE: unlearn_coef,
    unlearn_predict, unlearn_score_row, unlearn_score, unlearn_evaluate and
    unlearn_ledger fail with SQLSTATE 42501, and unlearn.models,
    unlearn.status and unlearn.ledger show it no row;
  * a role granted 'read' reads w and the row map before and after each of
    ten single-row DELETEs, and recovers each deleted row: |cos(H v, z_r)|
    > 0.999 (measured: 0.999995 at the least), and among the rows that were
    there before the DELETE, the deleted one is the closest in direction.

This is why reads are granted per model and only to roles trusted with the
training data (docs/trust.md, "What a reader of a model can learn").

Tables, roles and models are named va_* and dropped at the end.  The server
is the libpq environment's (a superuser) with unlearn preloaded.
"""

import csv
import sys

import numpy as np
import psycopg2
from psycopg2.extras import execute_values

SK = "/usr/lib/python3/dist-packages/sklearn/datasets/data"
ROLES = ("va_owner", "va_analyst", "va_reader")
failures = 0


def check(what, ok, detail=""):
    global failures
    print("%s %s%s" % ("ok  " if ok else "FAIL", what, detail))
    if not ok:
        failures += 1


def load_cancer():
    with open(SK + "/breast_cancer.csv") as f:
        rows = list(csv.reader(f))[1:]
    a = np.array([[float(v) for v in r] for r in rows])
    return a[:, :30], a[:, 30].astype(int)


def cleanup(cur):
    cur.execute("RESET ROLE")
    cur.execute("SELECT unlearn_drop(model) FROM unlearn.models WHERE model = 'va'")
    cur.execute("DROP TABLE IF EXISTS va_rows")
    for r in ROLES:
        cur.execute("DROP ROLE IF EXISTS %s" % r)


def sqlstate(cur, sql, args=()):
    """the SQLSTATE of sql as the current role, or the number of rows"""
    cur.execute("SAVEPOINT s")
    try:
        cur.execute(sql, args)
        n = len(cur.fetchall())
        cur.execute("RELEASE SAVEPOINT s")
        return "%d rows" % n
    except psycopg2.Error as e:
        cur.execute("ROLLBACK TO SAVEPOINT s")
        return e.pgcode


def row_map(x, centre, spread, scale, intercept_scaling):
    """the model's map (src/column_map.c): standardise, append 1, divide by max(D, ||z||)"""
    z = np.append((x - centre) / spread, intercept_scaling)
    return z / max(scale, np.linalg.norm(z))


def public_model(cur):
    cur.execute("SELECT coef, centre, spread, scale, intercept_scaling, reg FROM unlearn.models "
                "WHERE model = 'va'")
    coef, centre, spread, scale, intercept_scaling, reg = cur.fetchone()
    # the divisor D and the intercept scaling a of the row map
    return np.array(coef), np.array(centre), np.array(spread), (scale, intercept_scaling), reg


def analyst_sees_nothing(cur, when):
    cur.execute("SET ROLE va_analyst")
    paths = {
        "unlearn_coef": "SELECT unlearn_coef('va')",
        "unlearn_predict": "SELECT unlearn_predict('va', x) FROM va_rows",
        "unlearn_score_row": "SELECT unlearn_score_row('va', t) FROM va_rows t",
        "unlearn_score": "SELECT * FROM unlearn_score('va')",
        "unlearn_evaluate": "SELECT * FROM unlearn_evaluate('va')",
        "unlearn_ledger": "SELECT * FROM unlearn_ledger('va')",
    }
    for name, sql in paths.items():
        got = sqlstate(cur, sql)
        check("%s: an ungranted role's %s gives 42501" % (when, name), got == "42501", " (%s)" % got)
    for table in ("unlearn.models", "unlearn.status", "unlearn.ledger"):
        got = sqlstate(cur, "SELECT * FROM %s WHERE model = 'va'" % table)
        check("%s: an ungranted role sees no row of %s" % (when, table), got == "0 rows", " (%s)" % got)
    cur.execute("RESET ROLE")


def main():
    x, y = load_cancer()
    conn = psycopg2.connect("")
    conn.autocommit = False
    cur = conn.cursor()
    cleanup(cur)
    for r in ROLES:
        cur.execute("CREATE ROLE %s" % r)
    cur.execute("CREATE TABLE va_rows (id int PRIMARY KEY, y int, x float8[])")
    execute_values(cur, "INSERT INTO va_rows VALUES %s",
                   [(i, int(y[i]), [float(v) for v in x[i]]) for i in range(len(y))])
    cur.execute("ALTER TABLE va_rows OWNER TO va_owner")
    cur.execute("GRANT SELECT, DELETE ON va_rows TO va_analyst, va_reader")
    cur.execute("SET ROLE va_owner")
    cur.execute("SELECT model FROM unlearn_train('va', 'va_rows', 'y', '{x}')")
    cur.execute("SELECT unlearn_grant('va', 'va_reader')")
    cur.execute("RESET ROLE")
    conn.commit()

    analyst_sees_nothing(cur, "before a DELETE")
    cur.execute("SET ROLE va_analyst")
    cur.execute("DELETE FROM va_rows WHERE id = 0")
    cur.execute("RESET ROLE")
    conn.commit()
    analyst_sees_nothing(cur, "after its DELETE")

    # the granted role: ten single-row DELETEs, each recovered
    rng = np.random.default_rng(7)
    victims = [int(v) for v in rng.choice(np.arange(1, len(y)), size=10, replace=False)]
    cosines, identified = [], 0
    cur.execute("SET ROLE va_reader")
    for victim in victims:
        w_before, centre, spread, scale, reg = public_model(cur)
        cur.execute("SELECT id, x FROM va_rows ORDER BY id")
        before = {r[0]: np.array(r[1]) for r in cur.fetchall()}
        cur.execute("DELETE FROM va_rows WHERE id = %s", (victim,))
        conn.commit()
        w_after, centre2, spread2, scale2, _ = public_model(cur)
        if not (np.array_equal(centre, centre2) and np.array_equal(spread, spread2)):
            continue  # a retrain moved the map: another release, not a step
        # H at the public w from the rows that are left (the Hessian of
        # sum l(w.z) + Lambda/2 |w|^2; the noise term is linear)
        Z = np.array([row_map(v, centre, spread, *scale) for k, v in before.items() if k != victim])
        s = 1.0 / (1.0 + np.exp(-(Z @ w_before)))
        H = (Z * (s * (1 - s))[:, None]).T @ Z + reg * np.eye(len(w_before))
        u = H @ (w_before - w_after)
        z_r = row_map(before[victim], centre, spread, *scale)
        cosines.append(abs(u @ z_r) / (np.linalg.norm(u) * np.linalg.norm(z_r)))
        # which row was it?  the one whose direction H v matches best
        scores = {k: abs(u @ row_map(v, centre, spread, *scale)) /
                  np.linalg.norm(row_map(v, centre, spread, *scale)) for k, v in before.items()}
        identified += max(scores, key=scores.get) == victim
    cur.execute("RESET ROLE")
    check("a granted role compared %d pairs of versions" % len(cosines), len(cosines) >= 8)
    check("and recovered each deleted row's direction: min |cos(H v, z_r)| > 0.999",
          len(cosines) > 0 and min(cosines) > 0.999,
          " (min %.12f)" % (min(cosines) if cosines else float("nan")))
    check("and named the deleted row among those before the DELETE",
          identified == len(cosines), " (%d of %d)" % (identified, len(cosines)))
    conn.commit()
    cleanup(cur)
    conn.commit()
    conn.close()
    return failures


if __name__ == "__main__":
    sys.exit(1 if main() else 0)
