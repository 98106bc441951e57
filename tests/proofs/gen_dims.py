#!/usr/bin/env python3
"""Generates pairs of dimension expressions for normalizer_diff.sh: half are
rewrites of one expression (commuted, reassociated, distributed, padded with
+0, *1, +x-x, floordiv of a multiple, ...), so equal normal forms are
expected; half are independent random expressions.  After them come the
fixed pairs ONE_PAIRS, each against the literal 1: the "is 1" test of
broadcast_to (§4.13) and B-Shape (§4.5) is normal-form equality with 1 on
both sides (issue 27).
Usage: gen_dims.py SEED COUNT  ->  lines "E1<TAB>E2" on stdout."""
import random
import sys

VARS = ["A", "B", "C"]


def gen(r, depth):
    if depth == 0 or r.random() < 0.3:
        return r.choice(VARS) if r.random() < 0.6 else str(r.randint(1, 4))
    op = r.choice(["+", "+", "*", "-", "floordiv", "mod"])
    if op in ("+", "*"):
        return "(%s %s)" % (op, " ".join(gen(r, depth - 1) for _ in range(r.randint(2, 3))))
    if op == "-":
        return "(- %s %s)" % (gen(r, depth - 1), gen(r, depth - 1))
    return "(%s %s %d)" % (op, gen(r, depth - 1), r.randint(2, 4))


def parse(s):
    toks = s.replace("(", " ( ").replace(")", " ) ").split()
    pos = 0

    def one():
        nonlocal pos
        t = toks[pos]
        pos += 1
        if t == "(":
            items = []
            while toks[pos] != ")":
                items.append(one())
            pos += 1
            return items
        return t
    return one()


def show(e):
    return e if isinstance(e, str) else "(" + " ".join(show(x) for x in e) + ")"


def rewrite(r, e, depth=0):
    """An expression equal to e for every valuation."""
    if isinstance(e, list):
        op = e[0]
        n = len(e) - 1 if op not in ("floordiv", "mod") else 1   # the divisor stays a constant
        args = [rewrite(r, a, depth + 1) if (j < n and r.random() < 0.5) else a
                for j, a in enumerate(e[1:])]
        e = [op] + args
        if op in ("+", "*") and r.random() < 0.6:
            args = e[1:]
            r.shuffle(args)
            if len(args) == 3 and r.random() < 0.5:   # reassociate
                e = [op, [op, args[0], args[1]], args[2]]
            else:
                e = [op] + args
        if op == "*" and len(e) == 3 and isinstance(e[2], list) and e[2][0] == "+" and r.random() < 0.5:
            e = ["+"] + [["*", e[1], t] for t in e[2][1:]]      # distribute
    k = r.random()
    if k < 0.1:
        e = ["+", e, "0"]
    elif k < 0.2:
        e = ["*", "1", e]
    elif k < 0.3:
        v = r.choice(VARS)
        e = ["-", ["+", e, v], v]
    elif k < 0.4:
        c = str(r.randint(2, 4))
        e = ["floordiv", ["*", c, e], c]
    elif k < 0.45:
        e = ["-", ["*", "2", e], e]
    return e


def value(e, env):
    if isinstance(e, str):
        return env[e] if e in env else int(e)
    op, args = e[0], [value(a, env) for a in e[1:]]
    if op == "+":
        return sum(args)
    if op == "*":
        r = 1
        for a in args:
            r *= a
        return r
    if op == "-":
        return args[0] - args[1]
    if op == "floordiv":
        return args[0] // args[1]
    return args[0] % args[1]


# Dimensions that are, or are not, 1 for every valuation, against "1".
ONE_PAIRS = [
    ("(- 2 1)", "1"),
    ("(floordiv 3 2)", "1"),
    ("(mod 7 3)", "1"),
    ("(- (+ A 1) A)", "1"),
    ("(- (* 2 B) (+ B (- B 1)))", "1"),
    ("(floordiv (* 2 (- (+ C 1) C)) 2)", "1"),
    ("(* (- 2 1) (- (+ A 1) A))", "1"),
    ("(- 3 1)", "1"),
    ("(- (+ A 2) A)", "1"),
    ("A", "1"),
]


GRID = [{"A": a, "B": b, "C": c} for a in range(1, 6) for b in range(1, 6) for c in range(1, 6)]


def positive(e):
    """>= 1 on a grid: the checker rejects a type whose dimension may be < 1
    (E0305) and then does not check the function's body, so only such
    dimensions give a comparison."""
    return all(value(parse(e), env) >= 1 for env in GRID)


def gen_positive(r):
    while True:
        e = gen(r, 3)
        if positive(e):
            return e


def main():
    seed, count = int(sys.argv[1]), int(sys.argv[2])
    r = random.Random(seed)
    for i in range(count):
        e1 = gen_positive(r)
        if i % 2 == 0:
            e2 = show(rewrite(r, parse(e1)))
        else:
            e2 = gen_positive(r)
        print("%s\t%s" % (e1, e2))
    for e1, e2 in ONE_PAIRS:
        print("%s\t%s" % (e1, e2))


if __name__ == "__main__":
    main()
