#!/usr/bin/python3
"""Held-out accuracy with missing feature values: "nulls": "impute" against
"skip" and against scikit-learn's mean imputation.

Three sets bundled with Debian's python3-sklearn: breast cancer (binary),
wine (3 classes: unlearn trains one-vs-rest natively on the int label) and
diabetes (regression, loss => 'squared').  For each of --reps repetitions
(seed r = 0, 1, ...), a seeded numpy RNG sets exactly --null-fraction (10%)
of all feature values to NULL, drawn uniformly over the cells (labels are
never NULL), and train_test_split(random_state=r) holds out a random 25%
(stratified for the classifiers).  The training rows go into nulls_train,
the held-out rows, with their NULLs, into nulls_test, and side by side:

  impute   unlearn_train(..., options => '{"nulls": "impute"}'): a NULL
           feature is the column's public centre (the grid-rounded mean of
           its non-NULL values), mapped coordinate 0.  Held out:
           unlearn_predict_class / unlearn_predict on ARRAY[f0, ...] with
           the NULLs in it (the model imputes them).
  skip     unlearn_train(..., options => '{"nulls": "skip"}'): a row with
           any NULL feature is left out of the model.  Such a model cannot
           score a NULL, so its held-out NULLs are replaced in SQL by the
           column means of nulls_train (avg() over all its non-NULL values,
           not only the rows the model kept) before unlearn_predict_class /
           unlearn_predict.
  sklearn  SimpleImputer(strategy='mean') + StandardScaler +
           LogisticRegression(multi_class='ovr') (Ridge for diabetes),
           fitted on all training rows.

Both unlearn models run at sigma => 0 (no objective noise, allowed: budget
0), so the accuracy compares the objectives, not the noise, and at lambda
--lam (default 1e-3).  scikit-learn gets the same regularisation, as in
accuracy.py: unlearn minimises sum l(w.x_i) + (lambda n / 2) ||w||^2 over
rows standardised and divided by D = sqrt(p) (p = d + 1 with the
intercept), i.e. sum l(v.z_i) + (lambda n p / 2) ||v||^2 on standardised
rows z, which is C = 1 / (lambda n p) for LogisticRegression and, since
unlearn's squared loss is (w.x - y)^2 without a 1/2 and divides its rows
by D = 2 sqrt(p) (from 0.20.0), alpha = lambda n (4 p) / 2 for Ridge.  n is the training rows (all of them for impute and sklearn).
The match is approximate in the same ways as accuracy.py's: scikit-learn
leaves the intercept unpenalised (unlearn penalises it, at intercept scaling
2), unlearn's centre and spread are rounded to a grid, rows whose
standardised norm passes D are shrunk, and StandardScaler's spread is that
of the imputed column (smaller by about sqrt(0.9)).

The held-out sets are small (wine: 45 rows, one row is 2.2 points), hence
the repetitions (5 by default; the whole run takes a few seconds).

Reported per set, as means over the repetitions: the rows each model trained
on, held-out accuracy (R^2 for diabetes) of each arm, and impute - sklearn
and skip - sklearn (points of accuracy, or R^2).  For reference, the same
splits without NULLs (nulls_full_train, nulls_full_test): unlearn at sigma 0
against StandardScaler + the same scikit-learn estimator, which separates
what the NULLs cost from what the model itself costs.  A skip model with
fewer complete rows than weights is refused by unlearn_train (breast cancer:
0.9^30 = 4% of the rows have no NULL) and scores nothing.

Checks (exit status 1 when one fails):
  - impute is within 1 point of sklearn's held-out accuracy (breast cancer,
    wine), and its R^2 within 0.02 of sklearn's (diabetes), on the mean
    over the repetitions;
  - impute trained on every training row, skip on exactly the rows without
    a NULL (unlearn_train refuses a first training with fewer rows than
    weights: skip is then reported "refused", which fails only when it had
    enough complete rows);
  - each model's public centre and spread are the grid cell of the mean and
    standard deviation of the values it reflects: the non-NULL values of
    each column (impute), the complete rows (skip);
  - unlearn_evaluate(model, 'nulls_test') of the impute model scores every
    held-out row (NULLs imputed) and agrees with the SQL predictions.
Until the build and the catalog accept "nulls": "impute", training raises an
error: impute is reported "not available", its checks are not run, and the
exit status does not change (unless --require-impute).

Usage: bench/run nulls.py [--reps 5] [--lam 1e-3] [--null-fraction 0.1]
                          [--require-impute]
"""
import argparse
import json
import warnings

