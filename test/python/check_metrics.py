#!/usr/bin/python3
"""unlearn_evaluate's held-out metrics against scikit-learn's sklearn.metrics,
to 1e-9 (absolute; relative for the log-loss), computed here from the
extension's own per-row predictions (unlearn_predict_proba,
unlearn_predict_class, unlearn_predict) on the same held-out rows:

  * a binary logistic model on sklearn's breast-cancer data (an int {0, 1}
    label, one float8[] feature column), evaluated on a held-out table whose
    columns are in another order, on its own table (source omitted), and on
    the held-out rows twice over with some labels flipped (tied scores of
    both classes, for the ROC AUC's ties);
  * one-vs-rest models on iris (a text label, four separate columns) and on
    the ten digits (an int label, one float8[] column), held out; iris also
    on the held-out rows of one class only (precision, recall and F1 of 0
    where undefined; the ROC AUC is then NULL, where sklearn refuses);
  * a least-squares model on diabetes (ten separate columns of mixed
    numeric types), held out, against an integer label column;
  * a held-out row whose label is no class of the model: SQLSTATE 22000.

Definitions (src/metrics.c): log_loss clips to [DBL_EPSILON, 1 - DBL_EPSILON]
and renormalises; roc_auc is that of classes[1] for a binary model and the
one-vs-rest macro average otherwise; f1 is the macro F1 and precision,
recall and F1 per class are 0 where undefined; the confusion matrix has a
row per true class and a column per predicted class, in the order of
unlearn.models.classes; rmse = sqrt(mean squared error).  Labels compare as
unlearn's canonical text (integers in decimal).

Tables and models are named cm_* and dropped at the end, so the check can
share a database with other checks.  The server is the libpq environment's
and must have unlearn installed (shared_preload_libraries = unlearn).
"""

import csv
import gzip
import math
import sys
import warnings

import numpy as np
import psycopg2
from psycopg2.extras import execute_values
from sklearn import metrics

warnings.simplefilter("ignore")
SK = "/usr/lib/python3/dist-packages/sklearn/datasets/data"
TOL = 1e-9
DBL_EPSILON = np.finfo(np.float64).eps
MODELS = ("cm_cancer", "cm_iris", "cm_digits", "cm_diab")
TABLES = ("cm_cancer_train", "cm_cancer_test", "cm_iris_train", "cm_iris_test",
          "cm_digits_train", "cm_digits_test", "cm_diab_train", "cm_diab_test", "cm_bad",
          "cm_cancer_ties", "cm_iris_one")
failures = 0


def check(what, value, tol=TOL):
    """value: True/False, or a difference that passes when <= tol"""
    global failures
    if isinstance(value, (bool, np.bool_)):
        ok, detail = bool(value), ""
    else:
        ok = value is not None and not math.isnan(value) and value <= tol
        detail = ": difference %.3e" % value if value is not None else ": no value"
    print("%s %s%s" % ("ok  " if ok else "FAIL", what, detail))
    if not ok:
        failures += 1


def absdiff(got, want):
    if got is None:
        return float("nan")
    return float(np.max(np.abs(np.asarray(got, dtype=float) - np.asarray(want, dtype=float))))


def reldiff(got, want):
    if got is None:
        return float("nan")
    return abs(got - want) / abs(want)


# ---------------------------------------------------------------- data


def load_cancer():
    with open(SK + "/breast_cancer.csv") as f:
        rows = list(csv.reader(f))[1:]       # header: counts and names
    a = np.array([[float(v) for v in r] for r in rows])
    return a[:, :30], a[:, 30].astype(int)


def load_iris():
    with open(SK + "/iris.csv") as f:
        rows = list(csv.reader(f))
    names = rows[0][2:]                      # header: 150,4,setosa,versicolor,virginica
    x = np.array([[float(v) for v in r[:4]] for r in rows[1:]])
    y = [names[int(r[4])] for r in rows[1:]]
    return x, y


def load_digits():
    with gzip.open(SK + "/digits.csv.gz", "rt") as f:
        a = np.array([[float(v) for v in row] for row in csv.reader(f)])
    return a[:, :64], a[:, 64].astype(int)


def load_diabetes():
    with gzip.open(SK + "/diabetes_data_raw.csv.gz", "rt") as f:
        x = np.array([[float(v) for v in line.split()] for line in f])
    with gzip.open(SK + "/diabetes_target.csv.gz", "rt") as f:
        y = np.array([float(line) for line in f])
    return x, y


