#!/usr/bin/python3
"""Check scripts/load_data.py against the raw files, read independently.

Loads digits, diabetes, diamonds, fertility and the Fashion-MNIST
T-shirt/Shirt tables into a scratch database (created and dropped here) of
the server named by the libpq environment, and compares counts, sums and
sample rows with what this script reads from the source files itself.
Set UNLEARN_CHECK_FULL=1 to also load and check the 70,000-row fashion
tables (about 20 s more).  Exits non-zero on the first mismatch.
"""

import csv
import gzip
import os
import subprocess
import sys

import psycopg2

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOADER = os.path.join(REPO, "scripts", "load_data.py")
SK = "/usr/lib/python3/dist-packages/sklearn/datasets/data"
FASHION = "/usr/share/datasets/fashion-mnist"
SHARED = os.environ.get("UNLEARN_SHARED_DATA") or os.path.join(os.path.dirname(REPO), "shared", "data")
DB = "unlearn_check_load_data"
# diamonds and fertility are benchmark data beside the repository
# (../shared/data), absent from a user's clone: checked when present
HAVE_SHARED = all(os.path.exists(os.path.join(SHARED, f)) for f in ("diamonds.csv", "fertility.csv"))

failures = 0


def check(what, got, want):
    global failures
    ok = got == want if not isinstance(want, float) else abs(got - want) <= 1e-9 * max(1.0, abs(want))
    print("%s %s: got %r, want %r" % ("ok  " if ok else "FAIL", what, got, want))
    if not ok:
        failures += 1


def one(cur, q, *args):
    cur.execute(q, args)
    return cur.fetchone()


def idx_image(split, i):
    """Image i (0-based) of a split, as a list of 784 ints, read by offset."""
    with gzip.open(os.path.join(FASHION, "%s-images-idx3-ubyte.gz" % split), "rb") as f:
        f.seek(16 + 784 * i)
        return list(f.read(784))


def idx_labels(split):
    with gzip.open(os.path.join(FASHION, "%s-labels-idx1-ubyte.gz" % split), "rb") as f:
        return list(f.read()[8:])


def main():
    admin = psycopg2.connect("")
    admin.autocommit = True
    acur = admin.cursor()
    acur.execute("DROP DATABASE IF EXISTS " + DB)
    acur.execute("CREATE DATABASE " + DB)
    try:
        sets = ["digits", "diabetes"] + (["diamonds", "fertility"] if HAVE_SHARED else []) + \
            ["fashion" if os.environ.get("UNLEARN_CHECK_FULL") else "tshirt_shirt"]
        if not HAVE_SHARED:
            print("skip diamonds and fertility: no %s (benchmark data only)" % SHARED)
        env = dict(os.environ, PGDATABASE=DB)
        subprocess.run(["/usr/bin/python3", LOADER] + sets, env=env, check=True)
        conn = psycopg2.connect(dbname=DB)
        try:
            run_checks(conn.cursor())
        finally:
            conn.close()
    finally:
        acur.execute("DROP DATABASE IF EXISTS " + DB)
        admin.close()
    print("%d mismatches" % failures)
    return 1 if failures else 0