import numpy as np
import psycopg2
from psycopg2.extras import execute_values
from sklearn import datasets
from sklearn.base import clone
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import common as C

warnings.filterwarnings("ignore")
SETS = [("breast cancer", datasets.load_breast_cancer, "logistic"),
        ("wine", datasets.load_wine, "logistic"),
        ("diabetes", datasets.load_diabetes, "squared")]
ARMS = ("impute", "skip")
MODELS = {arm: "nulls_" + arm for arm in ARMS + ("full",)}
TABLES = ("nulls_train", "nulls_test", "nulls_full_train", "nulls_full_test")
TOL_POINTS = 1.0        # impute - sklearn, classification, percentage points
TOL_R2 = 0.02           # impute - sklearn, diabetes, R^2


class NotAvailable(Exception):
    pass


def cleanup(conn):
    for model in MODELS.values():
        if C.one(conn, "SELECT count(*) FROM unlearn.models WHERE model = %s", (model,)):
            C.execute(conn, "SELECT unlearn_drop(%s)", (model,))
    C.execute(conn, "DROP TABLE IF EXISTS %s" % ", ".join(TABLES))


def load_table(conn, name, ids, X, y, label_type):
    """id, label and f0.. as float8 columns; NaN cells become NULL."""
    cols = ", ".join("f%d float8" % j for j in range(X.shape[1]))
    C.execute(conn, "CREATE TABLE %s (id int PRIMARY KEY, label %s, %s)" % (name, label_type, cols))
    rows = [(int(i), int(l) if label_type == "int" else float(l))
            + tuple(None if np.isnan(v) else float(v) for v in x)
            for i, l, x in zip(ids, y, X)]
    with conn.cursor() as cur:
        execute_values(cur, "INSERT INTO %s VALUES %%s" % name, rows, page_size=1000)
    C.execute(conn, "ANALYZE %s" % name)


def grid_cell(mean, sd, steps):
    """src/math/column_map.c grid_cell: s = 2^(k/steps) for the integer k
    nearest steps log2 max(sd, 2^-20 max(|mean|, 1)), c = the multiple of
    s/4 nearest the mean (rounding half away from zero, as C).
    (common.standardize_grid is the grid of one step per power of two.)"""
    def rnd(x):
        return float(np.sign(x) * np.floor(abs(x) + 0.5))
    k = int(rnd(steps * np.log2(max(sd, 2.0 ** -20 * max(abs(mean), 1.0)))))
    octave = k // steps
    s = float(np.ldexp(2.0 ** ((k - octave * steps) / steps), octave))
    h = s / 4
    return h * rnd(mean / h), s


def expected_map(X, steps):
    """Grid cell of each column's mean and (population) standard deviation
    over its non-NaN values, in long double as the extension sums."""
    centre, spread = [], []
    for j in range(X.shape[1]):
        v = X[:, j][~np.isnan(X[:, j])].astype(np.longdouble)
        mean = v.mean() if v.size else np.longdouble(0)
        sd = np.sqrt(((v - mean) ** 2).mean()) if v.size else np.longdouble(0)
        c, s = grid_cell(float(mean), float(sd), steps)
        centre.append(c)
        spread.append(s)
    return np.array(centre), np.array(spread)


def train(conn, arm, loss, lam, d):
    feats = "{" + ",".join("f%d" % j for j in range(d)) + "}"
    source, options = (("nulls_full_train", {}) if arm == "full"
                       else ("nulls_train", {"nulls": arm}))
    try:
        C.execute(conn, "SELECT model FROM unlearn_train(%s, %s, "
                  "'label', %s, loss => %s, lambda => %s, sigma => 0, options => %s, "
                  "replace => true)",
                  (MODELS[arm], source, feats, loss, lam, json.dumps(options)))
        return C.execute(conn, "SELECT rows, skipped, state FROM unlearn.status WHERE model = %s",
                         (MODELS[arm],))[0]
    except psycopg2.Error as e:
        msg = (e.diag.message_primary or str(e)).strip()
        if arm == "impute" and ("impute" in msg or "nulls" in msg):
            raise NotAvailable("%s (%s)" % (msg, e.pgcode)) from None
        if e.pgcode == "22023" and "than rows" in msg:
            return None, None, "refused"     # fewer rows than weights at training
        raise