# ---------------------------------------------------------------- checks


def evaluate(cur, model, table=None):
    if table is None:
        cur.execute("SELECT * FROM unlearn_evaluate(%s)", (model,))
    else:
        cur.execute("SELECT * FROM unlearn_evaluate(%s, %s)", (model, table))
    row = cur.fetchone()
    return dict(zip([d[0] for d in cur.description], row))


def check_classifier(cur, model, table, features_sql, truth, what, auc_defined=True):
    """unlearn_evaluate(model, table) against sklearn.metrics over the
    table's rows (ORDER BY id) scored by unlearn_predict_proba and
    unlearn_predict_class; truth: the canonical label text per row"""
    cur.execute("SELECT classes FROM unlearn.models WHERE model = %s", (model,))
    classes = cur.fetchone()[0]
    K = len(classes)
    cur.execute("SELECT unlearn_predict_proba(%s, x), unlearn_predict_class(%s, x) "
                "FROM (SELECT id, %s AS x FROM %s) t ORDER BY id" % ("%s", "%s", features_sql, table),
                (model, model))
    scored = cur.fetchall()
    proba = np.array([r[0] for r in scored])
    predicted = [r[1] for r in scored]
    n = len(truth)
    ev = evaluate(cur, model, table if what != "own table" else None)
    tag = "%s on %s" % (model, table if what != "own table" else "its own table (source omitted)")

    check("%s: rows = %d, skipped = 0 (got %s, %s)" % (tag, n, ev["rows"], ev["skipped"]),
          ev["rows"] == n and ev["skipped"] == 0)
    check("%s: classes = unlearn.models.classes %s" % (tag, classes), ev["classes"] == classes)
    check("%s: unlearn_predict_proba has %d columns summing to 1" % (tag, K),
          proba.shape == (n, K) and absdiff(proba.sum(1), 1.0) <= 1e-12)
    # sklearn's multiclass ROC AUC wants its labels sorted: compare indexes
    index = {c: k for k, c in enumerate(classes)}
    y = np.array([index[t] for t in truth])
    p = np.array([index[c] for c in predicted])
    check("%s: unlearn_predict_class is the most probable class" % tag,
          bool(np.all(proba[np.arange(n), p] == proba.max(1))))
    labels = list(range(K))

    check("%s: accuracy %.6f" % (tag, ev["accuracy"] or float("nan")),
          absdiff(ev["accuracy"], metrics.accuracy_score(y, p)))
    check("%s: log_loss %.6f (relative)" % (tag, ev["log_loss"] or float("nan")),
          reldiff(ev["log_loss"], metrics.log_loss(y, proba, eps=DBL_EPSILON, labels=labels)))
    try:
        if K == 2:
            auc = metrics.roc_auc_score(y == 1, proba[:, 1])
        else:
            auc = metrics.roc_auc_score(y, proba, multi_class="ovr", average="macro", labels=labels)
    except ValueError:
        auc = None                           # a class without positives or negatives
    if auc_defined:
        check("%s: roc_auc %.6f" % (tag, ev["roc_auc"] or float("nan")), absdiff(ev["roc_auc"], auc))
    else:
        check("%s: roc_auc is NULL where sklearn has none (got %s)" % (tag, ev["roc_auc"]),
              ev["roc_auc"] is None and auc is None)
    check("%s: macro f1 %.6f" % (tag, ev["f1"] or float("nan")),
          absdiff(ev["f1"], metrics.f1_score(y, p, average="macro", labels=labels, zero_division=0)))
    prec, rec, f1, _ = metrics.precision_recall_fscore_support(y, p, labels=labels, zero_division=0)
    for name, got, want in (("precision", ev["class_precision"], prec),
                            ("recall", ev["class_recall"], rec), ("f1", ev["class_f1"], f1)):
        check("%s: class_%s (%d classes)" % (tag, name, K),
              got is not None and len(got) == K and absdiff(got, want) <= TOL)
    cm = metrics.confusion_matrix(y, p, labels=labels)
    got = np.array(ev["confusion"]) if ev["confusion"] is not None else None
    check("%s: confusion %dx%d equals sklearn's (trace %d)" % (tag, K, K, np.trace(cm)),
          got is not None and got.shape == (K, K) and np.array_equal(got, cm))
    check("%s: r2, rmse and mae are NULL" % tag, ev["r2"] is None and ev["rmse"] is None and ev["mae"] is None)


