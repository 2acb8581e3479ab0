#!/usr/bin/python3
"""Deadlocks under a mixed multi-statement load: --clients pgbench clients
for --seconds, READ COMMITTED, on a table with two models, against the same
load on a plain copy.

Each transaction touches random rows, so transactions cross each other's
row locks:

  BEGIN;
  UPDATE a column no model reads (a row lock, and the models' locks);
  DELETE a row;
  UPDATE a model column of a row;
  INSERT a row;
  COMMIT;

and one transaction in --admin_every is unlearn_retrain of one of the models
(which locks the table before the model rows).  pgbench counts deadlock
failures (--failures-detailed) and retries none (--max-tries 1), so every
deadlock shows.  After the run, each model's rows are checked against the
table and unlearn_verify says whether it is certified.  The table's rows are
synthetic (a logistic rule over two columns, generated in SQL), so the
script needs no data set.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import common as C

TABLE = "bench_dl"
ROWS = 20000

MIXED = """\\set id1 random(1, {rows})
\\set id2 random(1, {rows})
\\set id3 random(1, {rows})
BEGIN;
UPDATE {table} SET note = note + 1 WHERE id = :id1;
DELETE FROM {table} WHERE id = :id2;
UPDATE {table} SET a = a + 0.001 WHERE id = :id3;
INSERT INTO {table} (id, y, a, b, note)
	VALUES (nextval('{table}_extra'), random() < 0.5, random(), random(), 0);
COMMIT;
"""

ADMIN = """SELECT count(*) FROM unlearn_retrain('dl_ab');
"""


def fresh_table(conn, with_models):
    C.execute(conn, "DROP TABLE IF EXISTS %s" % TABLE)
    C.execute(conn, "DROP SEQUENCE IF EXISTS %s_extra" % TABLE)
    C.execute(conn, "CREATE SEQUENCE %s_extra START 1000000" % TABLE)
    C.execute(conn, """CREATE TABLE %s AS
        SELECT g AS id, a, b, (a + 2 * b + 0.3 * sin(g) > 1.5) AS y, 0 AS note
        FROM (SELECT g, random() AS a, random() AS b FROM generate_series(1, %d) g) s""" % (TABLE, ROWS))
    C.execute(conn, "ALTER TABLE %s ADD PRIMARY KEY (id)" % TABLE)
    if with_models:
        C.execute(conn, "SELECT count(*) FROM unlearn_train('dl_a', %s, 'y', '{a}', sigma => 10)", (TABLE,))
        C.execute(conn, "SELECT count(*) FROM unlearn_train('dl_ab', %s, 'y', '{a,b}', sigma => 10)", (TABLE,))
    C.execute(conn, "CHECKPOINT")


def write_script(text):
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(text.format(rows=ROWS, table=TABLE))
    os.chmod(f.name, 0o644)
    return f.name


def run(pgbench, clients, seconds, admin_every, with_models):
    mixed = write_script(MIXED)
    paths = [mixed]
    args = [pgbench, "-n", "-c", str(clients), "-j", str(clients), "-T", str(seconds),
            "--max-tries", "1", "--failures-detailed"]
    if with_models and admin_every > 0:
        admin = write_script(ADMIN)
        paths.append(admin)
        args += ["-f", "%s@%d" % (mixed, admin_every - 1), "-f", "%s@1" % admin]
    else:
        args += ["-f", mixed]
    try:
        out = subprocess.run(args, capture_output=True, text=True, check=False)
    finally:
        for p in paths:
            os.unlink(p)
    if out.returncode not in (0, 2):
        sys.stderr.write(out.stdout + out.stderr)
        raise RuntimeError("pgbench failed")

    def count(pattern):
        m = re.search(pattern, out.stdout)
        return int(m.group(1)) if m else 0

    return {
        "transactions": count(r"number of transactions actually processed: (\d+)"),
        "failed": count(r"number of failed transactions: (\d+)"),
        "deadlocks": count(r"number of deadlock failures: (\d+)"),
        "serialization": count(r"number of serialization failures: (\d+)"),
        "tps": float(re.search(r"tps = ([0-9.]+)", out.stdout).group(1)),
        "aborted": "aborted" in out.stdout or "aborted" in out.stderr,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--admin_every", type=int, default=200,
                    help="one transaction in this many is unlearn_retrain (0: none)")
    args = ap.parse_args()
    pgbench = shutil.which("pgbench") or "/usr/lib/postgresql/15/bin/pgbench"
    conn = C.connect()
    C.preamble(conn, "deadlocks: %d pgbench clients, %d s of mixed multi-statement transactions"
               % (args.clients, args.seconds))
    rows = []
    status = 0
    for with_models in (False, True):
        fresh_table(conn, with_models)
        r = run(pgbench, args.clients, args.seconds, args.admin_every, with_models)
        checked = ""
        if with_models:
            counts = C.execute(conn, """
                SELECT model, rows + skipped = (SELECT count(*) FROM %s), certified
                FROM unlearn.models, unlearn_verify(model)
                WHERE model IN ('dl_a', 'dl_ab') ORDER BY model""" % TABLE)
            checked = ", ".join("%s rows %s certified %s" % (m, "ok" if ok else "WRONG", "t" if cert else "f")
                                for m, ok, cert in counts)
            if r["deadlocks"] > 0 or not all(ok and cert for _, ok, cert in counts):
                status = 1
        rows.append(["two models" if with_models else "plain table", r["transactions"],
                     "%.0f" % r["tps"], r["deadlocks"], r["serialization"], r["failed"], checked])
    print()
    C.table(["table", "transactions", "tps", "deadlocks", "serialization", "failed",
             "models after the run"], rows)
    sys.exit(status)


if __name__ == "__main__":
    main()
