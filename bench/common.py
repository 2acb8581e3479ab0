"""Shared helpers of the unlearn benchmarks (bench/*.py).

Run the benchmarks through bench/run, which starts a throw-away PostgreSQL
and loads the data; the connection comes from the libpq environment
variables (PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE).

Only Debian's /usr/bin/python3 is supported (numpy, scipy, sklearn, psycopg2
from Debian packages).
"""

import io
import os
import statistics
import struct
import sys
import threading
import time

import numpy as np
import psycopg2
from psycopg2 import sql


# ---------------------------------------------------------------------------
# Connections and small SQL helpers
# ---------------------------------------------------------------------------

def connect(autocommit=True):
    conn = psycopg2.connect(os.environ.get("UNLEARN_BENCH_DSN", ""))
    conn.autocommit = autocommit
    return conn


def one(conn, query, args=None):
    with conn.cursor() as cur:
        cur.execute(query, args)
        row = cur.fetchone()
    return None if row is None else (row[0] if len(row) == 1 else row)


def execute(conn, query, args=None):
    with conn.cursor() as cur:
        cur.execute(query, args)
        if cur.description is not None:
            return cur.fetchall()
    return None


def timed(conn, query, args=None):
    """Wall time of one statement as the client sees it (localhost)."""
    with conn.cursor() as cur:
        t0 = time.perf_counter()
        cur.execute(query, args)
        if cur.description is not None:
            cur.fetchall()
        return time.perf_counter() - t0


def ensure_extension(conn):
    execute(conn, "CREATE EXTENSION IF NOT EXISTS unlearn")
    return one(conn, "SELECT extversion FROM pg_extension WHERE extname = 'unlearn'")


def fresh_copy(conn, table, source, select="*"):
    """table := a copy of source (select: its column list) with a primary
    key on id, vacuumed, and no model on it (models on an older table are
    dropped first)."""
    for (name,) in execute(conn, "SELECT model FROM unlearn.models WHERE source::text = %s",
                           (table,)):
        execute(conn, "SELECT unlearn_drop(%s)", (name,))
    execute(conn, "DROP TABLE IF EXISTS %s" % table)
    execute(conn, "CREATE TABLE %s AS SELECT %s FROM %s" % (table, select, source))
    execute(conn, "ALTER TABLE %s ADD PRIMARY KEY (id)" % table)
    execute(conn, "VACUUM ANALYZE %s" % table)


def model_row(conn, model):
    """The model's catalog row as a dict (None if it does not exist)."""
    with conn.cursor() as cur:
        cur.execute("SELECT * FROM unlearn.models WHERE model = %s", (model,))
        row = cur.fetchone()
        if row is None:
            return None
        return dict(zip([c.name for c in cur.description], row))


def coef(conn, model):
    return np.array(one(conn, "SELECT unlearn_coef(%s)", (model,)), dtype=np.float64)


def residual(conn, model):
    return np.array(one(conn, "SELECT unlearn_residual(%s)", (model,)), dtype=np.float64)


def server_settings(conn):
    rows = execute(conn, """SELECT name, setting, unit FROM pg_settings
        WHERE name IN ('shared_buffers', 'work_mem', 'maintenance_work_mem', 'fsync',
                       'synchronous_commit', 'max_wal_size', 'wal_level', 'autovacuum',
                       'max_parallel_workers_per_gather', 'jit')
        ORDER BY name""")
    return ", ".join("%s=%s%s" % (n, s, u or "") for n, s, u in rows)


# ---------------------------------------------------------------------------
# Export: binary COPY of (id, label, float8[]) rows parsed with numpy
# ---------------------------------------------------------------------------

PGCOPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"


