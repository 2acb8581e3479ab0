"""The sampler of noise 'laplace' against its distribution.

A model trained with noise => 'laplace' draws b in R^n with density
proportional to exp(-||b|| / sigma) (Guo et al., Theorem 3 i), so ||b|| ~
Gamma(shape n, scale sigma).  unlearn._laplace_norms(n, sigma, draws) runs
the extension's sampler (math/laplace_noise.c) draws times and returns the
norms of what it drew.  For n = 1, 2, 31 and 785 (an exponential, the
smallest shapes, breast cancer's p and Fashion-MNIST's p) and two scales,
20,000 norms each, in a database of its own (unlearn_check_laplace):

  1. a one-sample Kolmogorov-Smirnov test against Gamma(n, sigma) does not
     reject at p = 1e-5.  Under a correct sampler the p-value is uniform, so
     each test fails with probability 1e-5 and the eight together with at
     most 8e-5, below 1 in 10,000;
  2. the same test rejects Gamma(n, 1.02 sigma) at p = 1e-5 (1.10 sigma for
     n = 1 and 2, whose norms spread more): the check has the power to see a
     scale that far off.

Exits 1 on any failure.  The server is the libpq environment's.
"""

import sys

import numpy as np
import psycopg2
from scipy import stats

DB = "unlearn_check_laplace"
DRAWS = 20000
ALPHA = 1e-5


def main():
    admin = psycopg2.connect("")
    admin.autocommit = True
    admin.cursor().execute("DROP DATABASE IF EXISTS %s WITH (FORCE)" % DB)
    admin.cursor().execute("CREATE DATABASE %s" % DB)
    try:
        return run()
    finally:
        admin.cursor().execute("DROP DATABASE IF EXISTS %s WITH (FORCE)" % DB)
        admin.close()


def run():
    failures = 0
    conn = psycopg2.connect(dbname=DB)
    cur = conn.cursor()
    cur.execute("CREATE EXTENSION unlearn")
    for n in (1, 2, 31, 785):
        for scale in (0.5, 3.0):
            cur.execute("SELECT unlearn._laplace_norms(%s, %s, %s)", (n, scale, DRAWS))
            norms = np.array(cur.fetchone()[0], dtype=float)
            fit = stats.kstest(norms, stats.gamma(a=n, scale=scale).cdf)
            shift = 1.10 if n <= 2 else 1.02
            off = stats.kstest(norms, stats.gamma(a=n, scale=shift * scale).cdf)
            ok = fit.pvalue > ALPHA and off.pvalue <= ALPHA
            print("%s n = %3d, sigma = %.1f: KS p = %.3g against Gamma(n, sigma), %.3g against a scale %d%% off; "
                  "mean %.4g (expected %.4g)" % ("ok  " if ok else "FAIL", n, scale, fit.pvalue, off.pvalue,
                                                  round(100 * (shift - 1)),
                                                  norms.mean(), n * scale))
            failures += 0 if ok else 1
    conn.rollback()
    conn.close()
    print("check_laplace: %s" % ("FAIL (%d)" % failures if failures else "ok"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
