#!/usr/bin/python3
"""Single-row DELETE time of this build against the release before the
trust changes (8e93d2c) and against a plain table without a model, side by
side in one process.

The earlier release is installed as a separate extension, unlearn_prev
(bench/README.md says how), in its own database: two builds of one library
cannot share a backend, but one client can time both, interleaved
statement by statement, so drift of this VM's speed hits all three alike.
Without unlearn_prev the script times this build against the plain table
only.

Each round deletes one random row from each table, rolled back (the
transaction is rolled back after the DELETE, so the table and the model
stay the same), and then one row each, committed.  The data are
Fashion-MNIST T-shirt/Shirt (12,000 rows, d = 784), the model has the
extension's defaults with sigma 10, as in removal.py.  No assertion about
time is made.
"""

import argparse
import io
import random
import sys

import common as C

SOURCE = "tshirt_shirt"
PREV_DB = "bench_unlearn_prev"


def make_table(conn, name):
    C.execute(conn, "DROP TABLE IF EXISTS %s" % name)
    C.execute(conn, "CREATE TABLE %s AS SELECT * FROM %s" % (name, SOURCE))
    C.execute(conn, "ALTER TABLE %s ADD PRIMARY KEY (id)" % name)
    C.execute(conn, "VACUUM ANALYZE %s" % name)
    return [r[0] for r in C.execute(conn, "SELECT id FROM %s ORDER BY id" % name)]


def train(conn, table):
    return C.timed(conn, "SELECT * FROM unlearn_train('m_%s', '%s', 'is_shirt', '{pixels}', "
                   "sigma => 10, replace => true)" % (table, table))


def prev_connection(main):
    """A connection to a database with unlearn_prev and the data, or None."""
    if C.one(main, "SELECT count(*) FROM pg_available_extensions WHERE name = 'unlearn_prev'") == 0:
        print("unlearn_prev is not installed: timing this build against a plain table only")
        return None
    if C.one(main, "SELECT count(*) FROM pg_database WHERE datname = %s", (PREV_DB,)) == 0:
        C.execute(main, "CREATE DATABASE %s" % PREV_DB)
    dsn = main.get_dsn_parameters()
    prev = C.psycopg2.connect(host=dsn.get("host"), port=dsn.get("port"), user=dsn.get("user"),
                              dbname=PREV_DB, password=C.os.environ.get("PGPASSWORD"))
    prev.autocommit = True
    C.execute(prev, "CREATE EXTENSION IF NOT EXISTS unlearn_prev")
    if C.one(prev, "SELECT to_regclass(%s)", (SOURCE,)) is None:
        ddl = C.one(main, "SELECT 'CREATE TABLE %s (' || string_agg(quote_ident(attname) || ' ' || "
                    "format_type(atttypid, atttypmod), ', ' ORDER BY attnum) || ')' FROM pg_attribute "
                    "WHERE attrelid = %%s::regclass AND attnum > 0 AND NOT attisdropped" % SOURCE,
                    (SOURCE,))
        C.execute(prev, ddl)
        buf = io.StringIO()
        with main.cursor() as cur:
            cur.copy_expert("COPY %s TO STDOUT" % SOURCE, buf)
        buf.seek(0)
        with prev.cursor() as cur:
            cur.copy_expert("COPY %s FROM STDIN" % SOURCE, buf)
    return prev


def delete_one(conn, table, row_id, commit):
    if commit:
        return C.timed(conn, "DELETE FROM %s WHERE id = %%s" % table, (row_id,))
    C.execute(conn, "BEGIN")
    t = C.timed(conn, "DELETE FROM %s WHERE id = %%s" % table, (row_id,))
    C.execute(conn, "ROLLBACK")
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=60, help="rolled-back DELETEs per table")
    ap.add_argument("--committed", type=int, default=30, help="committed DELETEs per table")
    args = ap.parse_args()

    lib0 = C.library_mtime()
    main_conn = C.connect()
    C.preamble(main_conn, "trust_overhead: single-row DELETE, this build vs the previous release "
               "vs no model")
    prev = prev_connection(main_conn)

    sides = []                      # (label, connection, table, ids)
    ids = make_table(main_conn, "bench_model")
    print("this build: trained in %.2f s" % train(main_conn, "bench_model"))
    sides.append(("this build", main_conn, "bench_model", ids))
    if prev is not None:
        ids = make_table(prev, "bench_model")
        print("unlearn_prev: trained in %.2f s" % train(prev, "bench_model"))
        sides.append(("previous release", prev, "bench_model", ids))
    ids = make_table(main_conn, "bench_plain")
    sides.append(("plain table, no model", main_conn, "bench_plain", ids))

    rng = random.Random(7)
    times = {label: {"rolled back": [], "committed": []} for label, _, _, _ in sides}
    for label, conn, table, ids in sides:          # warm-up, not counted
        delete_one(conn, table, ids[0], commit=False)
    for r in range(args.rounds):
        order = list(sides)
        rng.shuffle(order)
        for label, conn, table, ids in order:
            times[label]["rolled back"].append(delete_one(conn, table, rng.choice(ids), False))
    for r in range(args.committed):
        order = list(sides)
        rng.shuffle(order)
        for label, conn, table, ids in order:
            row_id = ids.pop(rng.randrange(len(ids)))
            times[label]["committed"].append(delete_one(conn, table, row_id, True))

    for mode in ("rolled back", "committed"):
        base = C.median(times[sides[-1][0]][mode])
        prev_med = C.median(times["previous release"][mode]) if prev is not None else None
        rows = []
        for label, _, _, _ in sides:
            ts = times[label][mode]
            md = C.median(ts)
            rows.append((label, len(ts), min(ts) * 1e3, md * 1e3, md / base,
                         md / prev_med if prev_med else None))
        print()
        print("single-row DELETE, %s" % mode)
        C.table(["table", "n", "min ms", "median ms", "/ plain", "/ previous release"],
                rows, ["", "d", ".2f", ".2f", ".1f", ".3f"])
    C.warn_if_reinstalled(lib0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