def export_rows(conn, table, label="is_shirt", features="pixels"):
    """Fetch id, label and the feature array of every row of table, ordered
    by id, with one binary COPY parsed by a numpy structured dtype (no
    per-value Python work).  Returns (ids int64[n], labels bool[n],
    X float64[n, d])."""
    ident = sql.Identifier(table)
    d = one(conn, sql.SQL("SELECT min(cardinality({f})), max(cardinality({f})) FROM {t}").format(
        f=sql.Identifier(features), t=ident))
    if d is None or d[0] != d[1] or d[0] is None:
        raise RuntimeError("%s.%s: arrays of varying length %s" % (table, features, d))
    d = d[0]
    query = sql.SQL("COPY (SELECT {i}::int8, {l}::bool, {f}::float8[] FROM {t} ORDER BY {i}) "
                    "TO STDOUT (FORMAT binary)").format(
        i=sql.Identifier("id"), l=sql.Identifier(label), f=sql.Identifier(features), t=ident)
    buf = io.BytesIO()
    with conn.cursor() as cur:
        cur.copy_expert(query.as_string(conn), buf)
    data = buf.getbuffer()
    if bytes(data[:11]) != PGCOPY_SIGNATURE:
        raise RuntimeError("unexpected COPY header")
    ext = struct.unpack(">i", data[15:19])[0]
    start = 19 + ext
    dtype = np.dtype([("nf", ">i2"), ("l0", ">i4"), ("id", ">i8"),
                      ("l1", ">i4"), ("lab", "u1"),
                      ("l2", ">i4"), ("hdr", ">i4", (5,)),
                      ("x", [("len", ">i4"), ("v", ">f8")], (d,))])
    body = len(data) - start - 2
    if body % dtype.itemsize != 0:
        raise RuntimeError("COPY rows are not of fixed width (NULLs?)")
    rec = np.frombuffer(data, dtype=dtype, count=body // dtype.itemsize, offset=start)
    ok = ((rec["nf"] == 3).all() and (rec["l0"] == 8).all() and (rec["l1"] == 1).all()
          and (rec["l2"] == 20 + 12 * d).all() and (rec["hdr"][:, 0] == 1).all()
          and (rec["hdr"][:, 1] == 0).all() and (rec["hdr"][:, 3] == d).all()
          and (rec["x"]["len"] == 8).all())
    if not ok:
        raise RuntimeError("unexpected binary COPY layout")
    ids = rec["id"].astype(np.int64)
    labels = rec["lab"].astype(bool)
    X = rec["x"]["v"].astype(np.float64)
    return ids, labels, X


def standardize_grid(X, pooled=True):
    """The extension's 'standardize' centre and spread (src/column_map.c):
    s = 2^round(log2 sd*), c = (s/4) round(mean / (s/4)), sd* = max(sd,
    2^-20 max(|mean|, 1)); one pair for an array column (pooled), else one
    per column."""
    cols = [X.ravel()] if pooled else [X[:, j] for j in range(X.shape[1])]
    centre, spread = [], []
    for v in cols:
        mean = float(np.mean(v, dtype=np.longdouble))
        sd = float(np.sqrt(np.mean((v.astype(np.longdouble) - mean) ** 2)))
        sd = max(sd, 2.0 ** -20 * max(abs(mean), 1.0))
        e = np.log2(sd)
        s = 2.0 ** int(np.sign(e) * np.floor(abs(e) + 0.5))
        h = s / 4
        centre.append(h * float(np.sign(mean / h) * np.floor(abs(mean / h) + 0.5)))
        spread.append(s)
    return np.array(centre), np.array(spread)


def row_map(X, centre=None, spread=None, scale=None):
    """The extension's row map (src/column_map.c): z = ((x - c) / s, 1),
    x -> z / max(D, ||z||), D = sqrt(p).  centre and spread: one value (an
    array column) or one per column; None: the identity.  scale: D (from
    the catalog), by default sqrt(d + 1).  Returns (Xa, D)."""
    n, d = X.shape
    Xa = np.empty((n, d + 1), dtype=np.float64)
    Xa[:, :d] = X
    if centre is not None:
        c = np.asarray(centre, dtype=np.float64)
        s = np.asarray(spread, dtype=np.float64)
        Xa[:, :d] = np.clip((X - (c if c.size > 1 else c[0])) / (s if s.size > 1 else s[0]), -1e150, 1e150)
    Xa[:, d] = 1.0
    D = float(np.sqrt(d + 1)) if scale is None else float(scale)
    norms = np.sqrt(np.einsum("ij,ij->i", Xa, Xa))
    Xa /= np.maximum(D, norms)[:, None]
    return Xa, D


# ---------------------------------------------------------------------------
# Logistic objective  L(w) = sum_i log(1 + exp(-y_i w.x_i)) + (Lambda/2)||w||^2
# ---------------------------------------------------------------------------

def sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def gradient(w, Xa, y, reg, b=None):
    """Gradient of L_b at w: sum_i (sigma(y_i z_i) - 1) y_i x_i + Lambda w (+ b)."""
    z = Xa @ w
    g = Xa.T @ ((sigmoid(y * z) - 1.0) * y) + reg * w
    if b is not None:
        g = g + b
    return g


def rel_grad(w, Xa, y, reg):
    """||grad L(w)|| / ||grad L(0)|| (sigma = 0: no noise term)."""
    g0 = gradient(np.zeros(Xa.shape[1]), Xa, y, reg)
    return float(np.linalg.norm(gradient(w, Xa, y, reg)) / np.linalg.norm(g0))


def newton_reference(Xa, y, reg, tol=1e-15, max_iter=50):
    """Exact minimiser by Newton's method (reference, not timed)."""
    p = Xa.shape[1]
    w = np.zeros(p)
    g0 = np.linalg.norm(gradient(w, Xa, y, reg))
    best = (np.inf, w)
    for _ in range(max_iter):
        z = Xa @ w
        s = sigmoid(y * z)
        g = Xa.T @ ((s - 1.0) * y) + reg * w
        r = np.linalg.norm(g) / g0
        if r < best[0]:
            best = (r, w.copy())
        if r < tol:
            break
        H = (Xa * (s * (1.0 - s))[:, None]).T @ Xa
        H[np.diag_indices(p)] += reg
        w = w - np.linalg.solve(H, g)
    return best[1], best[0]


def labels_to_pm1(labels, positive):
    """labels: bool array; positive: the label value (bool) that is +1."""
    return np.where(labels == positive, 1.0, -1.0)


def positive_label(conn, model, table, Xa, ids, labels, w):
    """Which label value the model treats as the positive class: ask
    unlearn_predict_class for the row with the largest margin w.x (the
    model's coef and our row map) and compare its answer with that row's
    label, read back as text the same way.  Returns (positive bool,
    evidence string)."""
    z = Xa @ w
    hi, lo = int(np.argmax(z)), int(np.argmin(z))
    q = sql.SQL("SELECT unlearn_predict_class(%s, pixels), is_shirt::text, is_shirt "
                "FROM {} WHERE id = %s").format(sql.Identifier(table))
    with conn.cursor() as cur:
        cur.execute(q, (model, int(ids[hi])))
        cls_hi, _, lab_hi = cur.fetchone()
        cur.execute(q, (model, int(ids[lo])))
        cls_lo, _, lab_lo = cur.fetchone()
    # the textual label predicted for the most positive margin is the positive class
    txt = {True: {"t", "true", "1", "yes", "on"}, False: {"f", "false", "0", "no", "off"}}
    pos = None
    for v in (True, False):
        if str(cls_hi).lower() in txt[v]:
            pos = v
    if pos is None:
        raise RuntimeError("cannot interpret predicted class %r" % (cls_hi,))
    return pos, "predict_class(max margin)=%s, predict_class(min margin)=%s" % (cls_hi, cls_lo)


# ---------------------------------------------------------------------------
# Backend memory
# ---------------------------------------------------------------------------

def proc_status(pid):
    """Memory fields of /proc/<pid>/status in bytes (root can read the
    postgres backend's)."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k.startswith(("Vm", "Rss")):
                parts = v.split()
                if len(parts) == 2 and parts[1] == "kB":
                    out[k] = int(parts[0]) * 1024
    return out


class RssSampler:
    """Polls /proc/<pid>/status every `interval` seconds in a thread and keeps
    the peak of RssAnon (private memory) and VmRSS."""

    def __init__(self, pid, interval=0.002):
        self.pid, self.interval = pid, interval
        self.peak_anon = 0
        self.peak_rss = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            try:
                st = proc_status(self.pid)
            except OSError:
                break
            self.peak_anon = max(self.peak_anon, st.get("RssAnon", 0))
            self.peak_rss = max(self.peak_rss, st.get("VmRSS", 0))
            time.sleep(self.interval)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------

def median(xs):
    return statistics.median(xs) if xs else float("nan")


def fmt(v, spec):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    if isinstance(v, float) and (v != v):
        return "nan"
    return format(v, spec)


def table(headers, rows, specs=None):
    """Print an aligned text table; specs: format spec per column."""
    specs = specs or [""] * len(headers)
    cells = [[fmt(v, s) for v, s in zip(r, specs)] for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h)
              for i, h in enumerate(headers)]
    line = "  ".join(h.rjust(w) for h, w in zip(headers, widths))
    print(line)
    print("  ".join("-" * w for w in widths))
    for c in cells:
        print("  ".join(x.rjust(w) for x, w in zip(c, widths)))
    sys.stdout.flush()


def banner(title):
    print()
    print("=" * len(title))
    print(title)
    print("=" * len(title))
    sys.stdout.flush()


def preamble(conn, title):
    """Create the extension, print the banner and what the numbers below
    were measured on (machine, build, server, settings); returns the
    extension's version."""
    version = ensure_extension(conn)
    banner(title)
    print("unlearn", version, "|", machine_info())
    print("build:", build_info())
    print("server:", one(conn, "SELECT version()"))
    print("settings:", server_settings(conn))
    return version


def build_info():
    """The repository commit and the installed library, since the extension
    under test is whatever `make install` put in pkglibdir last."""
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(["git", "-C", root, "log", "-1", "--format=%h %cd %s",
                               "--date=format:%Y-%m-%d %H:%M"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "src", "sql"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        head, dirty = "?", ""
    try:
        libdir = subprocess.run(["pg_config", "--pkglibdir"], capture_output=True, text=True,
                                check=True).stdout.strip()
        so = os.path.join(libdir, "unlearn.so")
        installed = "%s installed %s" % (so, time.strftime("%Y-%m-%d %H:%M:%S",
                                                            time.localtime(os.path.getmtime(so))))
    except (OSError, subprocess.CalledProcessError):
        installed = "unlearn.so: ?"
    return "repo HEAD %s%s; %s" % (head, " (src/ or sql/ modified)" if dirty else "", installed)


def library_mtime():
    import subprocess
    try:
        libdir = subprocess.run(["pg_config", "--pkglibdir"], capture_output=True, text=True,
                                check=True).stdout.strip()
        return os.path.getmtime(os.path.join(libdir, "unlearn.so"))
    except (OSError, subprocess.CalledProcessError):
        return None


def warn_if_reinstalled(mtime0):
    print()
    print("load average at the end: %.2f %.2f %.2f (2 cores; other work on the machine "
          "distorts the timings)" % os.getloadavg())
    if library_mtime() != mtime0:
        print()
        print("WARNING: unlearn.so was reinstalled while this benchmark ran: new connections "
              "used the new library; rerun for consistent numbers")


def machine_info():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = 0
    try:
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) / 1024 / 1024
    except (OSError, ValueError, IndexError):
        pass
    import sklearn
    import scipy
    return ("%s, %d cores, %.0f GiB, load average %.2f; numpy %s, scipy %s, sklearn %s; %s"
            % (cpu, os.cpu_count(), mem, os.getloadavg()[0], np.__version__, scipy.__version__,
               sklearn.__version__, time.strftime("%Y-%m-%d %H:%M %Z")))