def predict(conn, arm, loss, d):
    """(labels, predictions) of the held-out rows in id order, from SQL."""
    fn = "unlearn_predict" if loss == "squared" else "unlearn_predict_class"
    lab = "label" if loss == "squared" else "label::text"
    if arm != "skip":
        arr = ", ".join("f%d" % j for j in range(d))
        src = "nulls_full_test" if arm == "full" else "nulls_test"
    else:
        arr = ", ".join("coalesce(t.f%d, m.f%d)" % (j, j) for j in range(d))
        src = ("nulls_test t, (SELECT %s FROM nulls_train) m"
               % ", ".join("avg(f%d) AS f%d" % (j, j) for j in range(d)))
    rows = C.execute(conn, "SELECT %s, %s(%%s, ARRAY[%s]) FROM %s ORDER BY id"
                     % (lab, fn, arr, src), (MODELS[arm],))
    return [r[0] for r in rows], [r[1] for r in rows]


def score(loss, labels, preds):
    if loss == "squared":
        return float(r2_score(np.array(labels, dtype=float), np.array(preds, dtype=float)))
    return 100.0 * float(np.mean([a == b for a, b in zip(labels, preds)]))


CHECK_ROWS = "rows trained: impute all, skip the complete"
CHECK_MAP = "centre, spread: grid cell of the values reflected"
CHECK_EVAL = "unlearn_evaluate(impute) = SQL predictions"