def check_regression(cur, model, table, features_sql, truth):
    cur.execute("SELECT unlearn_predict(%s, x) FROM (SELECT id, %s AS x FROM %s) t ORDER BY id"
                % ("%s", features_sql, table), (model,))
    pred = np.array([r[0] for r in cur.fetchall()])
    y = np.asarray(truth, dtype=float)
    ev = evaluate(cur, model, table)
    tag = "%s on %s" % (model, table)
    check("%s: rows = %d, skipped = 0 (got %s, %s)" % (tag, len(y), ev["rows"], ev["skipped"]),
          ev["rows"] == len(y) and ev["skipped"] == 0)
    check("%s: r2 %.6f" % (tag, ev["r2"] or float("nan")), absdiff(ev["r2"], metrics.r2_score(y, pred)))
    check("%s: rmse %.6f" % (tag, ev["rmse"] or float("nan")),
          absdiff(ev["rmse"], math.sqrt(metrics.mean_squared_error(y, pred))))
    check("%s: mae %.6f" % (tag, ev["mae"] or float("nan")),
          absdiff(ev["mae"], metrics.mean_absolute_error(y, pred)))
    check("%s: classification columns are NULL" % tag,
          all(ev[c] is None for c in ("accuracy", "log_loss", "roc_auc", "f1", "classes",
                                      "class_precision", "class_recall", "class_f1", "confusion")))


def cleanup(cur):
    cur.execute("SELECT unlearn_drop(model) FROM unlearn.models WHERE model = ANY(%s)", (list(MODELS),))
    for t in TABLES:
        cur.execute("DROP TABLE IF EXISTS %s" % t)
    cur.execute("DELETE FROM unlearn.ledger WHERE model = ANY(%s)", (list(MODELS),))


