#!/usr/bin/python3
"""Cohort statistics (unlearn.cohorts) against an independent NumPy
recomputation, through a randomized sequence of changes.

Three models on one synthetic table (3,030 rows, 6 features, 8 cohorts of
100 to 1,000 rows in the text column "tenant", and 30 rows with no tenant),
each trained with cohort => 'tenant' and preprocess 'none':

  cc_ls   least squares (sigma 0)
  cc_lg   binary logistic (sigma 1, a boolean label)
  cc_mc   one-vs-rest logistic over 3 text labels (sigma 10: a budget of 3.1,
          so that some erasures fit their bound and others are measured)

Then 60 statements drawn with a fixed seed: DELETE of a whole cohort (alone,
or with rows of other cohorts), single and multi-row DELETE, INSERT into
existing, new and erased cohort values, UPDATE of features (some rows, or
all of a cohort) and of labels, UPDATE moving some or all of a cohort's rows
to another value (or to NULL), INSERT ... ON CONFLICT DO UPDATE, MERGE
(one deleting a cohort whole), unlearn_forget_cohort, a DELETE of a
whole cohort rolled back to a savepoint before a DELETE of some of its
rows, and four BEGIN ... ROLLBACK blocks.  After each, for each model, on one
REPEATABLE READ snapshot of the table and the catalog:

  1. unlearn_verify: residual <= spent (a failure is critical), spent <=
     budget for the logistic models, and certified;
  2. unlearn.models.rows equals the table's count, the state is ready;
  3. least squares: coef equals the NumPy solution of
     (2 Z'Z + Lambda I) w = 2 Z'y - b to 1e-9 (relative): the loss is
     (w.x - y)^2 (src/math/loss.c), b is unlearn.model_state.noise and
     Lambda unlearn.models.reg;
  4. every kept cohort has rows in the table, as many as stored, and its
     stats (COHORT_DOUBLES(K, p) little-endian doubles: K packed lower
     Hessians, K gradients, K x (C, M, W), N) equal a recomputation from the
     table's rows at the model's anchor (the origin for least squares) to
     1e-9 relative: H_c = sum l''(a.x) x x', g_c = sum l'(a.x) x,
     C_c = sum l''(a.x); M_c and W_c are at least the sums of |l'| and l''
     over the current rows, N_c at least the rows; where the build keeps
     them after N_c, the rows per label n_c equal the table's; unlearn_cohorts
     lists the same cohorts;
  5. the kept values are a subset of those kept before, or, when the
     statistics were rebuilt (a training; for a logistic model, a moved
     anchor), exactly the tenant values of the table;
  6. the statement's 'cohort' ledger lines remove as many rows as the kept
     cohorts it emptied (none if it emptied none).  An emptied cohort whose
     rows went row by row (its step did not fit the budget in a statement
     that also adds rows) is counted, not a failure.

A ROLLBACK must leave unlearn.models, unlearn.model_state, unlearn.cohorts
and the ledger bit for bit as they were (and the models must have changed
inside the transaction).  The whole-cohort erasures ('cohort' ledger lines)
are counted per model, with how many were certified by their bound and how
many by measuring the residual; the check fails if a model has none.

The rows are mapped here from the catalog (src/math/column_map.c): with
z = (x, a), a the intercept scaling, x -> z / max(scale, ||z||).  The
statements are the same in every run; the logistic models' noise is drawn by
the server, so which erasures fit their bound, re-anchor or fall back row by
row varies a little between runs.

Runs in a scratch database of the libpq environment's server, created and
dropped here: UNLEARN_CHECK_COHORTS_DB names it (default
unlearn_check_cohorts), UNLEARN_KEEP_DB=1 keeps it for inspection.
"""

import os
import sys
import time

import numpy as np
import psycopg2
from psycopg2.extras import execute_values

DB = os.environ.get("UNLEARN_CHECK_COHORTS_DB", "unlearn_check_cohorts")
KEEP = bool(os.environ.get("UNLEARN_KEEP_DB"))
TOL = 1e-9
SEED = 20240603
D = 6
FEATURES = ["x%d" % (j + 1) for j in range(D)]
CLASSES = ["hi", "lo", "mid"]
SIZES = [1000, 640, 420, 300, 230, 170, 140, 100]
NO_TENANT = 30
MODELS = ("cc_ls", "cc_lg", "cc_mc")
SIGMA_LG = 1.0
SIGMA_MC = 10.0         # a budget of 3.1: some erasures fit their bound, others are measured
LOGISTIC = ("cc_lg", "cc_mc")

failures = []
critical = []
worst = {"coef": 0.0, "H": 0.0, "g": 0.0, "C": 0.0}
counts = {"checks": 0, "cohorts checked": 0, "rollbacks": 0, "fallbacks": 0, "rebuilds": 0}


