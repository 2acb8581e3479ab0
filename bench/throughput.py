#!/usr/bin/python3
"""Throughput of concurrent single-row DML on a table with one logistic model,
against a plain copy of the same table, with pgbench.

Fashion-MNIST T-shirt/top vs Shirt (d = 784, n = 12,000).  Each of the
--clients pgbench clients owns a slice of the ids, so no two clients touch the
same row:

  delete  one statement per transaction: delete the lowest id of the client's
          slice (exactly one row each time);
  mixed   three statements per transaction, each its own transaction: delete
          the lowest id of the slice, update the label of its highest id, and
          insert a copy of that row under a new id.

Each script runs --transactions transactions per client on a fresh copy of the
table, with the model (unlearn_train with the defaults, sigma 10) and without
(a plain table), one after the other in this process.  The table holds rows
enough that it never falls below the model's p = 785.

Then where a statement's time goes under contention: one connection deletes
rows of its own slice with client_min_messages = debug1 while the other
clients run the delete script, and its DEBUG1 lines (load, update, write) are
set against the statement's wall time.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import common as C

SOURCE = "tshirt_shirt"
TABLE = "bench_tp"
SIGMA = 10.0

SCRIPTS = {
    "delete": ("""\\set lo :client_id * {slice} + 1
\\set hi :lo + {slice} - 1
DELETE FROM {table} WHERE id = (SELECT min(id) FROM {table} WHERE id BETWEEN :lo AND :hi);
""", 1),
    "mixed": ("""\\set lo :client_id * {slice} + 1
\\set hi :lo + {slice} - 1
DELETE FROM {table} WHERE id = (SELECT min(id) FROM {table} WHERE id BETWEEN :lo AND :hi);
UPDATE {table} SET is_shirt = NOT is_shirt WHERE id = (SELECT max(id) FROM {table} WHERE id BETWEEN :lo AND :hi);
INSERT INTO {table} (id, is_shirt, pixels)
SELECT nextval('{table}_extra'), is_shirt, pixels FROM {table}
WHERE id = (SELECT max(id) FROM {table} WHERE id BETWEEN :lo AND :hi);
""", 3),
}


def fresh_table(conn, with_model):
    # ids 1..n, so that each client's slice of ids holds rows
    C.fresh_copy(conn, TABLE, SOURCE, "(row_number() OVER (ORDER BY id))::int AS id, is_shirt, pixels")
    C.execute(conn, "DROP SEQUENCE IF EXISTS %s_extra" % TABLE)
    C.execute(conn, "CREATE SEQUENCE %s_extra START 1000000" % TABLE)
    if with_model:
        C.execute(conn, "SELECT count(*) FROM unlearn_train('tp', %s, 'is_shirt', '{pixels}', "
                  "sigma => %s)", (TABLE, SIGMA))
    C.execute(conn, "CHECKPOINT")


def pgbench(script, clients, transactions, slice_):
    text, statements = SCRIPTS[script]
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(text.format(slice=slice_, table=TABLE))
        path = f.name
    os.chmod(path, 0o644)
    try:
        out = subprocess.run([PGBENCH, "-n", "-f", path, "-c", str(clients), "-j", str(clients),
                              "-t", str(transactions), "-r"],
                             capture_output=True, text=True, check=False)
    finally:
        os.unlink(path)
    if out.returncode != 0:
        sys.stderr.write(out.stdout + out.stderr)
        raise RuntimeError("pgbench failed")
    tps = float(re.search(r"tps = ([0-9.]+)", out.stdout).group(1))
    latency = float(re.search(r"latency average = ([0-9.]+) ms", out.stdout).group(1))
    return tps * statements, latency / statements


def model_split(conn, clients, transactions, slice_):
    """The extension's DEBUG1 split of statements under contention: one
    connection deletes rows of its own slice with client_min_messages =
    debug1 while clients - 1 pgbench clients run the delete script."""
    fresh_table(conn, True)
    text, _ = SCRIPTS["delete"]
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(text.format(slice=slice_, table=TABLE))
        path = f.name
    os.chmod(path, 0o644)
    bench = subprocess.Popen([PGBENCH, "-n", "-f", path, "-c", str(clients - 1), "-j",
                              str(clients - 1), "-t", str(transactions)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    mine = C.connect()
    C.execute(mine, "SET client_min_messages = debug1")
    lo = (clients - 1) * slice_ + 1
    split = []
    try:
        for i in range(transactions // 2):
            del mine.notices[:]
            wall = C.timed(mine, "DELETE FROM %s WHERE id = %d" % (TABLE, lo + i)) * 1e3
            found = re.findall(r"lock and load ([0-9.]+) ms, update ([0-9.]+) ms, write ([0-9.]+) ms",
                               " ".join(mine.notices))
            if found:
                load, update, write = (float(v) for v in found[-1])
                split.append((wall, load, update, write, wall - load - update - write))
    finally:
        bench.wait()
        os.unlink(path)
    mine.close()
    return split


def main():
    global PGBENCH
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--transactions", type=int, default=400,
                    help="per client and script (the table must keep more than 785 rows)")
    ap.add_argument("--scripts", default="delete,mixed")
    args = ap.parse_args()
    PGBENCH = shutil.which("pgbench") or "/usr/lib/postgresql/15/bin/pgbench"
    conn = C.connect()
    C.preamble(conn, "throughput: %d pgbench clients, single-row DML, model against plain table"
               % args.clients)
    n = C.one(conn, "SELECT count(*) FROM %s" % SOURCE)
    slice_ = n // args.clients
    if args.transactions > slice_ - 1 or n - args.clients * args.transactions < 800:
        sys.exit("throughput.py: --transactions too large for %d rows" % n)
    rows = []
    for script in args.scripts.split(","):
        result = {}
        # interleaved: plain, model, plain, model
        for rep in range(2):
            for with_model in (False, True):
                fresh_table(conn, with_model)
                sps, lat = pgbench(script, args.clients, args.transactions, slice_)
                result.setdefault(with_model, []).append((sps, lat))
        plain = max(r[0] for r in result[False])
        model = max(r[0] for r in result[True])
        rows.append([script, "%.0f" % plain, "%.0f" % model, "%.2f" % (model / plain),
                     "%.2f" % C.median([r[1] for r in result[False]]),
                     "%.2f" % C.median([r[1] for r in result[True]])])
        state = C.execute(conn, "SELECT removed, inserted, retrains, reanchors, spent / budget "
                          "FROM unlearn.models WHERE model = 'tp'")
        print("  %s: model after the last run: removed, inserted, retrains, reanchors, "
              "spent/budget = %s" % (script, state[0] if state else None))
    C.table(["script", "plain stmt/s", "model stmt/s", "model/plain",
             "plain ms/stmt", "model ms/stmt"], rows)
    split = model_split(conn, args.clients, args.transactions, slice_)
    print("\nwhere a DELETE's time goes with the model, %d clients (one measured, %d running the "
          "delete script); median ms over %d statements:" % (args.clients, args.clients - 1, len(split)))
    print("(load: the model's rows after the statement's BEFORE trigger took its lock; update: map, "
          "step and bound; write: catalog rows and ledger; rest: waiting for the model lock, "
          "the row itself, the commit, the round trip)")
    C.table(["statement", "load", "update", "write", "rest"],
            [["%.2f" % C.median([r[i] for r in split]) for i in range(5)]])
    fresh_table(conn, False)
    C.execute(conn, "DROP TABLE %s" % TABLE)
    C.execute(conn, "DROP SEQUENCE IF EXISTS %s_extra" % TABLE)


if __name__ == "__main__":
    main()
