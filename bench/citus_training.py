#!/usr/bin/python3
"""What distribution costs: training on a Citus distributed table over two
workers against single-node training with two parallel workers, on the same
machine.

Starts its own three clusters (a coordinator and two workers, Citus built by
scripts/build-citus and unlearn installed), in a temporary directory, as the
postgres user when run as root:

    sudo /usr/bin/python3 bench/citus_training.py [--rows 2000000] [--dims 50]

Data: n synthetic rows of d features, x_ij = sin(i * a_j + b_j) (fixed
a_j, b_j), label = (w.x + 0.3 sin(7 i) > 0) for a fixed w: deterministic, so
every run trains on the same rows.  The coordinator holds a local copy
(single node, max_parallel_workers_per_gather = 2); the distributed copy has
8 shards, 4 per worker.  Every node's server runs on the same 2 cores, so
both arms use both cores: the ratio measures what distribution costs, not
what it gains.

Printed:
  * training: unlearn_train on each copy (sigma 1, the same model), --reps
    times, alternating; medians, and the ratio distributed / single node
    (013_citus checks that the two trainings give the same model);
  * one pass's phases: the gradient and Hessian aggregate the Newton passes
    run, at a fixed w: each shard's scan and partial aggregate timed alone
    on its worker, their sum (core-seconds of shard work), the state bytes
    that travel (one O(p^2) state per shard), the distributed pass's wall
    time and what is left of it beyond the scans spread over the cores (the
    coordinator's planning, transfer and combine), and the same pass on the
    single-node copy;
  * a projection of one pass on k machines of c cores from those figures.

Asserts nothing about timing.
"""

import argparse
import os
import pwd
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import psycopg2

import common as C

PGBIN = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True,
                       check=True).stdout.strip()
NODES = [("coordinator", 5701), ("worker1", 5702), ("worker2", 5703)]


def as_postgres(args, **kw):
    if os.geteuid() == 0:
        args = ["runuser", "-u", "postgres", "--"] + args
    return subprocess.run(args, check=True, **kw)


def start_cluster(root):
    for name, port in NODES:
        data = os.path.join(root, name)
        as_postgres([os.path.join(PGBIN, "initdb"), "-D", data, "-A", "trust"],
                    stdout=subprocess.DEVNULL)
        with open(os.path.join(data, "postgresql.conf"), "a") as f:
            f.write("port = %d\nunix_socket_directories = '%s'\n"
                    "shared_preload_libraries = 'citus,unlearn'\nunlearn.worker = off\n"
                    "max_prepared_transactions = 20\nshared_buffers = 1GB\n"
                    "max_wal_size = 8GB\ncheckpoint_timeout = 30min\n"
                    "max_parallel_workers_per_gather = 2\n" % (port, root))
        as_postgres([os.path.join(PGBIN, "pg_ctl"), "-D", data, "-l",
                     os.path.join(root, name + ".log"), "-w", "start"],
                    stdout=subprocess.DEVNULL)


