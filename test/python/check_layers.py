#!/usr/bin/python3
"""The layers of src/ call and include downwards only (scripts/check_layers.py):
the tree as it is passes, and copies of it with one upward call, one upward
include, or one SPI header in the math layer fail, so the check can fail.
Needs no server.
"""

import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "scripts", "check_layers.py")


def run(src):
    out = subprocess.run([sys.executable, CHECK, src], capture_output=True, text=True)
    return out.returncode, out.stdout


def with_change(path, old, new):
    tmp = tempfile.mkdtemp(prefix="layers_")
    src = os.path.join(tmp, "src")
    shutil.copytree(os.path.join(ROOT, "src"), src)
    target = os.path.join(src, path)
    text = open(target).read()
    assert old in text, "%s has no %r" % (path, old)
    open(target, "w").write(text.replace(old, new, 1))
    try:
        return run(src)
    finally:
        shutil.rmtree(tmp)


def main():
    failures = 0
    code, out = run(os.path.join(ROOT, "src"))
    print(out.strip())
    if code != 0:
        print("FAIL: the tree has calls or includes that go up")
        failures += 1
    cases = [
        ("an upward call", "math/linalg.c", "#include <math.h>\n",
         "#include <math.h>\nstatic void up(void) { (void) catalog_has_queued_changes(\"x\"); }\n"),
        ("an upward include", "mechanism/targets.c", '#include "mechanism/mechanism.h"',
         '#include "mechanism/mechanism.h"\n#include "exec/exec.h"'),
        ("SPI in the math layer", "math/loss.c", "#include <math.h>",
         '#include <math.h>\n#include "executor/spi.h"'),
    ]
    for what, path, old, new in cases:
        code, out = with_change(path, old, new)
        if code == 0:
            print("FAIL: %s in %s passed the check" % (what, path))
            failures += 1
        else:
            print("ok: %s in %s is found: %s" % (what, path, out.splitlines()[0]))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
