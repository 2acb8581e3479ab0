#!/usr/bin/python3
"""Noisy-GD's Renyi accountant against an independent NumPy computation.

The formulas (mechanisms.md section 1, average form, 1-Lipschitz losses):

    eps0(a)    = 4 a / (lambda sigma^2 n^2)
    eps_dd(a)  = exp(-lambda eta K / a) S^2 eps0(a)
    eps        = min over the orders a of
                 r(a) + ln((a - 1) / a) - (ln delta + ln a) / (a - 1)   (Balle et al.)

on the orders 1.25..10 by 0.25, 11..64, 72..256 by 8.

  1. unlearn._renyi_epsilon on a grid of (lambda, sigma, n, S, K, delta)
     equals this to 1e-9 (relative), and picks the same order;
  2. unlearn._renyi_steps(S) is the least K whose eps_dd is within epsilon
     (K - 1 is not), or NULL when no K up to 1e8 is;
  3. unlearn._renyi_noise is the least sigma (to 1e-6) whose training DP
     for one row is within epsilon;
  4. a replay: a noisy_gd model on sklearn's breast-cancer rows (d = 30)
     goes through 50 mixed statements (DELETE, INSERT, UPDATE, of 1 to 8
     rows).  After each, the ledger's epsilon for the statement, the steps
     it ran (unlearn_privacy), the fewest rows and the model's epsilons are
     recomputed here from the statement's row counts alone: the steps are
     K(S) for S = max(removed, added) over the fewest rows (or a
     training, when K(S) reaches the training's steps), the statement's
     epsilon is eps_dd at those steps, and the reported deletion epsilon is
     never below the largest of them since the training, nor above the
     target.
"""

import csv
import math
import sys

import numpy as np
import psycopg2

SK = "/usr/lib/python3/dist-packages/sklearn/datasets/data"
ORDERS = ([0.25 * i for i in range(5, 41)] + list(range(11, 65)) + list(range(72, 257, 8)))
failures = 0


def check(what, ok, detail=""):
    global failures
    print("%s %s%s" % ("ok  " if ok else "FAIL", what, detail))
    if not ok:
        failures += 1


def epsilon(lam, eta, sigma, n, s, k, delta):
    a = np.array(ORDERS, dtype=float)
    r = np.exp(-lam * eta * k / a) * s * s * 4 * a / (lam * sigma ** 2 * n ** 2)
    e = r + np.log((a - 1) / a) - (np.log(delta) + np.log(a)) / (a - 1)
    i = int(np.argmin(e))
    return max(float(e[i]), 0.0), float(a[i])


def least_steps(lam, eta, sigma, n, s, eps, delta):
    if epsilon(lam, eta, sigma, n, s, 0, delta)[0] <= eps:
        return 0
    lo, hi = 0, 1
    while epsilon(lam, eta, sigma, n, s, hi, delta)[0] > eps:
        hi *= 2
        if hi > 10 ** 8:
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if epsilon(lam, eta, sigma, n, s, mid, delta)[0] <= eps:
            hi = mid
        else:
            lo = mid
    return hi


def accountant(cur):
    worst = 0.0
    count = 0
    for lam in (1e-3, 1e-2, 0.1):
        eta = 1 / (0.25 + lam)
        for sigma in (0.003, 0.01, 0.05):
            for n in (569, 12000, 1e6):
                for s in (1, 3, 100):
                    for k in (0, 10, 1000, 30000):
                        for delta in (1e-5, 1.0 / 12000):
                            cur.execute("SELECT epsilon, alpha FROM unlearn._renyi_epsilon(%s, %s, %s, %s, %s, %s, %s)",
                                        (lam, eta, sigma, n, s, k, delta))
                            got, alpha = cur.fetchone()
                            want, want_alpha = epsilon(lam, eta, sigma, n, s, k, delta)
                            rel = abs(got - want) / max(abs(want), 1e-300)
                            worst = max(worst, rel if want > 0 else abs(got))
                            if want > 0 and alpha != want_alpha:
                                worst = max(worst, 1.0)
                            count += 1
    check("_renyi_epsilon equals NumPy on %d points, same order" % count, worst <= 1e-9,
          " (largest relative difference %.2e)" % worst)


