#!/usr/bin/python3
"""Predicting as the owner and as granted roles: what the read check costs.

Every read function checks, once per query (the model is cached in the
call's fn_extra afterwards), that the caller owns the model or holds a
'read' grant, directly or through a role it is a member of.  This times
SELECT count(*), sum(unlearn_predict(m, ARRAY[c1, ..., c50])) FROM t over
N rows x 50 columns (default N = 1,000,000; the table of score.py) in one
process, side by side, serially, each way --reps times (median):

  owner         the role that trained the model
  grantee       a role granted 'read' on it
  member        a member of a role granted 'read'

With --save FILE the medians are written to FILE; with --against FILE a
column compares each way with the same way in FILE, from another build
(the previous build had no grants: every role read every model).  Two
builds of the library cannot be loaded in one server, so that comparison
is across two runs of this script, one per build, on the same server and
data.
"""

import argparse
import json
import statistics
import time

import common
import score

D = score.D
MODEL = "bench_grants"
ROLES = ("bench_grants_owner", "bench_grants_reader", "bench_grants_team", "bench_grants_member")


def setup(conn, rows):
    have = common.one(conn, "SELECT to_regclass('bench_score') IS NOT NULL")
    if not have or common.one(conn, "SELECT count(*) FROM bench_score") != rows:
        t0 = time.perf_counter()
        score.build(conn, rows)
        print("table built in %.1f s" % (time.perf_counter() - t0))
    grants = common.one(conn, "SELECT to_regproc('unlearn_grant') IS NOT NULL")
    common.execute(conn, "SELECT unlearn_drop(model) FROM unlearn.models WHERE model = %s", (MODEL,))
    for r in ROLES:
        if common.one(conn, "SELECT count(*) FROM pg_roles WHERE rolname = %s", (r,)) == 0:
            common.execute(conn, "CREATE ROLE %s" % r)
    common.execute(conn, "GRANT bench_grants_team TO bench_grants_member")
    common.execute(conn, "GRANT SELECT, TRIGGER ON bench_score TO %s" % ", ".join(ROLES))
    features = "{%s}" % ",".join("c%d" % j for j in range(1, D + 1))
    common.execute(conn, "SET ROLE bench_grants_owner")
    t0 = time.perf_counter()
    common.execute(conn, "SELECT unlearn_train(%s, 'bench_score', 'y', %s, sigma => 1)", (MODEL, features))
    print("model trained in %.1f s" % (time.perf_counter() - t0))
    if grants:
        common.execute(conn, "SELECT unlearn_grant(%s, 'bench_grants_reader')", (MODEL,))
        common.execute(conn, "SELECT unlearn_grant(%s, 'bench_grants_team')", (MODEL,))
    common.execute(conn, "RESET ROLE")
    return grants


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1000000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--save", help="write the medians to this JSON file")
    ap.add_argument("--against", help="compare with the medians of another build in this JSON file")
    args = ap.parse_args()

    conn = common.connect()
    common.preamble(conn, "unlearn_predict over %d rows x %d columns as the owner and as granted roles"
                    % (args.rows, D))
    grants = setup(conn, args.rows)
    print("this build %s per-model read grants" % ("has" if grants else "has no"))
    array = "ARRAY[%s]" % ", ".join("c%d" % j for j in range(1, D + 1))
    query = "SELECT count(*), sum(unlearn_predict('%s', %s)) FROM bench_score" % (MODEL, array)
    ways = [("owner", "bench_grants_owner"), ("grantee", "bench_grants_reader"),
            ("member of a grantee", "bench_grants_member")]
    times = {name: [] for name, _ in ways}
    sums = {}
    with conn.cursor() as cur:
        cur.execute("SET max_parallel_workers_per_gather = 0")
        # interleaved, so that a drift of the machine falls on every way alike
        for _ in range(args.reps):
            for name, role in ways:
                cur.execute("SET ROLE %s" % role)
                t0 = time.perf_counter()
                cur.execute(query)
                sums[name] = cur.fetchone()[1]
                times[name].append(time.perf_counter() - t0)
                cur.execute("RESET ROLE")
    medians = {name: statistics.median(t) for name, t in times.items()}
    previous = None
    if args.against:
        with open(args.against) as f:
            previous = json.load(f)
    rows = []
    for name, _ in ways:
        row = [name, medians[name], medians[name] / medians["owner"], sums[name]]
        if previous is not None:
            row.append(medians[name] / previous[name] if name in previous else float("nan"))
        rows.append(row)
    header = ["caller", "seconds", "x owner", "sum of predictions"]
    fmts = ["", ".3f", ".3f", ".6f"]
    if previous is not None:
        header.append("x previous build")
        fmts.append(".3f")
    common.table(header, rows, fmts)
    if args.save:
        with open(args.save, "w") as f:
            json.dump(medians, f)
    common.execute(conn, "SELECT unlearn_drop(%s)", (MODEL,))


if __name__ == "__main__":
    main()
