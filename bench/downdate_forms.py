#!/usr/bin/python3
"""Rounding error of three forms of the hyperbolic Cholesky down-date.

src/cholesky_modify.c runs the "mixed" down-date of Bojanczyk et al. in a
scaled form (three flops per element instead of four).  This script runs
the three forms side by side in float64 on the same problems, the removed
rows chosen so that the down-date is hard, and prints their errors against
numpy's Cholesky factor of the down-dated matrix:

  backward  ||L L' - H~||_F / ||H~||_F   (what the solves see)
  forward   ||L - chol(H~)||_F / ||chol(H~)||_F

Needs no server: it checks the algorithm, not the extension (test 04 checks
the extension against a refit).  Usage: bench/downdate_forms.py [--seed N]
"""
import argparse

import numpy as np


def downdate(lower, z, form):
    """L L' - Z' Z for the rows of z, column by column (rank-one order)."""
    lf = lower.copy()
    z = z.copy()
    p, k = lf.shape[0], z.shape[0]
    for j in range(p):
        first = root = lf[j, j]
        square = first * first
        u = lf[j + 1:, j].copy()
        for r in range(k):
            zj = z[r, j]
            zi = z[r, j + 1:]
            if form == "scaled":
                next_square = square - zj * zj
                next_root = np.sqrt(next_square)
                a = zj / first
                b = (zj / root) * (first / next_root)
                c = next_root / root
                u = u - a * zi
                z[r, j + 1:] = c * zi - b * u
                square, root = next_square, next_root
            else:
                next_root = np.sqrt((root - zj) * (root + zj))
                c, s = next_root / root, zj / root
                t = (u - s * zi) / c
                if form == "mixed":
                    z[r, j + 1:] = c * zi - s * t
                else:                       # textbook: z' from the old l
                    z[r, j + 1:] = (zi - s * u) / c
                u = t
                root = next_root
        lf[j + 1:, j] = u * (first / root) if form == "scaled" else u
        lf[j, j] = root
    return np.tril(lf)


def problems(rng):
    # removed rows dominate a few directions (a large down-date)
    for spike in (1.0, 1e2, 1e4):
        x = rng.standard_normal((400, 120))
        x[:60, :5] *= spike
        yield f"removed rows x{spike:g} in 5 columns", x, 60, 1e-8
    # the remaining rows are nearly rank-deficient (an ill-conditioned H~)
    for scale in (1e-2, 1e-4, 1e-6):
        x = rng.standard_normal((300, 80))
        x[40:, 0] *= scale
        x[40:, 1] = x[40:, 2] + scale * x[40:, 1]
        yield f"remaining rows near rank {79} ({scale:g})", x, 40, 1e-9


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    forms = ("mixed", "scaled", "textbook")
    print(f"{'problem':<36} {'cond(H~)':>9}  " +
          "  ".join(f"{f + ' bwd':>13} {f + ' fwd':>13}" for f in forms))
    worst = {f: 0.0 for f in forms}
    for name, x, k, lam in problems(rng):
        p = x.shape[1]
        h = x.T @ x + lam * np.eye(p)
        ht = h - x[:k].T @ x[:k]
        exact = np.linalg.cholesky(ht)
        start = np.linalg.cholesky(h)
        cells = []
        for f in forms:
            lf = downdate(start, x[:k], f)
            bwd = np.linalg.norm(lf @ lf.T - ht) / np.linalg.norm(ht)
            fwd = np.linalg.norm(lf - exact) / np.linalg.norm(exact)
            worst[f] = max(worst[f], bwd)
            cells.append(f"{bwd:13.1e} {fwd:13.1e}")
        print(f"{name:<36} {np.linalg.cond(ht):9.1e}  " + "  ".join(cells))
    print()
    print("largest backward error: " +
          ", ".join(f"{f} {worst[f]:.1e}" for f in forms) +
          f"; scaled / mixed = {worst['scaled'] / worst['mixed']:.2f}")


if __name__ == "__main__":
    main()