def steps(cur):
    bad = []
    count = 0
    for lam in (1e-3, 1e-2):
        eta = 1 / (0.25 + lam)
        for n in (569, 12000):
            cur.execute("SELECT unlearn._renyi_noise(%s, %s, 1, %s)", (lam, n, 1.0 / n))
            sigma = cur.fetchone()[0]
            for s in (1, 2, 3, 10, 100, 1000):
                for eps in (0.5, 1.0, 2.0):
                    cur.execute("SELECT unlearn._renyi_steps(%s, %s, %s, %s, %s, %s, %s)",
                                (lam, eta, sigma, n, s, eps, 1.0 / n))
                    got = cur.fetchone()[0]
                    want = least_steps(lam, eta, sigma, n, s, eps, 1.0 / n)
                    count += 1
                    if got != want:
                        bad.append((lam, n, s, eps, got, want))
    check("_renyi_steps is the least K on %d cases" % count, not bad, " %s" % bad[:3] if bad else "")
    cur.execute("SELECT unlearn._renyi_steps(0.01, 3.8, 0.01, 12000, 10, 1e-3, 1e-9)")
    check("_renyi_steps is NULL where no K reaches epsilon", cur.fetchone()[0] is None)


def noise(cur):
    bad = []
    for lam in (1e-3, 1e-2, 0.1):
        for n in (100, 12000, 1e6):
            for eps in (0.5, 1, 4):
                delta = 1e-5
                cur.execute("SELECT unlearn._renyi_noise(%s, %s, %s, %s)", (lam, n, eps, delta))
                sigma = cur.fetchone()[0]
                ok = (epsilon(lam, 1, sigma, n, 1, 0, delta)[0] <= eps * (1 + 1e-12) and
                      epsilon(lam, 1, sigma * (1 - 1e-6), n, 1, 0, delta)[0] > eps)
                if not ok:
                    bad.append((lam, n, eps, sigma))
    check("_renyi_noise is the least sigma on 27 cases", not bad, " %s" % bad[:3] if bad else "")


