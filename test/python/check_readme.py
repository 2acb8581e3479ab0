#!/usr/bin/python3
"""README.md's runnable SQL blocks, run as written, in a fresh database:

  * every ```sql block preceded directly by the line <!-- runnable --> is
    taken, in document order (the check fails when there is none);
  * a fresh database (readme_check) is created, CREATE EXTENSION unlearn is
    run there, and the blocks are run in one psql session, as a user pasting
    them in order would, with psql -X -v ON_ERROR_STOP=1, so that any error
    fails the check;
  * right after the block that evaluates a model on a held-out table (the
    first runnable call unlearn_evaluate('model', 'table') with a table
    given: the getting-started evaluation), the same accuracy is queried
    again in that session, and it must be at least 0.8: the README's
    synthetic data must carry a signal the model learns;
  * the database is dropped at the end, whatever happened.

psql's output is printed, with a line naming each block and its line in
README.md.  Exits 1 on any failure, 0 on success.  The server is the libpq
environment's (PGHOST, PGPORT, PGUSER, PGDATABASE) and must have unlearn
installed (shared_preload_libraries = unlearn); the role must be allowed to
create databases and roles, as a superuser is.  Run from anywhere: README.md
is found next to test/.
"""

import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(REPO, "README.md")
DATABASE = "readme_check"
MIN_ACCURACY = 0.8
PSQL = "/usr/bin/psql" if os.path.exists("/usr/bin/psql") else "psql"
MARK = "<!-- runnable -->"
ACCURACY_TAG = "README_HELD_OUT_ACCURACY"


def runnable_blocks(text):
    """[(line number of the fence, sql)] of the blocks marked runnable"""
    lines = text.split("\n")
    blocks = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == MARK:
            if i + 1 >= len(lines) or lines[i + 1].strip() != "```sql":
                raise ValueError("README.md line %d: %s is not directly followed by a ```sql fence"
                                 % (i + 1, MARK))
            start = i + 2
            end = start
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            if end == len(lines):
                raise ValueError("README.md line %d: the runnable block is never closed" % (i + 2))
            blocks.append((i + 2, "\n".join(lines[start:end])))
            i = end
        i += 1
    return blocks


def psql(database, args, stdin=None):
    cmd = [PSQL, "-X", "-v", "ON_ERROR_STOP=1", "-d", database] + args
    return subprocess.run(cmd, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True)


def maintenance():
    """the database the libpq environment names, for CREATE and DROP DATABASE"""
    return os.environ.get("PGDATABASE", "postgres")


def admin(sql):
    """one statement in the maintenance database"""
    r = psql(maintenance(), ["-c", sql])
    print(r.stdout, end="")
    return r.returncode == 0


def main():
    with open(README) as f:
        text = f.read()
    try:
        blocks = runnable_blocks(text)
    except ValueError as e:
        print("FAIL %s" % e)
        return 1
    if not blocks:
        print("FAIL README.md has no SQL block marked %s" % MARK)
        return 1
    print("README.md: %d runnable blocks" % len(blocks))

    # the getting-started evaluation: the first held-out unlearn_evaluate
    evaluation = None
    for n, (line, sql) in enumerate(blocks):
        m = re.search(r"unlearn_evaluate\(\s*'([^']+)'\s*,\s*'([^']+)'\s*\)", sql)
        if m:
            evaluation = (n, line, m.group(1), m.group(2))
            break
    if evaluation is None:
        print("FAIL no runnable block evaluates a model on a held-out table "
              "(unlearn_evaluate('model', 'table'))")
        return 1

    script = []
    for n, (line, sql) in enumerate(blocks):
        script.append("\\echo '=== README.md block %d (line %d)'" % (n + 1, line))
        script.append(sql)
        script.append(";" if not sql.rstrip().endswith(";") else "")
        if n == evaluation[0]:
            script.append("\\echo '=== the held-out accuracy again'")
            script.append("SELECT '%s=' || accuracy AS check FROM unlearn_evaluate('%s', '%s');"
                          % (ACCURACY_TAG, evaluation[2], evaluation[3]))
    script = "\n".join(script) + "\n"

    # roles are the cluster's: the README's own must not exist before, and
    # are dropped after (a block that fails may leave one behind)
    roles = sorted(set(re.findall(r"CREATE\s+ROLE\s+([a-z_][a-z0-9_]*)", "\n".join(b for _, b in blocks), re.I)))
    if roles:
        r = psql(maintenance(), ["-At", "-c", "SELECT rolname FROM pg_roles WHERE rolname = ANY('{%s}')"
                                 % ",".join(roles)])
        if r.returncode != 0 or r.stdout.strip():
            print(r.stdout, end="")
            print("FAIL the README creates role(s) %s, which exist already on this server"
                  % ", ".join(roles))
            return 1
    if not admin("DROP DATABASE IF EXISTS %s WITH (FORCE)" % DATABASE):
        print("FAIL could not drop an earlier %s" % DATABASE)
        return 1
    if not admin("CREATE DATABASE %s" % DATABASE):
        print("FAIL could not create the database %s" % DATABASE)
        return 1
    failures = []
    try:
        r = psql(DATABASE, ["-c", "CREATE EXTENSION unlearn"])
        print(r.stdout, end="")
        if r.returncode != 0:
            failures.append("CREATE EXTENSION unlearn failed")
        else:
            r = psql(DATABASE, ["-f", "-"], stdin=script)
            print(r.stdout, end="")
            if r.returncode != 0:
                failures.append("psql stopped with exit code %d: a runnable block failed (the last "
                                "'=== README.md block' line above names it)" % r.returncode)
            m = re.search(r"%s=([0-9.eE+-]+)" % ACCURACY_TAG, r.stdout)
            if m is None:
                failures.append("no held-out accuracy of %s on %s was read (block %d, line %d)"
                                % (evaluation[2], evaluation[3], evaluation[0] + 1, evaluation[1]))
            else:
                accuracy = float(m.group(1))
                ok = accuracy >= MIN_ACCURACY
                print("%s held-out accuracy of %s on %s: %.4f (at least %.1f)"
                      % ("ok  " if ok else "FAIL", evaluation[2], evaluation[3], accuracy, MIN_ACCURACY))
                if not ok:
                    failures.append("held-out accuracy %.4f < %.1f" % (accuracy, MIN_ACCURACY))
    finally:
        if not admin("DROP DATABASE IF EXISTS %s WITH (FORCE)" % DATABASE):
            failures.append("could not drop %s" % DATABASE)
        for role in roles:
            r = psql(maintenance(), ["-At", "-c", "SELECT 1 FROM pg_roles WHERE rolname = '%s'" % role])
            if r.stdout.strip():
                failures.append("the README left role %s behind" % role)
                admin("DROP ROLE %s" % role)

    for f in failures:
        print("FAIL %s" % f)
    print("%d runnable blocks, %d failed checks" % (len(blocks), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