def run_checks(cur):
    # digits: 64 pixels then the label
    with gzip.open(os.path.join(SK, "digits.csv.gz"), "rt") as f:
        rows = [list(map(float, r)) for r in csv.reader(f)]
    check("digits rows", one(cur, "SELECT count(*) FROM digits")[0], len(rows))
    check("digits label sum", one(cur, "SELECT sum(label) FROM digits")[0], int(sum(r[64] for r in rows)))
    check("digits pixel sum", one(cur, "SELECT sum(p) FROM digits, unnest(pixels) p")[0],
          sum(sum(r[:64]) for r in rows))
    for i in (1, 1000, 1797):
        check("digits row %d" % i, list(one(cur, "SELECT label, pixels FROM digits WHERE id = %s", i)),
              [int(rows[i - 1][64]), rows[i - 1][:64]])

    # diabetes: raw features and target in two files
    with gzip.open(os.path.join(SK, "diabetes_data_raw.csv.gz"), "rt") as f:
        x = [list(map(float, line.split())) for line in f]
    with gzip.open(os.path.join(SK, "diabetes_target.csv.gz"), "rt") as f:
        y = [float(line) for line in f]
    check("diabetes rows", one(cur, "SELECT count(*) FROM diabetes")[0], len(x))
    check("diabetes target sum", one(cur, "SELECT sum(target) FROM diabetes")[0], sum(y))
    for i in (1, 442):
        check("diabetes row %d" % i,
              list(one(cur, "SELECT age, sex, bmi, bp, s1, s2, s3, s4, s5, s6, target "
                            "FROM diabetes WHERE id = %s", i)),
              x[i - 1] + [y[i - 1]])

    if HAVE_SHARED:
        check_shared(cur)

    # Fashion-MNIST T-shirt/top (0) vs Shirt (6), train split; ids are 1-based
    labels = idx_labels("train")
    pair = [i for i, l in enumerate(labels) if l in (0, 6)]
    check("tshirt_shirt rows", one(cur, "SELECT count(*) FROM tshirt_shirt")[0], len(pair))
    check("tshirt_shirt shirts", one(cur, "SELECT count(*) FROM tshirt_shirt WHERE is_shirt")[0],
          sum(labels[i] == 6 for i in pair))
    check("tshirt_shirt id sum", one(cur, "SELECT sum(id) FROM tshirt_shirt")[0], sum(i + 1 for i in pair))
    check("tshirt_shirt_pooled rows", one(cur, "SELECT count(*) FROM tshirt_shirt_pooled")[0], len(pair))
    for i in (pair[0], pair[len(pair) // 2], pair[-1]):
        img = idx_image("train", i)
        got = one(cur, "SELECT is_shirt, pixels FROM tshirt_shirt WHERE id = %s", i + 1)
        check("tshirt_shirt id %d" % (i + 1), list(got), [labels[i] == 6, [float(v) for v in img]])
        pooled = [sum(img[(2 * r + a) * 28 + 2 * c + b] for a in (0, 1) for b in (0, 1)) / 4.0
                  for r in range(14) for c in range(14)]
        check("tshirt_shirt_pooled id %d" % (i + 1),
              one(cur, "SELECT pixels FROM tshirt_shirt_pooled WHERE id = %s", i + 1)[0], pooled)

    if os.environ.get("UNLEARN_CHECK_FULL"):
        test_labels = idx_labels("t10k")
        check("fashion rows", one(cur, "SELECT count(*) FROM fashion")[0], 70000)
        check("fashion label sum", one(cur, "SELECT sum(label) FROM fashion")[0],
              sum(labels) + sum(test_labels))
        got = one(cur, "SELECT label, pixels FROM fashion WHERE id = 60001")
        check("fashion id 60001 (t10k #0)", list(got),
              [test_labels[0], [float(v) for v in idx_image("t10k", 0)]])
        check("fashion_pooled rows", one(cur, "SELECT count(*) FROM fashion_pooled")[0], 70000)


def check_shared(cur):
    # diamonds
    with open(os.path.join(SHARED, "diamonds.csv"), newline="") as f:
        d = list(csv.DictReader(f))
    check("diamonds rows", one(cur, "SELECT count(*) FROM diamonds")[0], len(d))
    check("diamonds price sum", one(cur, "SELECT sum(price) FROM diamonds")[0],
          float(sum(int(r["price"]) for r in d)))
    check("diamonds Ideal", one(cur, "SELECT count(*) FROM diamonds WHERE cut = 'Ideal'")[0],
          sum(r["cut"] == "Ideal" for r in d))
    r = d[-1]
    check("diamonds last row",
          list(one(cur, "SELECT carat, depth, table_pct, price, x, y, z, cut, color, clarity "
                        "FROM diamonds WHERE id = %s", len(d))),
          [float(r[k]) for k in ("carat", "depth", "table", "price", "x", "y", "z")]
          + [r["cut"], r["color"], r["clarity"]])

    # fertility
    with open(os.path.join(SHARED, "fertility.csv"), newline="") as f:
        fe = list(csv.DictReader(f))
    check("fertility rows", one(cur, "SELECT count(*) FROM fertility")[0], len(fe))
    check("fertility morekids", one(cur, "SELECT count(*) FROM fertility WHERE morekids")[0],
          sum(r["morekids"] == "yes" for r in fe))
    check("fertility boy1", one(cur, "SELECT count(*) FROM fertility WHERE boy1")[0],
          sum(r["gender1"] == "male" for r in fe))
    check("fertility boy2", one(cur, "SELECT count(*) FROM fertility WHERE boy2")[0],
          sum(r["gender2"] == "male" for r in fe))
    check("fertility work sum", one(cur, "SELECT sum(work) FROM fertility")[0],
          float(sum(int(r["work"]) for r in fe)))
    r = fe[1]
    check("fertility row 2",
          list(one(cur, "SELECT morekids, boy1, boy2, age, afam, hispanic, other, work "
                        "FROM fertility WHERE id = 2")),
          [r["morekids"] == "yes", r["gender1"] == "male", r["gender2"] == "male",
           float(r["age"]), r["afam"] == "yes", r["hispanic"] == "yes", r["other"] == "yes",
           float(r["work"])])


if __name__ == "__main__":
    sys.exit(main())