def stop_cluster(root):
    for name, _ in NODES:
        subprocess.run((["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []) +
                       [os.path.join(PGBIN, "pg_ctl"), "-D", os.path.join(root, name),
                        "-m", "fast", "stop"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)


def connect(root, port):
    conn = psycopg2.connect(host=root, port=port, user="postgres", dbname="postgres")
    conn.autocommit = True
    return conn


def load(coord, rows, dims):
    a = ", ".join("%.6f" % (0.001 + 0.37 * j) for j in range(dims))
    b = ", ".join("%.6f" % (0.11 * j) for j in range(dims))
    w = ", ".join("%.6f" % ((-1) ** j * (0.5 + 0.05 * j)) for j in range(dims))
    C.execute(coord, """
CREATE TABLE syn_local AS
SELECT i AS id, x, (s + 0.3 * sin(7 * i) > 0) AS label
FROM (SELECT i, array_agg(sin(i * a + b) ORDER BY j) AS x, sum(sin(i * a + b) * w) AS s
      FROM generate_series(1, %d) i,
           unnest('{%s}'::float8[], '{%s}'::float8[], '{%s}'::float8[]) WITH ORDINALITY u(a, b, w, j)
      GROUP BY i) r""" % (rows, a, b, w))
    C.execute(coord, "ALTER TABLE syn_local ADD PRIMARY KEY (id)")
    C.execute(coord, "CREATE TABLE syn_dist (LIKE syn_local INCLUDING ALL)")
    C.execute(coord, "SELECT create_distributed_table('syn_dist', 'id', shard_count => 8)")
    C.execute(coord, "INSERT INTO syn_dist SELECT * FROM syn_local")
    C.execute(coord, "VACUUM ANALYZE syn_local")
    C.execute(coord, "VACUUM ANALYZE syn_dist")


def train(conn, model, table, options):
    t0 = time.perf_counter()
    C.execute(conn, "SELECT * FROM unlearn_train(%s, %s, 'label', '{x}', sigma => 1, "
              "options => %s, replace => true)", (model, table, options))
    return time.perf_counter() - t0


def pass_phases(conns, dims):
    """One gradient and Hessian pass over the distributed copy, and each
    shard's part of it timed alone on its worker."""
    coord, workers = conns[0], conns[1:]
    w = "'{%s}'::float8[]" % ", ".join("0.01" for _ in range(dims + 1))
    agg = ("unlearn_gradient_hessian_state(x || 1::float8, CASE WHEN label THEN 1 ELSE -1 END, "
           "%s, 'logistic')" % w)
    shard_tasks = []
    for conn in workers:
        C.execute(conn, "SET citus.override_table_visibility = off")
        C.execute(conn, "SET max_parallel_workers_per_gather = 0")
        for (shard,) in C.execute(conn, "SELECT relname FROM pg_class "
                                  "WHERE relname ~ '^syn_dist_[0-9]+$' ORDER BY relname"):
            shard_tasks.append(C.timed(conn, "SELECT %s FROM %s" % (agg, shard)))
    plain = min(C.timed(coord, "SELECT %s FROM syn_dist" % agg) for _ in range(3))
    local = min(C.timed(coord, "SELECT %s FROM syn_local" % agg) for _ in range(3))
    state_bytes = C.one(coord, "SELECT octet_length(%s::text) FROM syn_local WHERE id = 1" % agg)
    return shard_tasks, plain, local, state_bytes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=2000000)
    ap.add_argument("--dims", type=int, default=50)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    if not os.path.exists(os.path.join(subprocess.run(
            ["pg_config", "--sharedir"], capture_output=True, text=True,
            check=True).stdout.strip(), "extension", "citus.control")):
        sys.exit("citus_training.py: Citus is not installed (scripts/build-citus builds it)")
    root = tempfile.mkdtemp(prefix="unlearn-citus-bench-", dir="/var/tmp")
    if os.geteuid() == 0:
        pw = pwd.getpwnam("postgres")
        os.chown(root, pw.pw_uid, pw.pw_gid)
    try:
        start_cluster(root)
        conns = [connect(root, port) for _, port in NODES]
        for c in conns:
            C.execute(c, "CREATE EXTENSION citus")
            C.execute(c, "CREATE EXTENSION unlearn")
        coord = conns[0]
        C.execute(coord, "SELECT citus_set_coordinator_host(%s, %s)", (root, NODES[0][1]))
        for _, port in NODES[1:]:
            C.execute(coord, "SELECT citus_add_node(%s, %s)", (root, port))

        C.banner("Citus: training over two workers against one node with two parallel workers")
        print("unlearn", C.one(coord, "SELECT extversion FROM pg_extension WHERE extname = 'unlearn'"),
              "| Citus", C.one(coord, "SELECT extversion FROM pg_extension WHERE extname = 'citus'"),
              "|", C.machine_info())
        print("build:", C.build_info())
        print("rows %d x %d features; 8 shards (4 per worker); every node on the same machine"
              % (args.rows, args.dims))
        t0 = time.perf_counter()
        load(coord, args.rows, args.dims)
        print("loaded both copies in %.0f s" % (time.perf_counter() - t0))

        single, dist = [], []
        for _ in range(args.reps):
            single.append(train(coord, "single", "syn_local", "{}"))
            dist.append(train(coord, "dist", "syn_dist", '{"removal": "async"}'))
        print()
        C.table(["arm", "median s", "runs s", "ratio"],
                [["single node, 2 parallel workers", C.median(single),
                  " ".join("%.1f" % t for t in single), 1.0],
                 ["Citus, 2 workers x 4 shards", C.median(dist),
                  " ".join("%.1f" % t for t in dist), C.median(dist) / C.median(single)]],
                ["", ".2f", "", ".2f"])
        shard_tasks, plain, local, state_bytes = pass_phases(conns, args.dims)
        shard_sum = sum(shard_tasks)
        cores = os.cpu_count()
        print()
        print("one gradient and Hessian pass (p = %d), by phase (best of 3 for the passes):"
              % (args.dims + 1))
        C.table(["phase", "seconds"],
                [["shard scans + partial aggregates, %d shards, each alone (core-s)"
                  % len(shard_tasks), shard_sum],
                 ["  per shard: min / median / max", "%.3f / %.3f / %.3f" % (
                     min(shard_tasks), statistics.median(shard_tasks), max(shard_tasks))],
                 ["state transfer: %d states of %d bytes (text)" % (len(shard_tasks), state_bytes),
                  "-"],
                 ["pass wall time, distributed", plain],
                 ["  coordinator, transfer and combine: wall - scans / %d cores" % cores,
                  max(plain - shard_sum / cores, 0.0)],
                 ["pass wall time, single node (2 parallel workers)", local]],
                ["", ".3f"])
        print()
        print("projected pass time on k machines of c cores:")
        rest = max(plain - shard_sum / cores, 0.0)
        rows_out = []
        for k in (2, 4, 8, 16):
            for c in (2, 8):
                rows_out.append([k, c, shard_sum / (k * c) + rest])
        C.table(["k", "c", "seconds"], rows_out, ["d", "d", ".3f"])
        print("(scans scale with the rows per core; the coordinator's part is one state per "
              "shard, O(p^2) each, and stays)")
        for c in conns:
            c.close()
    finally:
        stop_cluster(root)
        shutil.rmtree(root, ignore_errors=True)
    print()
    print("load average at the end: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
