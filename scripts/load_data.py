#!/usr/bin/python3
"""Load real data sets into PostgreSQL for unlearn's demo, tests and benchmarks.

Run with Debian's interpreter, /usr/bin/python3 (it has numpy and psycopg2):

    /usr/bin/python3 scripts/load_data.py fashion digits diabetes
    /usr/bin/python3 scripts/load_data.py all

The database is chosen by the usual libpq environment variables (PGHOST,
PGPORT, PGUSER, PGDATABASE, PGPASSWORD, ...), or by --dsn.

Data sets and the tables they create (each table is dropped and created
anew unless --skip-existing is given and the table already has rows):

  fashion   Fashion-MNIST (Debian package dataset-fashion-mnist).
            fashion(id int, label int, pixels float8[784])       70,000 rows
            fashion_pooled(id, label, pixels float8[196])         2x2 mean pooling
            tshirt_shirt(id int, is_shirt bool, pixels float8[784])
                classes 0 (T-shirt/top) and 6 (Shirt) of the TRAIN split,
                12,000 rows, is_shirt = (label = 6)
            tshirt_shirt_pooled(id, is_shirt, pixels float8[196])
            Ids 1..60000 are the train split in file order, 60001..70000 the
            t10k split; tshirt_shirt keeps the ids of fashion.
            Pixel values are the raw 0..255 intensities.
  tshirt_shirt  only the two tshirt_shirt tables (what scripts/demo needs).
  digits    sklearn's 8x8 digits (1797 rows):
            digits(id serial, label int, pixels float8[64])
  diabetes  sklearn's raw diabetes data (442 rows):
            diabetes(id serial, age, sex, bmi, bp, s1..s6, target float8)
  diamonds  ../shared/data/diamonds.csv (53,940 rows):
            diamonds(id serial, carat, depth, table_pct, price, x, y, z float8,
                     cut, color, clarity text)
  fertility ../shared/data/fertility.csv (254,654 rows):
            fertility(id serial, morekids bool, boy1 bool, boy2 bool,
                      age float8, afam bool, hispanic bool, other bool,
                      work float8)

The shared data directory is found relative to this repository
($repo/../shared/data); override it with --shared-data or the environment
variable UNLEARN_SHARED_DATA.

The large array tables are written with binary COPY, streamed in chunks, so
that loading all of Fashion-MNIST takes seconds and bounded memory.
"""

import argparse
import csv
import gzip
import io
import os
import struct
import sys
import time

import numpy as np
import psycopg2
from psycopg2 import sql

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FASHION_DIR = "/usr/share/datasets/fashion-mnist"
SKLEARN_DATA = "/usr/lib/python3/dist-packages/sklearn/datasets/data"

INT4OID = 23
FLOAT8OID = 701

TSHIRT = 0
SHIRT = 6


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def shared_data_dir(args):
    d = args.shared_data or os.environ.get("UNLEARN_SHARED_DATA")
    if not d:
        d = os.path.join(os.path.dirname(REPO), "shared", "data")
    return os.path.abspath(d)


# ---------------------------------------------------------------------------
# Reading the files
# ---------------------------------------------------------------------------