def fail(what, is_critical=False):
    failures.append(what)
    if is_critical:
        critical.append(what)
    print("FAIL %s%s" % ("(critical) " if is_critical else "", what))


def rel(a, b):
    a = np.asarray(a, dtype=float).ravel()
    b = np.asarray(b, dtype=float).ravel()
    nb = np.linalg.norm(b)
    diff = np.linalg.norm(a - b)
    return diff / nb if nb > 0 else diff


# --- data -------------------------------------------------------------------

class Data:
    """Synthetic rows: tenant-shifted Gaussian features and three labels."""

    def __init__(self, rng):
        self.rng = rng
        self.beta = rng.normal(0, 1, D)
        self.beta_pos = rng.normal(0, 1.2, D)
        self.beta_cls = rng.normal(0, 1.2, (D, 3))
        self.shift = {}

    def rows(self, ids, tenant):
        n = len(ids)
        if tenant not in self.shift:
            self.shift[tenant] = self.rng.normal(0, 0.6, D)
        x = self.shift[tenant] + self.rng.normal(0, 1, (n, D))
        y = x @ self.beta + 0.5 * self.rng.normal(0, 1, n)
        pos = self.rng.random(n) < 1 / (1 + np.exp(-(x @ self.beta_pos)))
        cls = np.argmax(x @ self.beta_cls + self.rng.gumbel(0, 1, (n, 3)), axis=1)
        return [(int(ids[i]), tenant) + tuple(float(v) for v in x[i]) +
                (float(y[i]), bool(pos[i]), CLASSES[cls[i]]) for i in range(n)]


COLUMNS = "id, tenant, " + ", ".join(FEATURES) + ", y, pos, cls"
UNNEST = ("SELECT * FROM unnest(%s::int[], %s::text[], " + ", ".join(["%s::float8[]"] * D) +
          ", %s::float8[], %s::boolean[], %s::text[]) AS u(" + COLUMNS + ")")


def columns_of(rows):
    return [list(c) for c in zip(*rows)]


class Table:
    """The table's rows as read back after a statement."""

    def __init__(self, cur):
        cur.execute("SELECT " + COLUMNS + " FROM ccheck ORDER BY id")
        r = cur.fetchall()
        self.ids = np.array([t[0] for t in r], dtype=int)
        self.tenant = [t[1] for t in r]
        self.x = np.array([t[2:2 + D] for t in r], dtype=float).reshape(-1, D)
        self.y = np.array([t[2 + D] for t in r], dtype=float)
        self.pos = [t[3 + D] for t in r]
        self.cls = [t[4 + D] for t in r]
        self.tenant_of = dict(zip(self.ids.tolist(), self.tenant))
        self.by_tenant = {}
        for i, t in zip(self.ids.tolist(), self.tenant):
            if t is not None:
                self.by_tenant.setdefault(t, []).append(i)

    def count(self, t):
        return len(self.by_tenant.get(t, []))


# --- the statements ---------------------------------------------------------