def run_set(conn, name, loader, loss, args, failures):
    tally = {}      # check -> [models checked, failed]

    def check(key, ok, seed, msg):
        t = tally.setdefault(key, [0, 0])
        t[0] += 1
        if not ok:
            t[1] += 1
            failures.append("%s, seed %d: %s" % (name, seed, msg))

    X0, y = loader(return_X_y=True)
    n_all, d = X0.shape
    p = d + 1
    label_type = "float8" if loss == "squared" else "int"
    res = {k: [] for k in ("impute", "skip", "sk", "full", "sk_full",
                           "rows_impute", "rows_skip", "rows_sk", "complete")}
    states = {"impute": [], "skip": []}
    unavailable = None
    for seed in range(args.reps):
        rng = np.random.default_rng(seed)
        X = X0.astype(np.float64).copy()
        X.flat[rng.choice(X.size, size=int(round(args.null_fraction * X.size)), replace=False)] = np.nan
        tr, te = train_test_split(np.arange(n_all), test_size=0.25, random_state=seed,
                                  stratify=None if loss == "squared" else y)
        complete = int((~np.isnan(X[tr]).any(axis=1)).sum())
        res["complete"].append(complete)
        cleanup(conn)
        load_table(conn, "nulls_train", tr, X[tr], y[tr], label_type)
        load_table(conn, "nulls_test", te, X[te], y[te], label_type)
        load_table(conn, "nulls_full_train", tr, X0[tr], y[tr], label_type)
        load_table(conn, "nulls_full_test", te, X0[te], y[te], label_type)

        # scikit-learn, same regularisation: D^2 = p (4 p for least
        # squares, row_map_divisor), checked against the trained model below
        n = len(tr)
        d2 = (4 if loss == "squared" else 1) * p
        if loss == "squared":
            est = Ridge(alpha=args.lam * n * d2 / 2)
        else:
            est = LogisticRegression(C=1.0 / (args.lam * n * d2), multi_class="ovr", max_iter=10000)
        sk = make_pipeline(SimpleImputer(strategy="mean"), StandardScaler(), est).fit(X[tr], y[tr])
        pred = sk.predict(X[te])
        res["sk"].append(float(r2_score(y[te], pred)) if loss == "squared"
                         else 100.0 * float(np.mean(pred == y[te])))
        res["rows_sk"].append(n)

        # reference: the same split without NULLs, unlearn and scikit-learn
        full = make_pipeline(StandardScaler(), clone(est)).fit(X0[tr], y[tr])
        pred = full.predict(X0[te])
        res["sk_full"].append(float(r2_score(y[te], pred)) if loss == "squared"
                              else 100.0 * float(np.mean(pred == y[te])))
        train(conn, "full", loss, args.lam, d)
        scale = C.one(conn, "SELECT scale FROM unlearn.models WHERE model = %s", (MODELS["full"],))
        if abs(scale * scale - d2) > 1e-9 * d2:
            raise SystemExit("nulls.py: the model's divisor D = %r is not sqrt(%d): update d2" % (scale, d2))
        res["full"].append(score(loss, *predict(conn, "full", loss, d)))

        steps = None
        for arm in ARMS:
            if arm == "impute" and unavailable:
                continue
            try:
                rows, skipped, state = train(conn, arm, loss, args.lam, d)
            except NotAvailable as e:
                unavailable = str(e)
                continue
            states[arm].append(state)
            want = n if arm == "impute" else complete
            if state == "refused":
                check(CHECK_ROWS, want < p, seed, "%s refused with %d rows for %d weights"
                      % (arm, want, p))
                continue
            res["rows_" + arm].append(rows)
            check(CHECK_ROWS, rows == want, seed, "%s trained on %d rows, expected %d (skipped %d)"
                  % (arm, rows, want, skipped))
            m = C.model_row(conn, MODELS[arm])
            steps = m["spread_steps"] or 1
            if m["centre"] is not None and rows > 0:
                Xm = X[tr] if arm == "impute" else X[tr][~np.isnan(X[tr]).any(axis=1)]
                c, s = expected_map(Xm, steps)
                bad = [j for j in range(d)
                       if not (np.isclose(m["centre"][j], c[j], rtol=1e-9, atol=0)
                               and np.isclose(m["spread"][j], s[j], rtol=1e-9, atol=0))]
                j = bad[0] if bad else 0
                check(CHECK_MAP, not bad, seed, "%s centre/spread of %d columns off the grid cell "
                      "of the values it reflects (f%d: %r/%r, expected %r/%r)"
                      % (arm, len(bad), j, m["centre"][j], m["spread"][j], c[j], s[j]))
            if state != "ready":
                continue
            labels, preds = predict(conn, arm, loss, d)
            res[arm].append(score(loss, labels, preds))
            if arm == "impute":
                ev = C.execute(conn, "SELECT rows, skipped, accuracy, r2 "
                               "FROM unlearn_evaluate(%s, 'nulls_test')", (MODELS[arm],))[0]
                ev_score = ev[3] if loss == "squared" else (None if ev[2] is None else 100.0 * ev[2])
                check(CHECK_EVAL, ev[0] == len(te) and ev_score is not None
                      and abs(ev_score - res[arm][-1]) <= 1e-9, seed,
                      "unlearn_evaluate(impute) rows %s skipped %s score %s, the SQL "
                      "predictions: %d rows, %.6f"
                      % (ev[0], ev[1], ev_score, len(te), res[arm][-1]))
    cleanup(conn)
    return n_all, d, res, states, unavailable, tally


