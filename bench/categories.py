#!/usr/bin/python3
"""category(column, '{a,b,...}'): held-out accuracy against scikit-learn's
one-hot encoding, and the training time against the same one-hot values
pre-encoded in a float8[] column.

One synthetic table from a seeded numpy RNG (--seed 0): --rows (20,000)
rows with a text column `cat` of --categories (50) categories 'c00'..'c49'
at unequal frequencies (Dirichlet(2)), --null-fraction (5%) of them NULL,
and two numeric columns, x1 ~ N(0, 1) and x2 ~ U(0, 100) (another scale).
The binary label y is drawn from a logistic rule

    P(y) = sigmoid(-0.3 + e[cat] + x1 - 0.02 (x2 - 50)),

e[c] ~ N(0, 1) per category, e[NULL] = 0.8.  A random 25% is held out
(cat_test); --undeclared (30) of its rows then get values no training row
has ('new1'..'new3', effects ~ N(0, 1)), with their labels drawn under them.

1. Accuracy.  unlearn_train('cat_onehot', 'cat_train', 'y',
   ARRAY['category(cat, ''{c00,...,c49}'')', 'x1', 'x2'], sigma => 0,
   lambda => --lam (1e-3)): 50 category features, one "other" (NULL or an
   undeclared value) and the two numerics, p = 54 weights with the
   intercept.  Held out, unlearn_score_row on the whole rows (the model
   encodes them) and unlearn_evaluate(model, 'cat_test').  Side by side:
     sklearn  ColumnTransformer: OneHotEncoder(handle_unknown='ignore') +
              StandardScaler on cat (NULL passed as the string '(null)', a
              category of its own, as unlearn's "other" is in training),
              StandardScaler on x1, x2; LogisticRegression at the same
              regularisation, C = 1 / (lambda n p) (accuracy.py, nulls.py:
              unlearn minimises sum l + (lambda n / 2) ||w||^2 over rows
              standardised, each one-hot column too, and divided by
              D = sqrt(p)).  An undeclared value is all zeros for it, "other"
              for unlearn: the arms differ on those rows by construction.
     oracle   the generating rule's own prediction (sigmoid > 1/2), the
              ceiling.
   The match is approximate as in accuracy.py: scikit-learn leaves the
   intercept unpenalised, unlearn rounds centre and spread to a grid and
   shrinks rows whose standardised norm passes D (with one-hot columns most
   rows are near D: a rare category's 1 is many deviations out).
   Reported per held-out subset (declared values, NULL, undeclared, all).

2. Training time.  The training rows again with the one-hot values
   pre-encoded in one float8[] column (cat_train_arr.x: 51 values, the 50
   categories and other, then x1 and x2, since an array feature must be the
   model's only feature), trained on ARRAY['x'] with the same lambda and
   sigma (the same p = 54), against category() on cat_train, declared
   and taken from the rows (category(cat): the same 50 categories in the
   same order, read by one DISTINCT query first):
   --reps (3) trainings of each with replace => true, interleaved
   (category, taken, array, category, ...) after one untimed training of
   each; the medians of the summary's `seconds` and of the wall time, and
   their ratios to the array.  The issue asks for at most 1.2x.
   The ratio is reported, not checked: see docs/features.md.  (The array's
   standardisation is one pooled centre and spread for the 51 values, not
   one per column, so its accuracy is not comparable and is not shown.)

Checks (exit status 1 when one fails):
  - |unlearn - sklearn| <= 1 point of held-out accuracy (all rows);
  - the model's D^2 is p = 54, the precondition of the C above;
  - every training row is in the model (rows = n, skipped 0: NULLs go to
    "other"), with 51 + 2 features;
  - unlearn_evaluate(model, 'cat_test') scores every held-out row and its
    accuracy equals that of the unlearn_score_row labels;
  - an undeclared value scores as a NULL does (unlearn_score_row on the
    row with cat set to NULL, to 1e-12).

Tables and models are prefixed cat_ and dropped at the end.  About 5 s
(25 s at --rows 200000; the ratio is the same).

Usage: bench/run categories.py [--rows 20000] [--categories 50] [--seed 0]
           [--lam 1e-3] [--reps 3] [--null-fraction 0.05] [--undeclared 30]
"""
import argparse
import io
import time
import warnings

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import common as C