def replay(conn, cur):
    with open(SK + "/breast_cancer.csv") as f:
        rows = list(csv.reader(f))[1:]
    a = np.array([[float(v) for v in r] for r in rows])
    x, y = a[:, :30], a[:, 30].astype(int)
    x = x / np.abs(x).max(axis=0)       # a declared map: nothing computed from the rows
    cur.execute("DROP TABLE IF EXISTS rn_cancer")
    cur.execute("CREATE TABLE rn_cancer (id int GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, "
                "benign boolean, x float8[])")
    for i in range(len(y)):
        cur.execute("INSERT INTO rn_cancer (id, benign, x) VALUES (%s, %s, %s)",
                    (i + 1, bool(y[i]), [float(v) for v in x[i]]))
    cur.execute("ALTER TABLE rn_cancer ALTER id RESTART WITH 10000")
    cur.execute("SELECT count(*) FROM unlearn_train('rn', 'rn_cancer', 'benign', '{x}', lambda => 0.01, "
                "epsilon => 1, delta => 1e-5, mechanism => 'noisy_gd', replace => true)")
    conn.commit()
    cur.execute("SELECT noise, step_size, training_steps, steps, fewest_rows FROM unlearn_privacy('rn')")
    sigma, eta, k_train, steps_before, fewest = cur.fetchone()
    lam, delta, target = 0.01, 1e-5, 1.0
    rng = np.random.default_rng(7)
    worst_since = 0.0
    problems = []
    changes = trainings = runs = 0
    cur.execute("SELECT max(id) FROM unlearn.ledger WHERE model = 'rn'")
    last_id = cur.fetchone()[0]
    for t in range(50):
        kind = ("delete", "insert", "update")[t % 3]
        size = int(rng.integers(1, 9))
        cur.execute("SELECT count(*) FROM rn_cancer")
        n_before = cur.fetchone()[0]
        if kind == "delete":
            cur.execute("DELETE FROM rn_cancer WHERE id IN (SELECT id FROM rn_cancer ORDER BY random() LIMIT %s)",
                        (size,))
        elif kind == "insert":
            picks = rng.integers(0, len(y), size)
            cur.execute("INSERT INTO rn_cancer (benign, x) VALUES " + ", ".join(["(%s, %s)"] * size),
                        [v for i in picks for v in (bool(y[i]), [float(q) for q in x[i]])])
        else:
            cur.execute("UPDATE rn_cancer SET benign = NOT benign WHERE id IN (SELECT id FROM rn_cancer ORDER BY random() LIMIT %s)",
                        (size,))
        conn.commit()
        cur.execute("SELECT rows_removed, rows_added, bound, retrained, id FROM unlearn.ledger "
                    "WHERE model = 'rn' AND id > %s ORDER BY id", (last_id,))
        ledger = cur.fetchall()
        if len(ledger) != 1:
            problems.append((t, "%d ledger lines" % len(ledger)))
        last_id = ledger[-1][4] if ledger else last_id
        cur.execute("SELECT deletion_epsilon, dp_epsilon, steps, fewest_rows FROM unlearn_privacy('rn')")
        dd, dp, steps_after, fewest_after = cur.fetchone()
        cur.execute("SELECT count(*) FROM rn_cancer")
        n_after = cur.fetchone()[0]
        # the statement's ledger line
        n_run = n_before
        for removed, added, bound, retrained, _ in ledger:
            changes += 1
            n_run += added - removed
            if retrained:
                # a training on the rows left: parameters chosen afresh
                fewest = n_run
                steps_before = None
                trainings += 1
                cur.execute("SELECT noise FROM unlearn_privacy('rn')")
                sigma = cur.fetchone()[0]
                continue
            runs += 1
            fewest = min(fewest, n_run)
            s = max(removed, added)
            k = least_steps(lam, eta, sigma, fewest, s, target, delta)
            want_bound = epsilon(lam, eta, sigma, fewest, s, k, delta)[0]
            if k is None or k >= k_train:
                problems.append((t, "no training where K(S) = %s" % k))
            elif abs(bound - want_bound) > 1e-9 * max(1, want_bound):
                problems.append((t, "statement epsilon %.12g, recomputed %.12g" % (bound, want_bound)))
            worst_since = max(worst_since, want_bound)
            if steps_before is not None and steps_after - steps_before != k:
                problems.append((t, "ran %d steps, K(S) = %d" % (steps_after - steps_before, k)))
        steps_before = steps_after
        if n_after != n_run:
            problems.append((t, "rows %d against %d" % (n_after, n_run)))
        if fewest_after != fewest:
            problems.append((t, "fewest rows %d, recomputed %d" % (fewest_after, fewest)))
        if abs(dd - worst_since) > 1e-9 or dd > target + 1e-12:
            problems.append((t, "deletion epsilon %.6g, recomputed %.6g, target %g" % (dd, worst_since, target)))
        if abs(dp - epsilon(lam, eta, sigma, fewest, 1, 0, delta)[0]) > 1e-9:
            problems.append((t, "dp epsilon %.6g" % dp))
    check("replay of 50 statements (%d changes: %d by noisy steps, %d by a training): every epsilon "
          "recomputed" % (changes, runs, trainings), not problems and runs > 0 and trainings > 0,
          " %s" % problems[:3] if problems else "")
    cur.execute("SELECT unlearn_drop('rn')")
    cur.execute("DROP TABLE rn_cancer")
    conn.commit()


def main():
    conn = psycopg2.connect("")
    cur = conn.cursor()
    cur.execute("SET client_min_messages = warning")
    accountant(cur)
    steps(cur)
    noise(cur)
    conn.commit()
    replay(conn, cur)
    conn.close()
    print("check_renyi: %s" % ("FAIL (%d)" % failures if failures else "ok"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