def read_idx(path):
    """Read a gzip'd IDX file (the MNIST format) into a numpy array."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    zero, dtype_code, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype_code != 0x08:
        raise ValueError("%s: not an unsigned-byte IDX file" % path)
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    offset = 4 + 4 * ndim
    count = int(np.prod(dims))
    if len(data) - offset != count:
        raise ValueError("%s: expected %d bytes of data, found %d"
                         % (path, count, len(data) - offset))
    return np.frombuffer(data, dtype=np.uint8, offset=offset).reshape(dims)


def read_fashion():
    parts = []
    for split in ("train", "t10k"):
        images = read_idx(os.path.join(FASHION_DIR, "%s-images-idx3-ubyte.gz" % split))
        labels = read_idx(os.path.join(FASHION_DIR, "%s-labels-idx1-ubyte.gz" % split))
        if images.shape[0] != labels.shape[0] or images.shape[1:] != (28, 28):
            raise ValueError("fashion-mnist %s: unexpected shapes %s, %s"
                             % (split, images.shape, labels.shape))
        parts.append((images, labels))
    images = np.concatenate([p[0] for p in parts])
    labels = np.concatenate([p[1] for p in parts]).astype(np.int32)
    n_train = parts[0][0].shape[0]
    return images, labels, n_train


def pool2x2(images):
    """2x2 mean pooling of (n, 28, 28) images into (n, 196) float8 rows."""
    n, h, w = images.shape
    x = images.astype(np.float64).reshape(n, h // 2, 2, w // 2, 2)
    return x.mean(axis=(2, 4)).reshape(n, (h // 2) * (w // 2))


# ---------------------------------------------------------------------------
# Binary COPY of fixed-width rows
# ---------------------------------------------------------------------------

COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
COPY_TRAILER = struct.pack(">h", -1)


class FixedRowCopy:
    """Builds PostgreSQL binary COPY data for rows whose columns all have a
    fixed width: int4, bool, float8 and one-dimensional float8[] without
    NULLs.  Rows are laid out as one numpy structured array, so no Python
    loop touches individual values."""

    def __init__(self, columns):
        # columns: list of (kind, length) with kind in int4/bool/float8/float8[]
        self.columns = columns
        fields = [("nfields", ">i2")]
        for i, (kind, length) in enumerate(columns):
            if kind == "int4":
                fields += [("l%d" % i, ">i4"), ("v%d" % i, ">i4")]
            elif kind == "bool":
                fields += [("l%d" % i, ">i4"), ("v%d" % i, "u1")]
            elif kind == "float8":
                fields += [("l%d" % i, ">i4"), ("v%d" % i, ">f8")]
            elif kind == "float8[]":
                fields += [("l%d" % i, ">i4"),
                           ("h%d" % i, ">i4", (5,)),
                           ("e%d" % i, [("len", ">i4"), ("val", ">f8")], (length,))]
            else:
                raise ValueError(kind)
        self.dtype = np.dtype(fields)

    def encode(self, values):
        """values: list of numpy arrays, one per column, all of n rows."""
        n = len(values[0])
        rec = np.empty(n, dtype=self.dtype)
        rec["nfields"] = len(self.columns)
        for i, ((kind, length), v) in enumerate(zip(self.columns, values)):
            if kind == "int4":
                rec["l%d" % i] = 4
                rec["v%d" % i] = v
            elif kind == "bool":
                rec["l%d" % i] = 1
                rec["v%d" % i] = np.asarray(v, dtype=bool)
            elif kind == "float8":
                rec["l%d" % i] = 8
                rec["v%d" % i] = v
            else:
                v = np.asarray(v, dtype=np.float64)
                if v.shape != (n, length):
                    raise ValueError("array column %d: shape %s, expected %s"
                                     % (i, v.shape, (n, length)))
                # array body: ndim, has-nulls flag, element type, dim, lower bound
                rec["l%d" % i] = 20 + 12 * length
                rec["h%d" % i] = (1, 0, FLOAT8OID, length, 1)
                rec["e%d" % i]["len"] = 8
                rec["e%d" % i]["val"] = v
        return rec.tobytes()


class ChunkReader(io.RawIOBase):
    """File-like object over an iterator of bytes chunks (for copy_expert)."""

    def __init__(self, chunks):
        self.chunks = iter(chunks)
        self.buf = b""
        self.pos = 0

    def readable(self):
        return True

    def read(self, size=-1):
        if self.pos >= len(self.buf):
            self.buf, self.pos = b"", 0
            for chunk in self.chunks:
                if chunk:
                    self.buf = chunk
                    break
        if size is None or size < 0:
            size = len(self.buf) - self.pos
        out = self.buf[self.pos:self.pos + size]
        self.pos += len(out)
        return out


def copy_binary(cur, table, colnames, columns, values, chunk_rows=2000):
    enc = FixedRowCopy(columns)
    n = len(values[0])

    def chunks():
        yield COPY_HEADER
        for start in range(0, n, chunk_rows):
            yield enc.encode([v[start:start + chunk_rows] for v in values])
        yield COPY_TRAILER

    query = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT binary)").format(
        sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, colnames)))
    cur.copy_expert(query.as_string(cur), ChunkReader(chunks()), size=1 << 20)


def copy_csv(cur, table, colnames, rows):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for r in rows:
        w.writerow(r)
    buf.seek(0)
    query = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT csv)").format(
        sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, colnames)))
    cur.copy_expert(query.as_string(cur), buf)


# ---------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------

def table_has_rows(cur, table):
    cur.execute("SELECT to_regclass(%s) IS NOT NULL", (table,))
    if not cur.fetchone()[0]:
        return False
    cur.execute(sql.SQL("SELECT EXISTS (SELECT 1 FROM {})").format(sql.Identifier(table)))
    return cur.fetchone()[0]


def recreate(cur, args, table, ddl):
    """Drop and create table; False if --skip-existing and it has rows."""
    if args.skip_existing and table_has_rows(cur, table):
        log("  %s: exists, skipped" % table)
        return False
    cur.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))
    cur.execute(sql.SQL("CREATE TABLE {} ({})").format(sql.Identifier(table), sql.SQL(ddl)))
    return True


def finish(conn, cur, table):
    cur.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(table)))
    cur.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table)))
    count = cur.fetchone()[0]
    conn.commit()
    log("  %s: %d rows" % (table, count))
    return count


def load_fashion(conn, args, full=True):
    images, labels, n_train = read_fashion()
    n = images.shape[0]
    ids = np.arange(1, n + 1, dtype=np.int32)
    flat = images.reshape(n, 28 * 28)
    pooled = pool2x2(images)
    train = np.arange(n) < n_train
    pair = train & ((labels == TSHIRT) | (labels == SHIRT))
    cur = conn.cursor()
    for table, x, d in (("fashion", flat, 784), ("fashion_pooled", pooled, 196)) if full else ():
        if recreate(cur, args, table, "id int PRIMARY KEY, label int NOT NULL, pixels float8[] NOT NULL"):
            copy_binary(cur, table, ["id", "label", "pixels"],
                        [("int4", None), ("int4", None), ("float8[]", d)],
                        [ids, labels, x])
            finish(conn, cur, table)
    for table, x, d in (("tshirt_shirt", flat, 784), ("tshirt_shirt_pooled", pooled, 196)):
        if recreate(cur, args, table, "id int PRIMARY KEY, is_shirt boolean NOT NULL, pixels float8[] NOT NULL"):
            copy_binary(cur, table, ["id", "is_shirt", "pixels"],
                        [("int4", None), ("bool", None), ("float8[]", d)],
                        [ids[pair], labels[pair] == SHIRT, x[pair]])
            finish(conn, cur, table)
    conn.commit()


def load_tshirt_shirt(conn, args):
    load_fashion(conn, args, full=False)


def load_digits(conn, args):
    with gzip.open(os.path.join(SKLEARN_DATA, "digits.csv.gz"), "rt") as f:
        data = np.loadtxt(f, delimiter=",", dtype=np.float64)
    if data.shape != (1797, 65):
        raise ValueError("digits: unexpected shape %s" % (data.shape,))
    cur = conn.cursor()
    if recreate(cur, args, "digits", "id serial PRIMARY KEY, label int NOT NULL, pixels float8[] NOT NULL"):
        copy_binary(cur, "digits", ["label", "pixels"],
                    [("int4", None), ("float8[]", 64)],
                    [data[:, 64].astype(np.int32), data[:, :64]])
        finish(conn, cur, "digits")


DIABETES_COLUMNS = ["age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6"]


def load_diabetes(conn, args):
    with gzip.open(os.path.join(SKLEARN_DATA, "diabetes_data_raw.csv.gz"), "rt") as f:
        x = np.loadtxt(f, dtype=np.float64)
    with gzip.open(os.path.join(SKLEARN_DATA, "diabetes_target.csv.gz"), "rt") as f:
        y = np.loadtxt(f, dtype=np.float64)
    if x.shape != (442, 10) or y.shape != (442,):
        raise ValueError("diabetes: unexpected shapes %s, %s" % (x.shape, y.shape))
    cur = conn.cursor()
    ddl = "id serial PRIMARY KEY, " + ", ".join("%s float8 NOT NULL" % c for c in DIABETES_COLUMNS) \
        + ", target float8 NOT NULL"
    if recreate(cur, args, "diabetes", ddl):
        cols = DIABETES_COLUMNS + ["target"]
        copy_binary(cur, "diabetes", cols, [("float8", None)] * 11,
                    [x[:, i] for i in range(10)] + [y])
        finish(conn, cur, "diabetes")


def read_shared_csv(args, name):
    path = os.path.join(shared_data_dir(args), name)
    if not os.path.exists(path):
        raise FileNotFoundError("%s not found (set --shared-data or UNLEARN_SHARED_DATA)" % path)
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def load_diamonds(conn, args):
    rows = read_shared_csv(args, "diamonds.csv")
    cur = conn.cursor()
    ddl = ("id serial PRIMARY KEY, carat float8 NOT NULL, depth float8 NOT NULL, "
           "table_pct float8 NOT NULL, price float8 NOT NULL, x float8 NOT NULL, "
           "y float8 NOT NULL, z float8 NOT NULL, cut text NOT NULL, "
           "color text NOT NULL, clarity text NOT NULL")
    if recreate(cur, args, "diamonds", ddl):
        copy_csv(cur, "diamonds",
                 ["carat", "depth", "table_pct", "price", "x", "y", "z", "cut", "color", "clarity"],
                 ([r["carat"], r["depth"], r["table"], r["price"], r["x"], r["y"], r["z"],
                   r["cut"], r["color"], r["clarity"]] for r in rows))
        finish(conn, cur, "diamonds")


def yes_no(v):
    if v not in ("yes", "no"):
        raise ValueError("expected yes/no, got %r" % v)
    return "t" if v == "yes" else "f"


def male_female(v):
    if v not in ("male", "female"):
        raise ValueError("expected male/female, got %r" % v)
    return "t" if v == "male" else "f"


def load_fertility(conn, args):
    rows = read_shared_csv(args, "fertility.csv")
    cur = conn.cursor()
    ddl = ("id serial PRIMARY KEY, morekids boolean NOT NULL, boy1 boolean NOT NULL, "
           "boy2 boolean NOT NULL, age float8 NOT NULL, afam boolean NOT NULL, "
           "hispanic boolean NOT NULL, other boolean NOT NULL, work float8 NOT NULL")
    if recreate(cur, args, "fertility", ddl):
        copy_csv(cur, "fertility",
                 ["morekids", "boy1", "boy2", "age", "afam", "hispanic", "other", "work"],
                 ([yes_no(r["morekids"]), male_female(r["gender1"]), male_female(r["gender2"]),
                   r["age"], yes_no(r["afam"]), yes_no(r["hispanic"]), yes_no(r["other"]),
                   r["work"]] for r in rows))
        finish(conn, cur, "fertility")


LOADERS = {
    "fashion": load_fashion,
    "tshirt_shirt": load_tshirt_shirt,
    "digits": load_digits,
    "diabetes": load_diabetes,
    "diamonds": load_diamonds,
    "fertility": load_fertility,
}


def main(argv=None):
    p = argparse.ArgumentParser(
        description="Load data sets into PostgreSQL (connection from libpq env vars).",
        epilog="data sets: %s, or all" % ", ".join(LOADERS))
    p.add_argument("datasets", nargs="+", choices=list(LOADERS) + ["all"], metavar="DATASET",
                   help="one or more of: %s, all" % ", ".join(LOADERS))
    p.add_argument("--dsn", default="", help="libpq connection string (default: environment)")
    p.add_argument("--shared-data", help="directory holding diamonds.csv and fertility.csv "
                   "(default: $UNLEARN_SHARED_DATA or <repo>/../shared/data)")
    p.add_argument("--skip-existing", action="store_true",
                   help="leave a table alone if it already exists and has rows")
    args = p.parse_args(argv)

    everything = [n for n in LOADERS if n != "tshirt_shirt"]  # fashion includes it
    names = everything if "all" in args.datasets else list(dict.fromkeys(args.datasets))
    conn = psycopg2.connect(args.dsn)
    try:
        for name in names:
            t0 = time.monotonic()
            log("loading %s ..." % name)
            LOADERS[name](conn, args)
            log("  done in %.1f s" % (time.monotonic() - t0))
    finally:
        conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
