#!/usr/bin/python3
"""The statistics of unlearn_audit against an independent computation, to
1e-9: unlearn._audit_statistics(members, non_members), the function the
audit reports its figures with, is compared with NumPy and SciPy on the
same scores.

  * AUC: the Mann-Whitney statistic, P(member > non-member) + P(tie) / 2,
    computed here from scipy.stats.rankdata;
  * TPR at FPR 0.1% and 1%: the threshold is the (floor(FPR * n) + 1)-th
    largest non-member score and a member counts when strictly above it;
    NULL when floor(FPR * n) = 0 (no false positive allowed);
  * the 95% Clopper-Pearson interval of each TPR: scipy.stats.beta.ppf
    (0.025 at (k, n - k + 1), 0.975 at (k + 1, n - k); 0 and 1 at the ends).

Cases: Gaussian scores with a shift (1,000 and 10,000 non-members), scores
with many ties (rounded to one decimal), members all above and all below,
one member, and more members than non-members.  Bad input (a null, a
two-dimensional array) is refused.  The server is the libpq environment's.
"""

import math
import sys

import numpy as np
import psycopg2
from scipy import stats

TOL = 1e-9
failures = 0


def check(what, ok, detail=""):
    global failures
    print("%s %s%s" % ("ok  " if ok else "FAIL", what, detail))
    if not ok:
        failures += 1


def reference(members, non_members):
    members = np.asarray(members, dtype=float)
    neg = np.sort(np.asarray(non_members, dtype=float))
    ranks = stats.rankdata(np.concatenate([members, neg]))
    n1, n0 = len(members), len(neg)
    auc = (ranks[:n1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0)
    out = [auc]
    for fpr in (0.001, 0.01):
        allowed = int(math.floor(fpr * n0))
        if allowed < 1:
            out += [None, None, None]       # no false positive allowed: unresolved
            continue
        threshold = -np.inf if allowed >= n0 else neg[n0 - 1 - allowed]
        k = int(np.sum(members > threshold))
        low = 0.0 if k == 0 else stats.beta.ppf(0.025, k, n1 - k + 1)
        high = 1.0 if k == n1 else stats.beta.ppf(0.975, k + 1, n1 - k)
        out += [k / n1, low, high]
    return out


def compare(cur, name, members, non_members):
    cur.execute("SELECT * FROM unlearn._audit_statistics(%s::float8[], %s::float8[])",
                (list(map(float, members)), list(map(float, non_members))))
    got = cur.fetchone()
    want = reference(members, non_members)
    if any((g is None) != (w is None) for g, w in zip(got, want)):
        check("%s: the same FPRs are resolved" % name, False, ": %s against %s" % (got, want))
        return
    worst = max(abs(g - w) for g, w in zip(got, want) if g is not None)
    check("%s: AUC, TPR and intervals equal NumPy/SciPy's" % name, worst <= TOL,
          ": largest difference %.3e (AUC %.6f, TPR@1%% %.6f)" % (worst, got[0], got[4]))


def main():
    conn = psycopg2.connect("")
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("CREATE EXTENSION IF NOT EXISTS unlearn")
    rng = np.random.default_rng(20261126)
    compare(cur, "shifted Gaussians, 1,000 non-members",
            rng.normal(1.0, 1.0, 500), rng.normal(0.0, 1.0, 1000))
    compare(cur, "shifted Gaussians, 10,000 non-members",
            rng.normal(0.5, 1.0, 3000), rng.normal(0.0, 1.0, 10000))
    compare(cur, "rounded scores (ties)",
            np.round(rng.normal(0.3, 1.0, 700), 1), np.round(rng.normal(0.0, 1.0, 900), 1))
    compare(cur, "members all above", rng.uniform(10, 11, 50), rng.uniform(0, 1, 400))
    compare(cur, "members all below", rng.uniform(-11, -10, 50), rng.uniform(0, 1, 400))
    compare(cur, "one member", [0.7], rng.normal(0.0, 1.0, 300))
    compare(cur, "more members than non-members",
            rng.normal(0.2, 1.0, 2000), rng.normal(0.0, 1.0, 150))
    for label, sql in (("a null score", "SELECT unlearn._audit_statistics('{1,NULL}', '{0}')"),
                       ("a two-dimensional array", "SELECT unlearn._audit_statistics('{{1}}', '{0}')")):
        try:
            cur.execute(sql)
            check("%s is refused" % label, False, ": no error")
        except psycopg2.Error as e:
            check("%s is refused (%s)" % (label, e.pgcode), e.pgcode in ("22004", "2202E"))
    conn.close()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