def main():
    conn = psycopg2.connect("")
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("CREATE EXTENSION IF NOT EXISTS unlearn")
    cleanup(cur)

    # (1) binary: breast cancer, int {0, 1} label, one float8[] column; the
    # held-out table has its columns in another order and one more
    bx, by = load_cancer()
    test = np.arange(len(by)) % 3 == 0
    cur.execute("CREATE TABLE cm_cancer_train (id int PRIMARY KEY, benign int, x float8[])")
    execute_values(cur, "INSERT INTO cm_cancer_train VALUES %s",
                   [(int(i), int(by[i]), list(bx[i])) for i in np.flatnonzero(~test)])
    cur.execute("CREATE TABLE cm_cancer_test (note text, x float8[], benign int, id int PRIMARY KEY)")
    execute_values(cur, "INSERT INTO cm_cancer_test VALUES %s",
                   [("held out", list(bx[i]), int(by[i]), int(i)) for i in np.flatnonzero(test)])
    cur.execute("SELECT * FROM unlearn_train('cm_cancer', 'cm_cancer_train', 'benign', '{x}', sigma => 0.5)")
    check_classifier(cur, "cm_cancer", "cm_cancer_test", "x", [str(v) for v in by[test]], "held out")
    check_classifier(cur, "cm_cancer", "cm_cancer_train", "x", [str(v) for v in by[~test]], "own table")

    # tied scores: every held-out row twice, the copy of each row with an
    # even id carrying the other label
    cur.execute("CREATE TABLE cm_cancer_ties AS "
                "SELECT 2 * id AS id, benign, x FROM cm_cancer_test UNION ALL "
                "SELECT 2 * id + 1, CASE WHEN id % 2 = 0 THEN 1 - benign ELSE benign END, x FROM cm_cancer_test")
    ties = []
    for i in np.flatnonzero(test):
        ties += [str(by[i]), str(1 - by[i] if i % 2 == 0 else by[i])]
    check_classifier(cur, "cm_cancer", "cm_cancer_ties", "x", ties, "held out")

    # a held-out label that is no class of the model
    cur.execute("CREATE TABLE cm_bad AS SELECT id, benign, x FROM cm_cancer_test")
    cur.execute("UPDATE cm_bad SET benign = 2 WHERE id = (SELECT max(id) FROM cm_bad)")
    try:
        cur.execute("SELECT * FROM unlearn_evaluate('cm_cancer', 'cm_bad')")
        code = None
    except psycopg2.Error as e:
        code = e.pgcode
    check("cm_cancer on cm_bad (label 2 is no class): SQLSTATE 22000 (got %s)" % code, code == "22000")

    # (2a) one-vs-rest: iris, text label, four separate float8 columns
    ix, iy = load_iris()
    test = np.arange(len(iy)) % 3 == 0
    cols = "sepal_length float8, sepal_width float8, petal_length float8, petal_width float8"
    cur.execute("CREATE TABLE cm_iris_train (id int PRIMARY KEY, species text, %s)" % cols)
    execute_values(cur, "INSERT INTO cm_iris_train VALUES %s",
                   [(int(i), iy[i], *map(float, ix[i])) for i in np.flatnonzero(~test)])
    cur.execute("CREATE TABLE cm_iris_test (%s, species text, id int PRIMARY KEY)" % cols)
    execute_values(cur, "INSERT INTO cm_iris_test VALUES %s",
                   [(*map(float, ix[i]), iy[i], int(i)) for i in np.flatnonzero(test)])
    cur.execute("SELECT * FROM unlearn_train('cm_iris', 'cm_iris_train', 'species', "
                "'{sepal_length, sepal_width, petal_length, petal_width}', sigma => 0.5)")
    check_classifier(cur, "cm_iris", "cm_iris_test",
                     "ARRAY[sepal_length, sepal_width, petal_length, petal_width]",
                     [iy[i] for i in np.flatnonzero(test)], "held out")
    cur.execute("CREATE TABLE cm_iris_one AS SELECT * FROM cm_iris_test WHERE species = 'versicolor'")
    check_classifier(cur, "cm_iris", "cm_iris_one",
                     "ARRAY[sepal_length, sepal_width, petal_length, petal_width]",
                     [iy[i] for i in np.flatnonzero(test) if iy[i] == "versicolor"], "held out",
                     auc_defined=False)

    # (2b) one-vs-rest: the ten digits, int label, one float8[] column
    dx, dy = load_digits()
    test = np.arange(len(dy)) % 4 == 0
    for t, sel in (("cm_digits_train", ~test), ("cm_digits_test", test)):
        cur.execute("CREATE TABLE %s (id int PRIMARY KEY, label int, pixels float8[])" % t)
        execute_values(cur, "INSERT INTO %s VALUES %%s" % t,
                       [(int(i), int(dy[i]), list(dx[i])) for i in np.flatnonzero(sel)])
    cur.execute("SELECT * FROM unlearn_train('cm_digits', 'cm_digits_train', 'label', '{pixels}', sigma => 0.5)")
    check_classifier(cur, "cm_digits", "cm_digits_test", "pixels", [str(v) for v in dy[test]], "held out")

    # (3) least squares: diabetes, ten separate columns of mixed types; the
    # held-out label is an integer column (the targets are whole numbers)
    xs, ys = load_diabetes()
    test = np.arange(len(ys)) % 4 == 0
    names = ["age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6"]
    types = ["int", "smallint", "float8", "numeric", "int", "float8", "float8", "float8", "float8", "int"]
    cols = ", ".join("%s %s" % c for c in zip(names, types))

    def typed(i):
        return [int(v) if t in ("int", "smallint") else float(v) for v, t in zip(xs[i], types)]

    cur.execute("CREATE TABLE cm_diab_train (id int PRIMARY KEY, %s, y float8)" % cols)
    execute_values(cur, "INSERT INTO cm_diab_train VALUES %s",
                   [(int(i), *typed(i), float(ys[i])) for i in np.flatnonzero(~test)])
    cur.execute("CREATE TABLE cm_diab_test (y int, %s, id int PRIMARY KEY)" % cols)
    execute_values(cur, "INSERT INTO cm_diab_test VALUES %s",
                   [(int(ys[i]), *typed(i), int(i)) for i in np.flatnonzero(test)])
    cur.execute("SELECT * FROM unlearn_train('cm_diab', 'cm_diab_train', 'y', %s, loss => 'squared', sigma => 0.5)",
                (names,))
    check_regression(cur, "cm_diab", "cm_diab_test", "ARRAY[%s]::float8[]" % ", ".join(names), ys[test])

    cleanup(cur)
    print("%d failed" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