def mean_or_none(xs):
    return float(np.mean(xs)) if xs else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--lam", type=float, default=1e-3)
    ap.add_argument("--null-fraction", type=float, default=0.1)
    ap.add_argument("--require-impute", action="store_true",
                    help="fail (exit 1) when the server refuses \"nulls\": \"impute\"")
    args = ap.parse_args()
    conn = C.connect()
    C.ensure_extension(conn)
    C.execute(conn, "SET client_min_messages = warning")
    mtime0 = C.library_mtime()
    C.preamble(conn, "nulls: \"impute\" against \"skip\" and scikit-learn's mean imputation, "
               "%d%% of feature values NULL, 25%% held out" % round(100 * args.null_fraction))
    print("lambda %g, sigma 0, %d repetitions (seeds 0-%d): means over them"
          % (args.lam, args.reps, args.reps - 1))

    failures, checks, rows_out, acc_out, unavailable = [], [], [], [], None
    try:
        for name, loader, loss in SETS:
            n_all, d, res, states, na, tally = run_set(conn, name, loader, loss, args, failures)
            unavailable = unavailable or na
            m = {k: mean_or_none(v) for k, v in res.items()}
            unit = "R^2" if loss == "squared" else "acc %"
            spec = ".3f" if loss == "squared" else ".2f"

            def cell(arm):
                if arm == "impute" and na:
                    return "n/a"
                if m[arm] is None:
                    bad = [s for s in states[arm] if s != "ready"]
                    if bad and bad[0] == "refused":
                        return "refused: %.1f rows < %d weights" % (m["complete"], d + 1)
                    return bad[0] if bad else "-"
                note = "" if len(res[arm]) == args.reps else " (%d/%d)" % (len(res[arm]), args.reps)
                return format(m[arm], spec) + note

            def diff(arm):
                if m[arm] is None or (arm == "impute" and na):
                    return "-"
                return format(m[arm] - m["sk"], "+" + spec)

            def rows(arm):
                if arm == "impute" and na:
                    return "n/a"
                return "-" if m["rows_" + arm] is None else format(m["rows_" + arm], ".1f")

            rows_out.append((name, n_all, d, format(m["complete"], ".1f"),
                             rows("impute"), rows("skip"), format(m["rows_sk"], ".1f")))
            acc_out.append((name, unit, cell("impute"), cell("skip"), format(m["sk"], spec),
                            diff("impute"), diff("skip"), format(m["full"], spec),
                            format(m["sk_full"], spec), format(m["full"] - m["sk_full"], "+" + spec)))
            if na:
                checks.append((name, "impute - sklearn", "not available", "SKIPPED"))
            elif m["impute"] is None:
                checks.append((name, "impute - sklearn", "impute model not ready", "FAIL"))
                failures.append("%s: the impute model is not ready (%s)" % (name, states["impute"]))
            else:
                tol = TOL_R2 if loss == "squared" else TOL_POINTS
                delta = m["impute"] - m["sk"]
                ok = abs(delta) <= tol
                checks.append((name, "|impute - sklearn| <= %g %s" % (tol, "R^2" if loss == "squared" else "points"),
                               format(delta, "+" + spec), "ok" if ok else "FAIL"))
                if not ok:
                    failures.append("%s: impute %s sklearn %s (%s)"
                                    % (name, format(m["impute"], spec), format(m["sk"], spec),
                                       format(delta, "+" + spec)))
            for key in (CHECK_ROWS, CHECK_MAP, CHECK_EVAL):
                if key in tally:
                    ran, failed = tally[key]
                    checks.append((name, key, "%d of %d models failed" % (failed, ran) if failed
                                   else "%d models" % ran, "FAIL" if failed else "ok"))
                elif key == CHECK_EVAL and na:
                    checks.append((name, key, "not available", "SKIPPED"))
    finally:
        cleanup(conn)

    print()
    print("training rows each model trained on (complete: the training rows without a NULL)")
    C.table(["set", "n", "d", "complete", "impute", "skip", "sklearn (all)"], rows_out)
    print()
    print("held out: accuracy (%) for breast cancer and wine, R^2 for diabetes; "
          "'no NULLs': the same split with every value present, unlearn (sigma 0) "
          "and scikit-learn (StandardScaler + the same estimator)")
    C.table(["set", "metric", "impute", "skip", "sklearn", "impute - sk", "skip - sk",
             "no NULLs: unlearn", "sklearn", "unlearn - sk"], acc_out)
    print()
    print("skip: held-out NULLs filled with nulls_train's column means in SQL before "
          "unlearn_predict; impute: NULLs passed to unlearn_predict as they are")
    if unavailable:
        print("impute not available: %s" % unavailable)
        if args.require_impute:
            failures.append("\"nulls\": \"impute\" refused: %s" % unavailable)
    print()
    C.table(["set", "check", "value", "result"], checks)
    if failures:
        print()
        for f in failures:
            print("FAIL:", f)
    C.warn_if_reinstalled(mtime0)
    raise SystemExit(1 if failures else 0)


if __name__ == "__main__":
    main()