class Workload:
    def __init__(self, rng, data, next_id):
        self.rng = rng
        self.data = data
        self.next_id = next_id
        self.new_values = 0
        self.erased_values = []
        self.forget_turn = 0

    def ids(self, n):
        out = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        return out

    def pick_ids(self, tab, n, tenant=None):
        pool = tab.ids if tenant is None else np.array(tab.by_tenant[tenant])
        n = min(n, len(pool))
        return sorted(int(v) for v in self.rng.choice(pool, n, replace=False))

    def whole_target(self, tab, original):
        """a cohort to remove whole: small enough, preferring original values"""
        total = len(tab.ids)
        values = sorted(v for v in tab.by_tenant if total - tab.count(v) >= 1000 and
                        tab.count(v) <= 0.25 * total)
        first = [v for v in values if v in original]
        pool = first if first and self.rng.random() < 0.75 else values
        return str(self.rng.choice(pool)) if pool else None

    def other_value(self, tab, not_this):
        values = sorted(v for v in tab.by_tenant if v != not_this)
        return str(self.rng.choice(values)) if values else self.fresh_value()

    def fresh_value(self):
        if self.erased_values and self.rng.random() < 0.4:
            return self.erased_values[int(self.rng.integers(len(self.erased_values)))]
        self.new_values += 1
        return "new-%02d" % self.new_values

    def insert(self, rows):
        return ("INSERT INTO ccheck (" + COLUMNS + ") " + UNNEST, columns_of(rows))

    def make(self, kind, tab, original):
        """(kind, description, sql, params) of one statement of this kind (a
        whole-cohort kind becomes delete_multi when no cohort fits)"""
        rng = self.rng
        if kind in ("delete_cohort", "forget_cohort", "move_whole", "mixed_delete", "merge_whole"):
            target = self.whole_target(tab, original)
            if target is None:
                kind = "delete_multi"
            else:
                self.erased_values.append(target)
        if kind == "delete_cohort":
            return (kind, "DELETE cohort %s (%d rows)" % (target, tab.count(target)),
                    "DELETE FROM ccheck WHERE tenant = %s", [target])
        if kind == "forget_cohort":
            model = MODELS[self.forget_turn % len(MODELS)]
            self.forget_turn += 1
            return (kind, "unlearn_forget_cohort(%s, %s) (%d rows)" % (model, target, tab.count(target)),
                    "SELECT unlearn_forget_cohort(%s, %s)", [model, target])
        if kind == "move_whole":
            to = self.other_value(tab, target)
            return (kind, "UPDATE moving all of cohort %s (%d rows) to %s" % (target, tab.count(target), to),
                    "UPDATE ccheck SET tenant = %s WHERE tenant = %s", [to, target])
        if kind == "mixed_delete":
            others = [i for i in self.pick_ids(tab, 12) if tab.tenant_of[i] != target]
            return (kind, "DELETE cohort %s (%d rows) and %d other rows" % (target, tab.count(target), len(others)),
                    "DELETE FROM ccheck WHERE tenant = %s OR id = ANY(%s)", [target, others])
        if kind == "merge_whole":
            upd = [i for i in self.pick_ids(tab, 4) if tab.tenant_of[i] != target]
            rows = self.data.rows(self.ids(3), self.other_value(tab, target))
            return (kind, "MERGE deleting cohort %s (%d rows), updating %d rows, inserting 3" %
                    (target, tab.count(target), len(upd)),
                    "MERGE INTO ccheck t USING (SELECT id, NULL::text AS tenant, 'd' AS op FROM ccheck "
                    "WHERE tenant = %s UNION ALL SELECT u, NULL, 'u' FROM unnest(%s::int[]) u "
                    "UNION ALL SELECT s.id, s.tenant, 'i' FROM (" + UNNEST + ") s) s ON t.id = s.id "
                    "WHEN MATCHED AND s.op = 'd' THEN DELETE "
                    "WHEN MATCHED THEN UPDATE SET x2 = t.x2 * 0.5 + 0.25, y = t.y - 1 "
                    "WHEN NOT MATCHED THEN INSERT (id, tenant, x1, x2, x3, x4, x5, x6, y, pos, cls) "
                    "VALUES (s.id, s.tenant, 0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 1.5, true, 'mid')",
                    [target, upd] + columns_of(rows))
        if kind == "savepoint":
            target = self.whole_target(tab, original) or self.other_value(tab, None)
            ids = self.pick_ids(tab, 3, target)
            return (kind, "SAVEPOINT; DELETE cohort %s (%d rows); ROLLBACK TO SAVEPOINT; DELETE %d of its rows" %
                    (target, tab.count(target), len(ids)),
                    "SAVEPOINT s; DELETE FROM ccheck WHERE tenant = %s; ROLLBACK TO SAVEPOINT s; "
                    "DELETE FROM ccheck WHERE id = ANY(%s)", [target, ids])
        if kind == "delete_one":
            i = self.pick_ids(tab, 1)[0]
            return (kind, "DELETE row %d (%s)" % (i, tab.tenant_of[i]), "DELETE FROM ccheck WHERE id = %s", [i])
        if kind == "delete_multi":
            ids = self.pick_ids(tab, int(rng.integers(2, 31)))
            return (kind, "DELETE %d rows" % len(ids), "DELETE FROM ccheck WHERE id = ANY(%s)", [ids])
        if kind == "insert_existing":
            values = sorted(tab.by_tenant)
            rows = []
            for _ in range(int(rng.integers(1, 4))):
                rows += self.data.rows(self.ids(int(rng.integers(1, 9))), str(rng.choice(values)))
            sql, params = self.insert(rows)
            return (kind, "INSERT %d rows into existing cohorts" % len(rows), sql, params)
        if kind == "insert_new":
            value = self.fresh_value()
            rows = self.data.rows(self.ids(int(rng.integers(40, 121))), value)
            if rng.random() < 0.5:
                rows += self.data.rows(self.ids(2), None)
            sql, params = self.insert(rows)
            return (kind, "INSERT %d rows, new cohort value %s" % (len(rows), value), sql, params)
        if kind == "update_features":
            if rng.random() < 0.34:
                t = self.other_value(tab, None)
                return (kind, "UPDATE features of all of cohort %s (%d rows)" % (t, tab.count(t)),
                        "UPDATE ccheck SET x1 = x1 + 0.125, x4 = x4 * 0.75 WHERE tenant = %s", [t])
            ids = self.pick_ids(tab, int(rng.integers(1, 26)))
            return (kind, "UPDATE features of %d rows" % len(ids),
                    "UPDATE ccheck SET x3 = -x3, x5 = x5 + 0.5 * x6 WHERE id = ANY(%s)", [ids])
        if kind == "update_label":
            ids = self.pick_ids(tab, int(rng.integers(1, 16)))
            return (kind, "UPDATE labels of %d rows" % len(ids),
                    "UPDATE ccheck SET pos = NOT pos, y = y + 2, cls = CASE cls WHEN 'lo' THEN 'mid' "
                    "WHEN 'mid' THEN 'hi' ELSE 'lo' END WHERE id = ANY(%s)", [ids])
        if kind == "update_move":
            src = self.other_value(tab, None)
            ids = self.pick_ids(tab, int(rng.integers(1, 1 + max(1, tab.count(src) // 2))), src)
            r = rng.random()
            to = None if r < 0.2 else self.fresh_value() if r < 0.4 else self.other_value(tab, src)
            return (kind, "UPDATE moving %d rows of %s to %s" % (len(ids), src, to),
                    "UPDATE ccheck SET tenant = %s WHERE id = ANY(%s)", [to, ids])
        if kind == "upsert":
            old = self.pick_ids(tab, 4)
            rows = []
            for i in old:
                t = tab.tenant_of[i] if rng.random() < 0.5 else self.other_value(tab, None)
                rows += self.data.rows([i], t)
            rows += self.data.rows(self.ids(3), self.other_value(tab, None))
            return (kind, "INSERT ... ON CONFLICT DO UPDATE (4 existing rows, 3 new)",
                    "INSERT INTO ccheck (" + COLUMNS + ") " + UNNEST +
                    " ON CONFLICT (id) DO UPDATE SET x1 = EXCLUDED.x1, x2 = EXCLUDED.x2, "
                    "y = EXCLUDED.y, cls = EXCLUDED.cls, tenant = EXCLUDED.tenant", columns_of(rows))
        if kind == "merge":
            dels = self.pick_ids(tab, 3)
            upds = [i for i in self.pick_ids(tab, 5) if i not in dels]
            rows = self.data.rows(self.ids(4), self.other_value(tab, None))
            return (kind, "MERGE deleting %d, updating %d, inserting 4 rows" % (len(dels), len(upds)),
                    "MERGE INTO ccheck t USING (SELECT d AS id, 'd' AS op, NULL::text AS tenant, "
                    "NULL::float8 AS x1, NULL::float8 AS y FROM unnest(%s::int[]) d "
                    "UNION ALL SELECT u, 'u', NULL, NULL, NULL FROM unnest(%s::int[]) u "
                    "UNION ALL SELECT s.id, 'i', s.tenant, s.x1, s.y FROM (" + UNNEST + ") s) s "
                    "ON t.id = s.id "
                    "WHEN MATCHED AND s.op = 'd' THEN DELETE "
                    "WHEN MATCHED THEN UPDATE SET x6 = t.x6 + 1, pos = NOT t.pos "
                    "WHEN NOT MATCHED THEN INSERT (id, tenant, x1, x2, x3, x4, x5, x6, y, pos, cls) "
                    "VALUES (s.id, s.tenant, s.x1, 0.5, -0.5, 0.25, 0, 1, s.y, false, 'hi')",
                    [dels, upds] + columns_of(rows))
        raise ValueError(kind)


# --- the model checks -------------------------------------------------------

def unpack(buf, K, p, labels, columns):
    """COHORT_DOUBLES(K, p) = K (p(p+1)/2 + p + 3) + 1 doubles: K packed H,
    K g, K x (C, M, W), N; then, in builds that keep them, n_c (a
    classifier's rows per label) and S_c (a 'standardize' model's column
    sums, 2 per column).  Returns (h, g, sums, N, n_c or None), or None for
    a buffer of another size."""
    v = np.frombuffer(bytes(buf), dtype="<f8")
    packed = p * (p + 1) // 2
    base = K * (packed + p + 3) + 1
    if len(v) == base:
        label_rows = None
    elif len(v) == base + labels + columns:
        label_rows = v[base:base + labels] if labels else None
    else:
        return None
    h = v[:K * packed].reshape(K, packed)
    g = v[K * packed:K * (packed + p)].reshape(K, p)
    sums = v[K * (packed + p):K * (packed + p + 3)].reshape(K, 3)
    return h, g, sums, v[base - 1], label_rows


def pack_lower(a):
    """column-major packed lower triangle (LAPACK 'L')"""
    p = a.shape[0]
    return np.concatenate([a[j:, j] for j in range(p)])


def sigmoid(z):
    return np.where(z >= 0, 1 / (1 + np.exp(-np.abs(z))), np.exp(-np.abs(z)) / (1 + np.exp(-np.abs(z))))


class Model:
    def __init__(self, name):
        self.name = name
        self.kept = None
        self.kept_rows = {}
        self.anchor = None
        self.retrains = None


def read_model(cur, name):
    cur.execute("SELECT loss, rows, coef, reg, scale, intercept, intercept_scaling, centre, spread, "
                "classes, state, retrains, spent, budget, preprocess FROM unlearn.models WHERE model = %s",
                (name,))
    r = cur.fetchone()
    keys = ("loss", "rows", "coef", "reg", "scale", "intercept", "a", "centre", "spread", "classes",
            "state", "retrains", "spent", "budget", "preprocess")
    m = dict(zip(keys, r))
    cur.execute("SELECT noise, anchor FROM unlearn.model_state WHERE model = %s", (name,))
    noise, anchor = cur.fetchone()
    m["noise"] = np.frombuffer(bytes(noise), dtype="<f8")
    m["anchor_bytes"] = bytes(anchor)
    m["anchor"] = np.frombuffer(bytes(anchor), dtype="<f8")
    cur.execute("SELECT cohort, rows, stats FROM unlearn.cohorts WHERE model = %s ORDER BY cohort", (name,))
    m["cohorts"] = cur.fetchall()
    return m


def mapped(tab, m):
    z = tab.x.copy()
    if m["centre"] is not None:
        z = (z - np.asarray(m["centre"])) / np.asarray(m["spread"])
    if m["intercept"]:
        z = np.hstack([z, np.full((z.shape[0], 1), m["a"])])
    norms = np.sqrt((z * z).sum(1))
    return z / np.maximum(m["scale"], norms)[:, None]


def targets(tab, m, K):
    """per class the target of every row: the label (least squares) or +-1"""
    if m["loss"] == "squared":
        return tab.y[None, :]
    if K == 1:
        pos = str(m["classes"][-1])
        return np.array([[1.0 if str(v).lower() == pos else -1.0 for v in tab.pos]])
    return np.array([[1.0 if v == c else -1.0 for v in tab.cls] for c in m["classes"]])


def derivatives(loss, z, t):
    if loss == "squared":
        return 2 * (z - t), np.full_like(z, 2.0)
    s = sigmoid(t * z)
    return (s - 1) * t, s * (1 - s)


def check_model(cur, model, tab, before, after_ledger, step, what):
    name = model.name
    tag = "%s, statement %d (%s)" % (name, step, what)
    m = read_model(cur, name)
    cur.execute("SELECT residual, spent, budget, certified FROM unlearn_verify(%s)", (name,))
    residual, spent, budget, certified = cur.fetchone()
    counts["checks"] += 1
    if residual is None or not residual <= spent:
        fail("%s: verify residual %r above spent %r" % (tag, residual, spent), True)
    if name in LOGISTIC and not spent <= budget:
        fail("%s: spent %r above budget %r" % (tag, spent, budget))
    if not certified:
        fail("%s: not certified (residual %r, spent %r, budget %r)" % (tag, residual, spent, budget))
    n = len(tab.ids)
    if m["rows"] != n:
        fail("%s: model rows %d, table rows %d" % (tag, m["rows"], n))
    if m["state"] != "ready":
        fail("%s: state %s" % (tag, m["state"]))
        return
    z = mapped(tab, m)
    p = z.shape[1]
    coef = np.asarray(m["coef"], dtype=float).reshape(-1, p)
    K = coef.shape[0]
    t = targets(tab, m, K)
    if m["loss"] == "squared":
        b = m["noise"] if len(m["noise"]) else np.zeros(p)
        w = np.linalg.solve(2 * z.T @ z + m["reg"] * np.eye(p), 2 * z.T @ tab.y - b)
        r = rel(coef, w)
        worst["coef"] = max(worst["coef"], r)
        if not r <= TOL:
            fail("%s: coef against the NumPy refit: relative %.3e" % (tag, r))
        anchor = np.zeros((K, p))
    else:
        anchor = m["anchor"].reshape(K, p)

    # the kept cohort values (unlearn_cohorts lists the same)
    kept = {c: rows for c, rows, _ in m["cohorts"]}
    cur.execute("SELECT cohort, rows FROM unlearn_cohorts(%s)", (name,))
    listed = dict(cur.fetchall())
    if listed != kept:
        fail("%s: unlearn_cohorts lists %s, unlearn.cohorts has %s" % (tag, listed, kept))
    rebuilt = model.anchor is None or m["retrains"] != model.retrains or \
        (m["loss"] != "squared" and m["anchor_bytes"] != model.anchor)   # a training, or a moved anchor
    if rebuilt:
        counts["rebuilds"] += 1
        if set(kept) != set(tab.by_tenant):
            fail("%s: rebuilt statistics keep %s, the table has %s" %
                 (tag, sorted(kept), sorted(tab.by_tenant)))
    elif model.kept is not None and not set(kept) <= set(model.kept):
        fail("%s: cohorts %s appeared without a rebuild" % (tag, sorted(set(kept) - set(model.kept))))

    # the statement's 'cohort' lines against the kept cohorts it emptied
    if before is not None and model.kept is not None:
        lo = hi = 0
        for c, rows in model.kept_rows.items():
            if any(tab.tenant_of.get(i) == c for i in before.by_tenant.get(c, [])):
                continue        # some of its rows are still in it
            hi += rows
            if tab.count(c) == 0:
                lo += rows      # emptied, nothing added: erased whole unless it fell back
        got = sum(r for op, r in after_ledger.get(name, []) if op == "cohort")
        if hi == 0 and got != 0:
            fail("%s: 'cohort' ledger lines remove %d rows, no kept cohort was emptied" % (tag, got))
        elif got != 0 and not lo <= got <= hi:
            fail("%s: 'cohort' ledger lines remove %d rows, the emptied cohorts had %d to %d" %
                 (tag, got, lo, hi))
        elif got == 0 and lo > 0:
            counts["fallbacks"] += 1
            print("     %s: %d rows of emptied cohorts went row by row" % (tag, lo))

    # each cohort's statistics against the table's rows
    zs = [z @ anchor[k] for k in range(K)]
    tenant = np.array([v if v is not None else "" for v in tab.tenant], dtype=object)
    for c, rows, stats in m["cohorts"]:
        counts["cohorts checked"] += 1
        ctag = "%s, cohort %s" % (tag, c)
        mask = tenant == c
        if not mask.any():
            fail("%s: kept with %d rows, the table has none" % (ctag, rows))
            continue
        if rows != int(mask.sum()):
            fail("%s: %d rows stored, %d in the table" % (ctag, rows, int(mask.sum())))
            continue
        labels = 0 if m["loss"] == "squared" else len(m["classes"])
        columns = 2 * D if m["preprocess"] == "standardize" else 0
        parts = unpack(stats, K, p, labels, columns)
        if parts is None:
            fail("%s: stats of %d bytes" % (ctag, len(stats)))
            continue
        h, g, sums, updates, label_rows = parts
        if label_rows is not None:
            counts["label rows checked"] = counts.get("label rows checked", 0) + 1
            values = tab.pos if K == 1 and labels == 2 else tab.cls
            want = [sum(1 for v, inside in zip(values, mask) if inside and str(v).lower() == str(label))
                    for label in m["classes"]]
            if list(label_rows) != want:
                fail("%s: rows per label %s, the table's %s" % (ctag, list(label_rows), want))
        zc = z[mask]
        for k in range(K):
            d1, d2 = derivatives(m["loss"], zs[k][mask], t[k][mask])
            h_ref = pack_lower((zc * d2[:, None]).T @ zc)
            g_ref = zc.T @ d1
            c_ref = d2.sum()
            for key, got, want in (("H", h[k], h_ref), ("g", g[k], g_ref), ("C", sums[k, 0], c_ref)):
                r = rel(got, want)
                worst[key] = max(worst[key], r)
                if not r <= TOL:
                    fail("%s, class %d: %s_c relative difference %.3e" % (ctag, k, key, r))
            if not (sums[k, 1] >= np.abs(d1).sum() * (1 - 1e-12) and sums[k, 2] >= c_ref * (1 - 1e-12)):
                fail("%s, class %d: update sums M %r, W %r below the rows' %r, %r" %
                     (ctag, k, sums[k, 1], sums[k, 2], np.abs(d1).sum(), c_ref))
        if not updates >= rows:
            fail("%s: %r updates for %d rows" % (ctag, updates, rows))

    model.kept = sorted(kept)
    model.kept_rows = kept
    model.anchor = m["anchor_bytes"]
    model.retrains = m["retrains"]


def snapshot(cur):
    """the stored models, bit for bit (float8 output is exact, bytea hex)"""
    out = []
    for q in ("SELECT m::text FROM unlearn.models m WHERE model LIKE 'cc\\_%%' ORDER BY model",
              "SELECT s::text FROM unlearn.model_state s WHERE model LIKE 'cc\\_%%' ORDER BY model",
              "SELECT c::text FROM unlearn.cohorts c WHERE model LIKE 'cc\\_%%' ORDER BY model, cohort",
              "SELECT max(id)::text FROM unlearn.ledger",
              "SELECT count(*)::text FROM ccheck"):
        cur.execute(q)
        out.append([r[0] for r in cur.fetchall()])
    return out


def ledger_since(cur, last):
    cur.execute("SELECT id, model, operation, rows_removed FROM unlearn.ledger WHERE id > %s ORDER BY id",
                (last,))
    lines = {}
    top = last
    for i, model, op, removed in cur.fetchall():
        lines.setdefault(model, []).append((op, removed))
        top = max(top, i)
    return lines, top


# --- the run ----------------------------------------------------------------

WHOLE = ("delete_cohort", "forget_cohort", "move_whole", "mixed_delete", "merge_whole")


def check_all(chk, models, before, lines, step, what):
    """the checks of every model, on one snapshot: the table and the catalog
    as of the same moment, whatever the maintenance worker does meanwhile"""
    cur = chk.cursor()
    tab = Table(cur)
    for model in models:
        check_model(cur, model, tab, before, lines, step, what)
    chk.commit()
    return tab


def rollback_step(conn, chk, work, step, inside, original):
    """BEGIN; statements; ROLLBACK: the stored models stay bit for bit"""
    cur = conn.cursor()
    ccur = chk.cursor()
    for attempt in range(3):
        before = snapshot(ccur)
        chk.commit()
        cur.execute("SELECT coef::text FROM unlearn.models WHERE model LIKE 'cc\\_%%' ORDER BY model")
        coef_before = cur.fetchall()
        descs = []
        changed = True
        try:
            for k in inside:
                kind, what, sql, params = work.make(k, Table(cur), original)
                if kind in WHOLE:
                    work.erased_values.pop()        # not erased after all
                cur.execute(sql, params)
                descs.append(what)
            cur.execute("SELECT coef::text FROM unlearn.models WHERE model LIKE 'cc\\_%%' ORDER BY model")
            changed = cur.fetchall() != coef_before
        except psycopg2.Error as e:
            fail("statement %d: BEGIN; %s; ROLLBACK: %s" % (step, "; ".join(descs), str(e).strip()))
        conn.rollback()
        after = snapshot(ccur)
        chk.commit()
        what = "BEGIN; %s; ROLLBACK" % "; ".join(descs)
        if after != before and after[3] != before[3]:
            # a ledger line of another transaction (the maintenance worker): again
            print("     statement %d: another transaction changed a model meanwhile; again" % step)
            continue
        break
    same = after == before
    print("%s %3d %s: stored models %s" % ("ok  " if same and changed else "FAIL", step, what,
                                          "bit for bit unchanged" if same else "CHANGED"))
    if not same:
        fail("statement %d (%s): the stored models changed" % (step, what))
    if not changed:
        fail("statement %d (%s): no model changed inside the transaction" % (step, what))
    return what


def train(cur, name, label, loss, sigma):
    cur.execute("SELECT model FROM unlearn_train(%s, 'ccheck', %s, %s, "
                "loss => %s, sigma => %s, options => '{\"preprocess\": \"none\"}', cohort => 'tenant')",
                (name, label, FEATURES, loss, sigma))
    cur.execute("SELECT model, rows, budget, spent, cohorts FROM unlearn.status WHERE model = %s", (name,))
    r = cur.fetchone()
    print("trained %s (%s, sigma %g): %d rows, budget %.6g, spent %.6g, %d cohorts" %
          (name, loss, sigma, r[1], r[2], r[3], r[4]))


def run(conn, chk):
    cur = conn.cursor()
    cur.execute("CREATE EXTENSION unlearn")
    rng = np.random.default_rng(SEED)
    data = Data(rng)
    cur.execute("CREATE TABLE ccheck (id int PRIMARY KEY, tenant text, " +
                ", ".join("%s float8" % f for f in FEATURES) + ", y float8, pos boolean, cls text)")
    rows = []
    next_id = 1
    original = ["tenant-%02d" % (i + 1) for i in range(len(SIZES))]
    for name, size in zip(original, SIZES):
        rows += data.rows(range(next_id, next_id + size), name)
        next_id += size
    rows += data.rows(range(next_id, next_id + NO_TENANT), None)
    next_id += NO_TENANT
    order = rng.permutation(len(rows))          # the tenants interleaved in the heap
    execute_values(cur, "INSERT INTO ccheck (" + COLUMNS + ") VALUES %s", [rows[i] for i in order])
    conn.commit()
    train(cur, "cc_ls", "y", "squared", 0.0)
    train(cur, "cc_lg", "pos", "logistic", SIGMA_LG)
    train(cur, "cc_mc", "cls", "logistic", SIGMA_MC)
    cur.execute("SELECT max(id) FROM unlearn.ledger")
    first_line = last_line = cur.fetchone()[0]
    conn.commit()

    models = [Model(n) for n in MODELS]
    tab = check_all(chk, models, None, {}, 0, "after training")

    kinds = (["delete_cohort"] * 5 + ["forget_cohort"] * 3 + ["move_whole"] * 2 + ["mixed_delete"] * 2 +
             ["merge_whole"] * 1 + ["delete_one"] * 5 + ["savepoint"] * 1 + ["delete_multi"] * 6 + ["insert_existing"] * 6 +
             ["insert_new"] * 7 + ["update_features"] * 5 + ["update_label"] * 2 + ["update_move"] * 6 +
             ["upsert"] * 3 + ["merge"] * 2 + ["rollback"] * 4)
    kinds = [kinds[i] for i in rng.permutation(len(kinds))]
    work = Workload(rng, data, next_id)
    inner = ["delete_cohort", "forget_cohort", "mixed_delete", "upsert", "merge", "update_move"]
    whole_statements = 0
    for step, kind in enumerate(kinds, 1):
        if kind == "rollback":
            counts["rollbacks"] += 1
            inside = [inner[(counts["rollbacks"] - 1) % len(inner)], "insert_existing"]
            what = rollback_step(conn, chk, work, step, inside, original)
            tab = check_all(chk, models, tab, {}, step, what)
            continue
        kind, what, sql, params = work.make(kind, tab, original)
        whole_statements += kind in WHOLE
        started = time.time()
        try:
            cur.execute(sql, params)
            if kind == "forget_cohort":
                deleted = cur.fetchone()[0]
                if deleted != tab.count(params[1]):
                    fail("statement %d (%s): deleted %d rows" % (step, what, deleted))
            conn.commit()
        except psycopg2.Error as e:
            conn.rollback()
            fail("statement %d (%s): %s" % (step, what, str(e).strip()))
            continue
        took = time.time() - started
        lines, last_line = ledger_since(cur, last_line)
        conn.commit()
        n_failures = len(failures)
        tab = check_all(chk, models, tab, lines, step, what)
        ops = ", ".join("%s %s" % (m[3:], "+".join(sorted(set(op for op, _ in lines.get(m, [])))) or "-")
                        for m in MODELS)
        print("%s %3d %s [%s] %.0f ms" % ("ok  " if len(failures) == n_failures else "FAIL", step, what,
                                          ops, 1000 * took))

    # the whole-cohort erasures
    cur.execute("SELECT model, count(*), sum(rows_removed), count(*) FILTER (WHERE reanchored) "
                "FROM unlearn.ledger WHERE id > %s AND operation = 'cohort' GROUP BY model ORDER BY model",
                (first_line,))
    erasures = {r[0]: r[1:] for r in cur.fetchall()}
    cur.execute("SELECT model, operation, count(*) FROM unlearn.ledger WHERE id > %s "
                "GROUP BY 1, 2 ORDER BY 1, 2", (first_line,))
    ledger = cur.fetchall()
    conn.commit()
    print("ledger lines since training: %s" % ", ".join("%s %s %d" % r for r in ledger))
    total = 0
    for name in MODELS:
        lines, rows_removed, measured = erasures.get(name, (0, 0, 0))
        total += lines
        print("%s: %d whole-cohort erasures ('cohort' ledger lines, %d rows; %d certified by the bound, "
              "%d by measuring the residual)" % (name, lines, rows_removed or 0, lines - measured, measured))
        if lines == 0:
            fail("%s: no whole-cohort erasure ('cohort' ledger line): the path was not exercised" % name)
    counts["rows at the end"] = len(tab.ids)
    return len(kinds), whole_statements, total


def main():
    started = time.time()
    admin = None
    for attempt in range(5):
        try:
            admin = psycopg2.connect("")
            break
        except psycopg2.OperationalError:
            if attempt == 4:
                raise
            time.sleep(2)
    admin.autocommit = True
    acur = admin.cursor()
    acur.execute("DROP DATABASE IF EXISTS %s WITH (FORCE)" % DB)
    acur.execute("CREATE DATABASE %s" % DB)
    try:
        conn = psycopg2.connect(dbname=DB)
        chk = psycopg2.connect(dbname=DB)
        chk.set_session(isolation_level="REPEATABLE READ", readonly=True)
        for c in (conn, chk):
            c.cursor().execute("SET client_min_messages = warning")
            c.commit()
        try:
            statements, whole, erasures = run(conn, chk)
        finally:
            conn.close()
            chk.close()
    finally:
        if not KEEP:
            acur.execute("DROP DATABASE IF EXISTS %s WITH (FORCE)" % DB)
        admin.close()
    print("largest relative differences: coef %.2e, H_c %.2e, g_c %.2e, C_c %.2e" %
          (worst["coef"], worst["H"], worst["g"], worst["C"]))
    print("check_cohorts: %d statements (%d removing a cohort whole, %d rolled back), %d model checks, "
          "%d cohort statistics compared, %d rebuilds, %d whole-cohort erasures, %d fell back row by row, "
          "%d rows at the end, %.1f s" % (statements, whole, counts["rollbacks"], counts["checks"],
                                          counts["cohorts checked"], counts["rebuilds"], erasures,
                                          counts["fallbacks"], counts.get("rows at the end", 0),
                                          time.time() - started))
    if counts.get("label rows checked"):
        print("check_cohorts: rows per label (n_c) compared in %d cohort statistics" % counts["label rows checked"])
    if critical:
        print("check_cohorts: CRITICAL: %d residuals above spent" % len(critical))
    print("check_cohorts: %s" % ("FAIL (%d)" % len(failures) if failures else "ok"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
