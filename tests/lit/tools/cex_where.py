"""Every counterexample shapemlc reports satisfies its function's `where` clause.

A counterexample claims: these values of the shape variables satisfy the
hypotheses (every variable >= 1 and the `where` constraints) and break the
goal. This tool checks the first half independently of shapeml: it reads the
source itself (its own S-expression reader), evaluates each `where`
constraint of the function that encloses the diagnostic with Python integers,
and fails if a counterexample violates one.

Semantics evaluated here (docs/spec/language.md): `+ - *` on integers,
`floordiv`/`mod` by a positive constant are floor division and its
non-negative remainder, and `(divides a b)` holds iff a >= 1 and b mod a = 0.

Usage:
  cex_where.py --shapemlc BIN FILE_OR_DIR...         run `check --format=json`
  cex_where.py --json OUT.json FILE                  use recorded output
Prints `N counterexample(s) checked in M file(s), V violation(s)`; exits 1 on
a violation, or when --min N counterexamples were not found.
"""
import argparse
import json
import os
import subprocess
import sys


class Node:
    __slots__ = ("kind", "value", "items", "begin", "end")

    def __init__(self, kind, value, begin, end, items=None):
        self.kind, self.value, self.begin, self.end, self.items = kind, value, begin, end, items

    def head(self):
        if self.kind == "list" and self.items and self.items[0].kind == "sym":
            return self.items[0].value
        return None


def read_sexprs(data):
    """Top-level S-expressions of `data` (bytes), with byte offsets."""
    pos, n = 0, len(data)
    stack, top = [], []
    while pos < n:
        c = data[pos:pos + 1]
        if c in (b" ", b"\t", b"\r", b"\n"):
            pos += 1
        elif c == b";":
            while pos < n and data[pos:pos + 1] != b"\n":
                pos += 1
        elif c == b"(":
            stack.append((pos, []))
            pos += 1
        elif c == b")":
            if not stack:
                raise ValueError("unbalanced ')' at %d" % pos)
            begin, items = stack.pop()
            node = Node("list", None, begin, pos + 1, items)
            (stack[-1][1] if stack else top).append(node)
            pos += 1
        else:
            begin = pos
            while pos < n and data[pos:pos + 1] not in (b" ", b"\t", b"\r", b"\n", b"(", b")", b";"):
                pos += 1
            text = data[begin:pos].decode("utf-8")
            try:
                node = Node("int", int(text), begin, pos)
            except ValueError:
                node = Node("sym", text, begin, pos)
            (stack[-1][1] if stack else top).append(node)
    if stack:
        raise ValueError("unclosed '('")
    return top


class Func:
    def __init__(self, node):
        self.name = node.items[1].value if len(node.items) > 1 else "?"
        self.begin, self.end = node.begin, node.end
        self.dims, self.where = [], []
        for part in node.items[2:]:
            if part.head() == "dims":
                self.dims = [x.value for x in part.items[1:]]
            elif part.head() == "where":
                self.where.extend(part.items[1:])


def functions(tree):
    out = []

    def walk(n):
        if n.head() == "func":
            out.append(Func(n))
        elif n.kind == "list":
            for x in n.items:
                walk(x)

    for n in tree:
        walk(n)
    return out


def dim_value(n, env):
    if n.kind == "int":
        return n.value
    if n.kind == "sym":
        return env[n.value]  # KeyError: variable not in the counterexample
    op, args = n.head(), n.items[1:]
    vals = [dim_value(a, env) for a in args]
    if op == "+":
        return sum(vals)
    if op == "*":
        r = 1
        for v in vals:
            r *= v
        return r
    if op == "-" and len(vals) == 2:
        return vals[0] - vals[1]
    if op == "floordiv" and len(vals) == 2 and vals[1] >= 1:
        return vals[0] // vals[1]
    if op == "mod" and len(vals) == 2 and vals[1] >= 1:
        return vals[0] % vals[1]
    raise ValueError("not a dimension: %s" % op)


def holds(c, env):
    op = c.head()
    a, b = dim_value(c.items[1], env), dim_value(c.items[2], env)
    if op == "=":
        return a == b
    if op == "!=":
        return a != b
    if op == "<":
        return a < b
    if op == "<=":
        return a <= b
    if op == ">":
        return a > b
    if op == ">=":
        return a >= b
    if op == "divides":
        return a >= 1 and b % a == 0
    raise ValueError("not a constraint: %s" % op)


def source_text(data, c):
    return data[c.begin:c.end].decode("utf-8")


def check_file(path, diags, report):
    """Returns (checked, violations)."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        funcs = functions(read_sexprs(data))
    except (ValueError, UnicodeDecodeError):
        return 0, 0  # not a program this reader handles (bad-input corpus)
    checked = violations = 0
    for d in diags:
        cex = d.get("counterexample")
        if not cex:
            continue
        encl = [f for f in funcs if f.begin <= d["offset"] < f.end]
        if not encl:
            report("%s:%d: %s counterexample outside any function" % (path, d["line"], d["code"]))
            violations += 1
            continue
        fn = min(encl, key=lambda f: f.end - f.begin)
        checked += 1
        bad = []
        for v, x in cex.items():
            if v not in fn.dims:
                bad.append("%s is not a shape variable of `%s`" % (v, fn.name))
            elif x < 1:
                bad.append("%s = %d is not >= 1" % (v, x))
        for c in fn.where:
            try:
                if not holds(c, cex):
                    bad.append("%s is false" % source_text(data, c))
            except KeyError:
                pass  # a value beyond 64 bits is left out of the JSON
        if bad:
            violations += 1
            values = ", ".join("%s=%s" % kv for kv in cex.items())
            report("%s:%d: %s counterexample %s of `%s` violates its where clause: %s"
                   % (path, d["line"], d["code"], values, fn.name, "; ".join(bad)))
    return checked, violations


def sml_files(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(x for x in dirs if not x.startswith("."))
                for f in sorted(files):
                    if f.endswith(".sml"):
                        yield os.path.join(root, f)
        else:
            yield p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapemlc")
    ap.add_argument("--json", help="recorded `check --format=json` output for the one FILE")
    ap.add_argument("--timeout-ms", default="2000")
    ap.add_argument("--min", type=int, default=1, help="fail unless at least this many counterexamples were checked")
    ap.add_argument("paths", nargs="+")
    args = ap.parse_args()
    total = violations = nfiles = 0
    for path in sml_files(args.paths):
        if args.json:
            with open(args.json) as f:
                out = f.read()
        else:
            r = subprocess.run([args.shapemlc, "check", "--format=json", "--timeout-ms=" + args.timeout_ms, path],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
            # Diagnostics go to stderr; accept them on stdout too.
            out = (r.stdout if r.stdout.strip() else r.stderr).decode("utf-8", "replace")
        try:
            diags = json.loads(out) if out.strip() else []
        except ValueError:
            continue  # not a source file (a bad command line, an unreadable file)
        nfiles += 1
        c, v = check_file(path, diags, lambda m: print("VIOLATION " + m))
        total += c
        violations += v
    print("%d counterexample(s) checked in %d file(s), %d violation(s)" % (total, nfiles, violations))
    if violations or total < args.min:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
