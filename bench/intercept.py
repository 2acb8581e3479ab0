#!/usr/bin/python3
"""Where the accuracy gap against scikit-learn comes from: the row map.

No server.  In NumPy, unlearn's row map (columns standardised, an
intercept coordinate a, each row divided by max(sqrt(p), ||z||)) and its
objective (sum of logistic losses + (lambda n / 2) ||w||^2, one-vs-rest),
fitted with scipy's L-BFGS at sigma = 0 on the same 3 x 5 stratified folds
as accuracy.py, side by side:

  exact, a=1      exact mean and standard deviation, intercept coordinate 1
  exact, free     the same with the intercept's weight left out of the
                  penalty (what scikit-learn does; not strongly convex, so
                  not certifiable)
  exact, a=2      exact statistics, intercept coordinate 2
  grid 1, a=1     unlearn before 0.8.0: spread on a grid of one step per
                  power of two, centre a multiple of spread / 4
  grid 4, a=2     unlearn from 0.8.0: four spread steps per power of two,
                  intercept coordinate 2
  sk-ovr          StandardScaler + LogisticRegression(multi_class='ovr') at
                  C = 1 / (lambda n p)

Usage: bench/intercept.py [--lam 1e-3]
"""
import argparse
import warnings

import numpy as np
from scipy.optimize import minimize
from sklearn import datasets
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler

warnings.filterwarnings("ignore")
SETS = [("iris", datasets.load_iris), ("wine", datasets.load_wine),
        ("breast cancer", datasets.load_breast_cancer), ("digits", datasets.load_digits)]
# name: (grid steps per power of two or None for exact statistics, intercept coordinate, penalised)
VARIANTS = [("exact, a=1", None, 1.0, True), ("exact, free", None, 1.0, False),
            ("exact, a=2", None, 2.0, True), ("grid 1, a=1", 1, 1.0, True),
            ("grid 4, a=2", 4, 2.0, True)]


def fit(Z, y, reg, penalty):
    def objective(w):
        margin = y * (Z @ w)
        loss = np.logaddexp(0, -margin).sum() + reg / 2 * (penalty * w) @ w
        grad = Z.T @ (-y / (1 + np.exp(margin))) + reg * penalty * w
        return loss, grad
    return minimize(objective, np.zeros(Z.shape[1]), jac=True, method="L-BFGS-B",
                    options={"maxiter": 5000, "gtol": 1e-10}).x


def half_away(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def statistics(X, steps):
    """centre and spread per column: exact (steps None) or on unlearn's grid"""
    mean, sd = X.mean(0), X.std(0)
    if steps is None:
        return mean, np.where(sd == 0, 1.0, sd)
    sd = np.maximum(sd, 2.0 ** -20 * np.maximum(np.abs(mean), 1.0))
    spread = 2.0 ** (half_away(steps * np.log2(sd)) / steps)
    return spread / 4 * half_away(mean / (spread / 4)), spread


def row_map(X, centre, spread, a):
    Z = np.hstack([(X - centre) / spread, np.full((len(X), 1), a)])
    return Z / np.maximum(np.sqrt(Z.shape[1]), np.linalg.norm(Z, axis=1))[:, None]


def accuracy(Ztr, ytr, Zte, yte, reg, penalised):
    classes = np.unique(ytr)
    penalty = np.ones(Ztr.shape[1])
    if not penalised:
        penalty[-1] = 0.0
    if len(classes) == 2:
        w = fit(Ztr, np.where(ytr == classes[1], 1.0, -1.0), reg, penalty)
        pred = np.where(Zte @ w > 0, classes[1], classes[0])
    else:
        W = np.array([fit(Ztr, np.where(ytr == c, 1.0, -1.0), reg, penalty) for c in classes])
        pred = classes[np.argmax(Zte @ W.T, axis=1)]
    return float(np.mean(pred == yte))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lam", type=float, default=1e-3)
    args = ap.parse_args()
    names = [v[0] for v in VARIANTS] + ["sk-ovr"]
    print("lambda %g, sigma 0, 3 x 5-fold held-out accuracy (%%)" % args.lam)
    print("%-14s" % "set" + "".join("%13s" % n for n in names))
    for name, loader in SETS:
        X, y = loader(return_X_y=True)
        acc = {n: [] for n in names}
        for seed in range(3):
            for tr, te in StratifiedKFold(5, shuffle=True, random_state=seed).split(X, y):
                n, d = len(tr), X.shape[1]
                reg = args.lam * n
                for label, steps, a, penalised in VARIANTS:
                    centre, spread = statistics(X[tr], steps)
                    acc[label].append(accuracy(row_map(X[tr], centre, spread, a), y[tr],
                                               row_map(X[te], centre, spread, a), y[te], reg, penalised))
                sc = StandardScaler().fit(X[tr])
                acc["sk-ovr"].append(LogisticRegression(C=1.0 / (reg * (d + 1)), multi_class="ovr", max_iter=10000)
                                     .fit(sc.transform(X[tr]), y[tr]).score(sc.transform(X[te]), y[te]))
        print("%-14s" % name + "".join("%13.2f" % (100 * np.mean(acc[n])) for n in names), flush=True)


if __name__ == "__main__":
    main()