warnings.filterwarnings("ignore")
TABLES = ("cat_train", "cat_test", "cat_train_arr")
MODELS = ("cat_onehot", "cat_time_category", "cat_time_taken", "cat_time_array")
TOL_POINTS = 1.0        # |unlearn - sklearn|, held-out accuracy, points
BAR_RATIO = 1.2         # the bar for category/array time (reported)
NULL_EFFECT = 0.8
UNDECLARED = ("new1", "new2", "new3")


def cleanup(conn):
    for model in MODELS:
        if C.one(conn, "SELECT count(*) FROM unlearn.models WHERE model = %s", (model,)):
            C.execute(conn, "SELECT unlearn_drop(%s)", (model,))
    C.execute(conn, "DROP TABLE IF EXISTS %s" % ", ".join(TABLES))


def sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def make_data(args):
    """Returns a dict of numpy arrays: cat (object, None for NULL), x1, x2,
    y (bool), logit, test (bool mask), kind ('declared', 'NULL',
    'undeclared')."""
    rng = np.random.default_rng(args.seed)
    n, k = args.rows, args.categories
    names = np.array(["c%02d" % j for j in range(k)], dtype=object)
    freq = rng.dirichlet(np.full(k, 2.0))
    effect = dict(zip(names, rng.normal(0.0, 1.0, k)))
    effect[None] = NULL_EFFECT
    for name, e in zip(UNDECLARED, rng.normal(0.0, 1.0, len(UNDECLARED))):
        effect[name] = e
    cat = names[rng.choice(k, size=n, p=freq)]
    cat[rng.random(n) < args.null_fraction] = None
    test = np.zeros(n, dtype=bool)
    test[rng.permutation(n)[: n // 4]] = True
    und = rng.choice(np.flatnonzero(test), size=args.undeclared, replace=False)
    cat[und] = np.array(UNDECLARED, dtype=object)[rng.integers(0, len(UNDECLARED), args.undeclared)]
    x1 = rng.normal(0.0, 1.0, n)
    x2 = rng.uniform(0.0, 100.0, n)
    logit = -0.3 + np.array([effect[c] for c in cat]) + x1 - 0.02 * (x2 - 50.0)
    y = rng.random(n) < sigmoid(logit)
    kind = np.array(["NULL" if c is None else ("undeclared" if c in UNDECLARED else "declared")
                     for c in cat], dtype=object)
    return dict(cat=cat, x1=x1, x2=x2, y=y, logit=logit, test=test, kind=kind,
                names=list(names))


def copy_in(conn, table, lines):
    buf = io.StringIO("".join(lines))
    with conn.cursor() as cur:
        cur.copy_expert("COPY %s FROM STDIN" % table, buf)


def load(conn, data):
    names = data["names"]
    for name, mask in (("cat_train", ~data["test"]), ("cat_test", data["test"])):
        C.execute(conn, "CREATE TABLE %s (id int PRIMARY KEY, y boolean, cat text, "
                  "x1 float8, x2 float8)" % name)
        copy_in(conn, name, ["%d\t%s\t%s\t%r\t%r\n" % (i, "t" if data["y"][i] else "f",
                                                      "\\N" if data["cat"][i] is None else data["cat"][i],
                                                      data["x1"][i], data["x2"][i])
                             for i in np.flatnonzero(mask)])
    # the same training rows, one-hot pre-encoded: the 50 categories, other,
    # x1, x2 in one array (an array feature is a model's only feature)
    index = {c: j for j, c in enumerate(names)}
    C.execute(conn, "CREATE TABLE cat_train_arr (id int PRIMARY KEY, y boolean, x float8[])")
    lines = []
    for i in np.flatnonzero(~data["test"]):
        v = ["0"] * (len(names) + 1)
        v[index.get(data["cat"][i], len(names))] = "1"
        v += [repr(data["x1"][i]), repr(data["x2"][i])]
        lines.append("%d\t%s\t{%s}\n" % (i, "t" if data["y"][i] else "f", ",".join(v)))
    copy_in(conn, "cat_train_arr", lines)
    C.execute(conn, "VACUUM ANALYZE cat_train, cat_test, cat_train_arr")


def category_feature(names):
    return "category(cat, '{%s}')" % ",".join(names)


def train(conn, model, table, feats, lam):
    """One training (replace => true): the summary row as a dict, and the
    wall time."""
    with conn.cursor() as cur:
        t0 = time.perf_counter()
        cur.execute("SELECT * FROM unlearn_train(%s, %s, 'y', %s, lambda => %s, sigma => 0, "
                    "replace => true)", (model, table, feats, lam))
        row = cur.fetchone()
        wall = time.perf_counter() - t0
        return dict(zip([c.name for c in cur.description], row)), wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--categories", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lam", type=float, default=1e-3)
    ap.add_argument("--reps", type=int, default=3, help="timed trainings of each arm")
    ap.add_argument("--null-fraction", type=float, default=0.05)
    ap.add_argument("--undeclared", type=int, default=30,
                    help="held-out rows given a value no training row has")
    args = ap.parse_args()
    conn = C.connect()
    C.ensure_extension(conn)
    C.execute(conn, "SET client_min_messages = warning")
    mtime0 = C.library_mtime()
    C.preamble(conn, "categories: category() against scikit-learn's OneHotEncoder, and against "
               "a pre-encoded float8[] column")
    print("%d rows, %d categories (Dirichlet(2) frequencies), %.0f%% NULL, %d undeclared held-out "
          "values; 25%% held out; lambda %g, sigma 0; seed %d"
          % (args.rows, args.categories, 100 * args.null_fraction, args.undeclared, args.lam,
             args.seed))

    failures, checks = [], []

    def check(what, ok, value, msg=None):
        checks.append((what, value, "ok" if ok else "FAIL"))
        if not ok:
            failures.append(msg or "%s: %s" % (what, value))

    t_start = time.perf_counter()
    data = make_data(args)
    names, test = data["names"], data["test"]
    n = int((~test).sum())
    cleanup(conn)
    try:
        load(conn, data)
        feats = [category_feature(names), "x1", "x2"]

        # ---- 1. accuracy --------------------------------------------------
        summary, wall = train(conn, "cat_onehot", "cat_train", feats, args.lam)
        m = C.model_row(conn, "cat_onehot")
        p = m["dims"] + 1
        check("rows trained = training rows, none skipped",
              summary["rows"] == n and m["skipped"] == 0 and summary["state"] == "ready",
              "%s of %d, skipped %s, %s" % (summary["rows"], n, m["skipped"], summary["state"]))
        check("features: %d categories + other + 2" % len(names), m["dims"] == len(names) + 3,
              "%d" % m["dims"])
        check("D^2 = p (the C mapping)", abs(m["scale"] ** 2 - p) <= 1e-9 * p,
              "%.6g, p = %d" % (m["scale"] ** 2, p))

        rows = C.execute(conn, "SELECT t.id, s.label, s.score FROM cat_test t, "
                         "LATERAL unlearn_score_row('cat_onehot', t) s ORDER BY t.id")
        ids = np.array([r[0] for r in rows])
        if not np.array_equal(ids, np.flatnonzero(test)):
            raise SystemExit("categories.py: unlearn_score_row did not score every held-out row")
        pred_u = np.array([r[1] == "true" for r in rows])
        ev = C.execute(conn, "SELECT rows, skipped, accuracy FROM unlearn_evaluate('cat_onehot', "
                       "'cat_test')")[0]
        acc_sql = float(np.mean(pred_u == data["y"][test]))
        check("unlearn_evaluate = unlearn_score_row labels",
              ev[0] == test.sum() and ev[2] is not None and abs(ev[2] - acc_sql) <= 1e-12,
              "rows %s skipped %s accuracy %s vs %.6f" % (ev[0], ev[1], ev[2], acc_sql))
        und = C.one(conn, "SELECT count(*), max(abs(a.score - b.score)) FROM cat_test t, "
                    "LATERAL unlearn_score_row('cat_onehot', t) a, "
                    "LATERAL unlearn_score_row('cat_onehot', jsonb_populate_record(t, "
                    "'{\"cat\": null}')) b WHERE t.cat <> ALL (%s)", (names,))
        check("undeclared value scores as NULL (1e-12)",
              und[0] == args.undeclared and und[1] is not None and und[1] <= 1e-12,
              "%d rows, max |diff| %s" % (und[0], und[1]))

        cat_sk = np.array(["(null)" if c is None else c for c in data["cat"]], dtype=object)
        X = np.empty((args.rows, 3), dtype=object)
        X[:, 0], X[:, 1], X[:, 2] = cat_sk, data["x1"], data["x2"]
        try:
            ohe = OneHotEncoder(handle_unknown="ignore", sparse_output=False)
        except TypeError:   # scikit-learn before 1.2
            ohe = OneHotEncoder(handle_unknown="ignore", sparse=False)
        sk = make_pipeline(
            ColumnTransformer([("cat", make_pipeline(ohe, StandardScaler()), [0]),
                               ("num", StandardScaler(), [1, 2])]),
            LogisticRegression(C=1.0 / (args.lam * n * p), max_iter=10000))
        sk.fit(X[~test], data["y"][~test])
        pred_s = sk.predict(X[test])
        sk_cols = len(sk[0].named_transformers_["cat"][0].categories_[0]) + 2
        pred_o = data["logit"][test] > 0
        yt, kt = data["y"][test], data["kind"][test]

        acc_rows = []
        for label, mask in (("declared", kt == "declared"), ("NULL", kt == "NULL"),
                            ("undeclared", kt == "undeclared"), ("all", np.ones(len(kt), bool))):
            a = [100.0 * float(np.mean(pr[mask] == yt[mask])) if mask.any() else None
                 for pr in (pred_u, pred_s, pred_o)]
            acc_rows.append((label, int(mask.sum()), a[0], a[1],
                             None if a[0] is None else a[0] - a[1], a[2],
                             int(np.sum(pred_u[mask] != pred_s[mask]))))
        delta = acc_rows[-1][4]
        check("|unlearn - sklearn| <= %g point (all held out)" % TOL_POINTS, abs(delta) <= TOL_POINTS,
              "%+.2f" % delta, "unlearn %.2f, sklearn %.2f (%+.2f points)"
              % (acc_rows[-1][2], acc_rows[-1][3], delta))

        # ---- 2. training time ---------------------------------------------
        taken = ["category(cat)" if f.startswith("category(") else f for f in feats]
        arms = (("category()", "cat_time_category", "cat_train", feats),
                ("category(cat) taken", "cat_time_taken", "cat_train", taken),
                ("float8[]", "cat_time_array", "cat_train_arr", ["x"]))
        times = {a[0]: {"seconds": [], "wall": []} for a in arms}
        states = {}
        for rep in range(args.reps + 1):
            for label, model, table, f in arms:
                s, w = train(conn, model, table, f, args.lam)
                states[label] = (s["state"], s["rows"])
                if rep > 0:                 # the first of each is untimed
                    times[label]["seconds"].append(s["seconds"])
                    times[label]["wall"].append(w)
        for label, _, _, _ in arms:
            check("%s timing model ready on every row" % label,
                  states[label] == ("ready", n), "%s, %s rows" % states[label])
        med = {a: {k: C.median(v) for k, v in t.items()} for a, t in times.items()}
        ratio = med["category()"]["seconds"] / med["float8[]"]["seconds"]
        ratio_wall = med["category()"]["wall"] / med["float8[]"]["wall"]
    finally:
        cleanup(conn)

    print()
    print("held-out accuracy (%%), %d training rows, p = %d weights; unlearn: category() + x1, x2 "
          "(%d features); sklearn: OneHotEncoder(ignore) + StandardScaler, %d columns, "
          "C = 1/(lambda n p) = %.4g; oracle: the generating rule"
          % (n, p, p - 1, sk_cols, 1.0 / (args.lam * n * p)))
    C.table(["held-out rows", "n", "unlearn", "sklearn", "unlearn - sk", "oracle",
             "predictions differ"], acc_rows, ["", "", ".2f", ".2f", "+.2f", ".2f", ""])
    print()
    print("training time on the %d training rows, medians of %d interleaved trainings (after one "
          "untimed of each); seconds: the summary's" % (n, args.reps))
    trow = []
    for a in ("category()", "category(cat) taken", "float8[]"):
        trow.append((a, med[a]["seconds"], " ".join("%.3f" % v for v in times[a]["seconds"]),
                     med[a]["wall"]))
    trow.append(("category / array", "%.2fx" % ratio, "", "%.2fx" % ratio_wall))
    trow.append(("taken / array", "%.2fx" % (med["category(cat) taken"]["seconds"] / med["float8[]"]["seconds"]),
                 "", "%.2fx" % (med["category(cat) taken"]["wall"] / med["float8[]"]["wall"])))
    C.table(["features", "seconds", "each", "wall"], trow, ["", ".3f", "", ".3f"])
    print("issue's bar: category/array <= %.1fx: %s (reported, not checked: see docs/features.md, "
          "Categories, Cost)" % (BAR_RATIO, "met" if ratio <= BAR_RATIO else "NOT met"))
    print()
    C.table(["check", "value", "result"], checks)
    print()
    print("whole run %.1f s" % (time.perf_counter() - t_start))
    if failures:
        print()
        for f in failures:
            print("FAIL:", f)
    C.warn_if_reinstalled(mtime0)
    raise SystemExit(1 if failures else 0)


if __name__ == "__main__":
    main()
