#!/usr/bin/python3
"""Check that calls and includes between the layers of src/ go down only.

The layers are the folders of src/, from the top:

    api        the SQL-callable functions
    exec       statements, triggers, passes over rows, the worker
    store      the catalog tables and the shared-memory state store
    mechanism  the removal mechanisms, behind mechanism/mechanism.h
    math       pure functions over arrays

A file may call a function defined in its own folder or in a folder below
it, and include a header of its own folder, of a folder below it, or of
src/ itself (the model's types).  The math layer has no cycle of calls
between its files, and includes no header of SPI, the executor, the
catalog or triggers.

Functions are found by the project's pgindent layout: a definition starts
a line with its name and "(", its return type on the line above.  Calls are
names followed by "(".  Usage: scripts/check_layers.py [SRC]; exit status 1
and one line per violation when something goes up.
"""

import collections
import os
import re
import sys

LAYERS = ["math", "mechanism", "store", "exec", "api"]
RANK = {name: i for i, name in enumerate(LAYERS)}
MATH_FORBIDDEN = re.compile(r'#include\s+"(executor/|catalog/|commands/trigger|access/|utils/rel|nodes/)')


def strip(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r'"(\\.|[^"\\])*"', '""', text)


def layer_of(src, path):
    rel = os.path.relpath(path, src).split(os.sep)
    return rel[0] if len(rel) > 1 else None


def main():
    src = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                          os.path.join(os.path.dirname(__file__), "..", "src"))
    files = []
    for root, _, names in os.walk(src):
        files += [os.path.join(root, n) for n in names if n.endswith((".c", ".h"))]
    files.sort()
    files = [os.path.abspath(f) for f in files]
    problems = []
    defined = {}
    code = {}
    for f in files:
        raw = open(f, encoding="utf-8").read()
        code[f] = strip(raw)
        layer = layer_of(src, f)
        if layer is not None and layer not in RANK:
            problems.append("%s: folder %s is no layer" % (f, layer))
        if f.endswith(".c"):
            for m in re.finditer(r"^([A-Za-z_]\w*)\(", code[f], flags=re.M):
                line_start = code[f].rfind("\n", 0, m.start() - 1) + 1
                line_end = code[f].find("\n", m.start())
                if code[f][line_start:m.start()].startswith("static") or \
                        code[f][m.start():line_end].rstrip().endswith(";"):
                    continue    # file-local, or a macro's use such as PG_FUNCTION_INFO_V1(f);
                defined.setdefault(m.group(1), f)
        for inc in re.findall(r'#include\s+"([^"]+)"', raw):
            target = os.path.normpath(os.path.join(src, inc))
            if not os.path.exists(target):
                target = os.path.normpath(os.path.join(os.path.dirname(f), inc))
            if os.path.exists(target) and layer is not None:
                tl = layer_of(src, target)
                if tl is not None and RANK.get(tl, -1) > RANK.get(layer, -1):
                    problems.append("%s includes %s, a header of a higher layer" % (f, inc))
        if layer == "math" and MATH_FORBIDDEN.search(raw):
            problems.append("%s: the math layer includes a header of SPI, the executor or the catalog" % f)

    calls = collections.defaultdict(set)
    for f in files:
        if not f.endswith(".c"):
            continue
        for name in set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", code[f])):
            g = defined.get(name)
            if g is None or g == f:
                continue
            calls[f].add(g)
            lf, lg = layer_of(src, f), layer_of(src, g)
            if lf in RANK and lg in RANK and RANK[lg] > RANK[lf]:
                problems.append("%s calls %s() of %s, a higher layer" % (f, name, g))

    # no cycle among the files of the math layer
    math = [f for f in calls if layer_of(src, f) == "math"]
    state = {}

    def visit(f, stack):
        state[f] = 1
        for g in calls[f]:
            if layer_of(src, g) != "math":
                continue
            if state.get(g) == 1:
                problems.append("a cycle of calls in the math layer: %s"
                                % " -> ".join(stack[stack.index(g):] + [g]))
            elif g not in state:
                visit(g, stack + [g])
        state[f] = 2

    for f in math:
        if f not in state:
            visit(f, [f])

    base = os.path.dirname(os.path.abspath(src))
    for p in problems:
        print(p.replace(base + os.sep, ""))
    print("check_layers: %d files, %d violations" % (len(files), len(problems)))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
