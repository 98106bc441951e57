#!/usr/bin/env python3
"""Random well-shaped shapeml programs, single-obligation mutants, and a driver
that runs `shapemlc check --format=json` on both.

    gen_programs.py --shapemlc PATH --count N --seed S [--keep DIR]

For each i < N the generator builds a program from (seed, i): a small "world"
of shape variables and `where` constraints (products D = H*Dh, F = 3*D, sums
T = S + P, (= (mod S 8) 0) / (divides 8 S), lower bounds S >= 2, windows
K <= S, redundant and noise constraints), whose satisfiability is checked with
Z3 (which also samples a few models), then 1-3 functions of 20-200 bindings in
all: elementwise unary/binary ops with broadcasting (literal-1 dims, rank
extension, literals, consts), compare/select, cast, matmul (2-D, batched,
shared weight), transpose/permute, reshapes whose element-count obligation
needs the constraints, broadcast_to, concat, slices with symbolic start/size,
reductions with keepdims, fill/iota, device copies, ascriptions and calls
between functions (multi-result calls are destructured), and the operations
of spec §4.20-4.23 (not/and/or, softmax/log_softmax, repeat_interleave with
literal or symbolic repeats, dim_value), sin/cos and reduce_min, and those
of §4.27-4.30 with erf and floordiv/mod (cumsum, squeeze/unsqueeze, pad with
literal or symbolic widths, argmax/argmin, top_k bound by a two-name let).

Well-typedness is by construction: every candidate binding goes through the
generator's own model of the typing rules (`Typer` below, a transcription of
language.md §4 over the generator's AST; it never runs shapemlc), which
proves each obligation semantically from the constraints it generated, by
sampled models, or with Z3; a binding that is not proved is discarded.

A mutant is the same program with one change that breaks an obligation:
swap two dims of a parameter type, change a reshape target, drop a `where`
constraint, break a matmul contraction, overrun a slice, break a broadcast,
move a concat axis, change an ascription/return dim, change a parameter dtype,
or transpose a call argument. The Typer re-checks the mutant and predicts the
failing obligations (line, code, both sides as dimension trees). The driver
asserts that shapemlc reports exactly those (line, code) pairs, that at least
one of them is a shape/dtype/rank error (E03xx, E0201, E0203), and that each
counterexample (required for E0301-E0304) satisfies the function's `where`
constraints, gives every shape variable a value >= 1, and falsifies the
predicted obligation when both sides are evaluated here with Python integers.
An E0501 in place of a predicted refutation is tolerated and counted (Z3 does
not always find the model; see README.md). A well-typed program must check
with exit status 0 and no diagnostics at all.

Each program and each mutant is also printed with every function's
parameters as the fields of one bundle (spec §4.32) that the body reads as
`p.NAME`: the bundled program must check as cleanly as the plain one, and
the bundled mutant must fail with the same exit status and error codes.

Output: one line per failure with the program, then `generated: N passed, M
failed` (N + M = 4 * count: programs and mutants, plain and bundled); exit
status 1 on failure.
--keep DIR writes every program and mutant, plus largest.sml (the program with
the most bindings), into DIR. --write-largest PATH writes that program to PATH
(tests/generated/largest.sml is produced with --seed 1 --count 60).

Needs the `z3` Python module (on Debian: /usr/bin/python3 with python3-z3).
"""

import argparse
import collections
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

try:
    import z3
except ImportError:  # pragma: no cover
    sys.exit("gen_programs.py needs the z3 Python module (Debian: /usr/bin/python3 with python3-z3)")


# ----------------------------------------------------------------------------
# Dimension trees: ('int', n) ('var', x) ('+', (a, b, ...)) ('-', a, b)
# ('*', (a, b, ...)) ('floordiv', a, c) ('mod', a, c)

def I(n):
    return ('int', n)


def V(x):
    return ('var', x)


def MUL(*xs):
    fl = []
    for x in xs:
        if x[0] == '*':
            fl.extend(x[1])
        else:
            fl.append(x)
    if len(fl) > 1:
        fl = [x for x in fl if x != I(1)] or [I(1)]
    return fl[0] if len(fl) == 1 else ('*', tuple(fl))


def ADD(*xs):
    fl = []
    for x in xs:
        if x[0] == '+':
            fl.extend(x[1])
        else:
            fl.append(x)
    return fl[0] if len(fl) == 1 else ('+', tuple(fl))


def SUB(a, b):
    return ('-', a, b)


def FDIV(a, c):
    return ('floordiv', a, c)


def dtext(t):
    k = t[0]
    if k == 'int':
        return str(t[1])
    if k == 'var':
        return t[1]
    if k in ('+', '*'):
        return '(' + k + ' ' + ' '.join(dtext(x) for x in t[1]) + ')'
    if k == '-':
        return '(- %s %s)' % (dtext(t[1]), dtext(t[2]))
    return '(%s %s %d)' % (k, dtext(t[1]), t[2])


def deval(t, env):
    """The value of a dimension tree under `env`, in Python integers."""
    k = t[0]
    if k == 'int':
        return t[1]
    if k == 'var':
        return env[t[1]]
    if k == '+':
        return sum(deval(x, env) for x in t[1])
    if k == '*':
        r = 1
        for x in t[1]:
            r *= deval(x, env)
        return r
    if k == '-':
        return deval(t[1], env) - deval(t[2], env)
    if k == 'floordiv':
        return deval(t[1], env) // t[2]
    return deval(t[1], env) % t[2]


def dz3(t, zv):
    k = t[0]
    if k == 'int':
        return z3.IntVal(t[1])
    if k == 'var':
        return zv[t[1]]
    if k == '+':
        r = dz3(t[1][0], zv)
        for x in t[1][1:]:
            r = r + dz3(x, zv)
        return r
    if k == '*':
        r = dz3(t[1][0], zv)
        for x in t[1][1:]:
            r = r * dz3(x, zv)
        return r
    if k == '-':
        return dz3(t[1], zv) - dz3(t[2], zv)
    if k == 'floordiv':
        return dz3(t[1], zv) / z3.IntVal(t[2])
    return dz3(t[1], zv) % z3.IntVal(t[2])


def dsubst(t, sub):
    k = t[0]
    if k == 'int':
        return t
    if k == 'var':
        return sub.get(t[1], t)
    if k in ('+', '*'):
        return (k, tuple(dsubst(x, sub) for x in t[1]))
    if k == '-':
        return ('-', dsubst(t[1], sub), dsubst(t[2], sub))
    return (k, dsubst(t[1], sub), t[2])


def dvars(t, out=None):
    out = set() if out is None else out
    k = t[0]
    if k == 'var':
        out.add(t[1])
    elif k in ('+', '*'):
        for x in t[1]:
            dvars(x, out)
    elif k == '-':
        dvars(t[1], out)
        dvars(t[2], out)
    elif k in ('floordiv', 'mod'):
        dvars(t[1], out)
    return out


def dreplace_var(t, old, new):
    return dsubst(t, {old: V(new)})


# ----------------------------------------------------------------------------
# Polynomials: the normal form of dimension trees (language.md §3.3). Atoms are
# variable names, '(floordiv P c)' / '(mod P c)' keys, and (for the semantic
# forms only) quotient atoms 'S/c' standing for S div c.

class Poly:
    __slots__ = ('t', 'key')

    def __init__(self, t):
        self.t = t
        self.key = tuple(sorted(t.items()))

    @staticmethod
    def const(c):
        return Poly({(): c} if c else {})

    @staticmethod
    def atom(a):
        return Poly({(a,): 1})

    def __add__(self, o):
        t = dict(self.t)
        for m, c in o.t.items():
            v = t.get(m, 0) + c
            if v:
                t[m] = v
            else:
                t.pop(m, None)
        return Poly(t)

    def __neg__(self):
        return Poly({m: -c for m, c in self.t.items()})

    def __sub__(self, o):
        return self + (-o)

    def __mul__(self, o):
        t = {}
        for m1, c1 in self.t.items():
            for m2, c2 in o.t.items():
                m = tuple(sorted(m1 + m2))
                t[m] = t.get(m, 0) + c1 * c2
        return Poly({m: c for m, c in t.items() if c})

    def __eq__(self, o):
        return self.key == o.key

    def __hash__(self):
        return hash(self.key)

    def const_value(self):
        if not self.t:
            return 0
        if len(self.t) == 1 and () in self.t:
            return self.t[()]
        return None

    def is_one(self):
        return self.const_value() == 1

    def lone_var(self):
        if len(self.t) == 1:
            (m, c), = self.t.items()
            if c == 1 and len(m) == 1 and not m[0].startswith('(') and '/' not in m[0]:
                return m[0]
        return None

    def monomial(self):
        """(coeff, atoms) when a single term over variables and quotient
        atoms (no unsimplified floordiv/mod), else None."""
        if len(self.t) == 1:
            (m, c), = self.t.items()
            if not any(a.startswith('(') for a in m):
                return c, m
        return None

    def nonneg(self):
        return all(c >= 0 for c in self.t.values())

    def text(self):
        return repr(self.key)

    def subst(self, m):
        r = Poly.const(0)
        for mono, c in self.t.items():
            term = Poly.const(c)
            for a in mono:
                term = term * (m[a] if a in m else Poly.atom(a))
            r = r + term
        return r


_POLY_CACHE = {}


def poly_of(t):
    p = _POLY_CACHE.get(t)
    if p is not None:
        return p
    k = t[0]
    if k == 'int':
        p = Poly.const(t[1])
    elif k == 'var':
        p = Poly.atom(t[1])
    elif k == '+':
        p = Poly.const(0)
        for x in t[1]:
            p = p + poly_of(x)
    elif k == '*':
        p = Poly.const(1)
        for x in t[1]:
            p = p * poly_of(x)
    elif k == '-':
        p = poly_of(t[1]) - poly_of(t[2])
    else:
        a, c = poly_of(t[1]), t[2]
        cv = a.const_value()
        if k == 'floordiv':
            if c == 1:
                p = a
            elif cv is not None:
                p = Poly.const(cv // c)
            elif all(x % c == 0 for x in a.t.values()):
                p = Poly({m: x // c for m, x in a.t.items()})
            else:
                p = Poly.atom('(floordiv %s %d)' % (a.text(), c))
        else:
            if c == 1:
                p = Poly.const(0)
            elif cv is not None:
                p = Poly.const(cv % c)
            elif all(x % c == 0 for x in a.t.values()):
                p = Poly.const(0)
            else:
                p = Poly.atom('(mod %s %d)' % (a.text(), c))
    _POLY_CACHE[t] = p
    return p


def obviously_positive(p):
    if not p.t:
        return False
    for m, c in p.t.items():
        if c < 0:
            return False
        for a in m:
            if a.startswith('('):
                return False
    return True


# ----------------------------------------------------------------------------
# Constraints: (kind, lhs tree, rhs tree)

def ctext(c):
    return '(%s %s %s)' % (c[0], dtext(c[1]), dtext(c[2]))


def rel_holds(rel, a, b):
    if rel == '=':
        return a == b
    if rel == '!=':
        return a != b
    if rel == '<':
        return a < b
    if rel == '<=':
        return a <= b
    if rel == '>':
        return a > b
    if rel == '>=':
        return a >= b
    if rel == 'divides':
        return a >= 1 and b % a == 0
    raise ValueError(rel)


def cholds(c, env):
    return rel_holds(c[0], deval(c[1], env), deval(c[2], env))


def z3_rel(rel, a, b, hypothesis, fresh):
    if rel == '=':
        return a == b
    if rel == '!=':
        return a != b
    if rel == '<':
        return a < b
    if rel == '<=':
        return a <= b
    if rel == '>':
        return a > b
    if rel == '>=':
        return a >= b
    # divides: a >= 1 and b mod a = 0, as a hypothesis and as a goal (spec §2)
    return z3.And(a >= 1, b % a == 0)


def derive_defs(where, checker=False):
    """Atom -> Poly definitions implied by the constraint forms the generator
    writes; every definition is a consequence of `where`, so two dimensions
    with equal semantic forms are provably equal.

    With checker=True, only the definitions shapemlc itself substitutes into
    goals before its syntactic test (smt/shape_solver.cpp,
    defining_substitution): equalities first, then divisibility; per variable
    the first of `V = poly`, `(= (mod V c) 0)` (V = c*#w) and `(divides p V)`
    (V = p*#w)."""
    defs = {}
    nw = [0]

    def witness():
        nw[0] += 1
        return Poly.atom('#w%d' % (nw[0] - 1))

    def mod_var(a, b):  # (= (mod V c) 0) -> (V, c)
        if a[0] == 'mod' and a[1][0] == 'var' and b == I(0):
            return a[1][1], a[2]
        return None

    order = [c for c in where if c[0] == '='] + [c for c in where if c[0] != '='] if checker else where
    for kind, l, r in order:
        if kind == '=':
            if l[0] == 'var' and l[1] not in dvars(r) and l[1] not in defs:
                defs[l[1]] = poly_of(r)
            elif r[0] == 'var' and r[1] not in dvars(l) and r[1] not in defs:
                defs[r[1]] = poly_of(l)
            elif mod_var(l, r) or mod_var(r, l):
                v, c = mod_var(l, r) or mod_var(r, l)
                _add_mod(defs, v, c, witness() if checker else Poly.atom('%s/%d' % (v, c)))
        elif kind == 'divides' and r[0] == 'var' and r[1] not in dvars(l):
            if l[0] == 'int':
                _add_mod(defs, r[1], l[1], witness() if checker else Poly.atom('%s/%d' % (r[1], l[1])))
            elif checker and r[1] not in defs:
                defs[r[1]] = poly_of(l) * witness()
    return defs


def _add_mod(defs, s, c, q):
    """S = c*q, and the floordiv/mod atoms of S by divisors of c."""
    if s in defs:
        return
    defs[s] = Poly.const(c) * q
    for d in range(2, c + 1):
        if c % d == 0:
            defs['(floordiv %s %d)' % (Poly.atom(s).text(), d)] = Poly.const(c // d) * q
            defs['(mod %s %d)' % (Poly.atom(s).text(), d)] = Poly.const(0)


def divides_syntactically(a, b):
    """shapemlc's syntactic rule for (divides a b), which means a >= 1 and
    b mod a = 0: both constant; a is 1; a is b and evidently >= 1; or a is
    one term c*m over variables (so >= 1) and every term of b is a multiple
    of c*m."""
    ca, cb = a.const_value(), b.const_value()
    if ca is not None and cb is not None:
        return ca >= 1 and cb % ca == 0
    if a.is_one():
        return True
    if a == b:
        d = a - Poly.const(1)
        return d.nonneg() and all(not x.startswith('(') for m in d.t for x in m)
    if len(a.t) != 1:
        return False
    (am, ac), = a.t.items()
    if ac <= 0 or any(x.startswith('(') for x in am):
        return False
    for m, c in b.t.items():
        if c % ac:
            return False
        have = collections.Counter(m)
        have.subtract(collections.Counter(am))
        if any(v < 0 for v in have.values()):
            return False
    return True


PROVED, REFUTED, UNKNOWN = 'proved', 'refuted', 'unknown'


class Prover:
    """Decides obligations under one function's `where` constraints:
    syntactic normal forms, then semantic forms (the generator's definitions),
    then sampled models (refutation), then Z3."""

    def __init__(self, dims, where, models, timeout_ms):
        self.dims = list(dims)
        self.where = list(where)
        self.defs = derive_defs(where)
        self.chk_defs = derive_defs(where, checker=True)
        self.models = []
        for m in models or []:
            try:
                if all(m.get(v, 0) >= 1 for v in dims) and all(cholds(c, m) for c in where):
                    self.models.append(m)
            except (KeyError, ZeroDivisionError):
                pass
        self.timeout_ms = timeout_ms
        self.solver = None
        self.cache = {}
        self.semcache = {}
        self.z3_queries = 0

    def sem(self, t, checker=False):
        key = (t, checker)
        s = self.semcache.get(key)
        if s is None:
            defs = self.chk_defs if checker else self.defs
            s = poly_of(t)
            for _ in range(8):
                n = s.subst(defs)
                if n == s:
                    break
                s = n
            self.semcache[key] = s
        return s

    def sem_equal(self, a, b):
        return poly_of(a) == poly_of(b) or self.sem(a) == self.sem(b)

    def _z3(self):
        if self.solver is None:
            s = z3.Solver()
            s.set('timeout', self.timeout_ms)
            self.zv = {v: z3.Int(v) for v in self.dims}
            for v in self.dims:
                s.add(self.zv[v] >= 1)
            for i, c in enumerate(self.where):
                s.add(z3_rel(c[0], dz3(c[1], self.zv), dz3(c[2], self.zv), True, i))
            self.solver = s
        return self.solver

    def z3_refutes(self, rel, l, r, timeout_ms):
        """Whether Z3 finds a model of the hypotheses that breaks the goal
        within timeout_ms, asked the way shapemlc asks (push, assert the
        negation, check, pop)."""
        key = ('z3', rel, l, r, timeout_ms)
        res = self.cache.get(key)
        if res is None:
            s = self._z3()
            s.set('timeout', timeout_ms)
            s.push()
            s.add(z3.Not(z3_rel(rel, dz3(l, self.zv), dz3(r, self.zv), False, 0)))
            res = s.check() == z3.sat
            s.pop()
            s.set('timeout', self.timeout_ms)
            self.z3_queries += 1
            self.cache[key] = res
        return res

    def prove(self, rel, l, r):
        key = (rel, l, r)
        res = self.cache.get(key)
        if res is None:
            res = self._prove(rel, l, r)
            self.cache[key] = res
        return res

    def hard(self, pl, pr):
        """Obligations that shapemlc hands to Z3 (not decided by its normal
        forms after substituting `where` definitions) and that Z3's
        incremental nonlinear arithmetic may leave undecided although they
        hold: floordiv/mod atoms inside products, several such atoms. A
        holding obligation of this shape is treated as unknown, so the
        generator never relies on one."""
        atoms = set()
        for p in (pl, pr):
            for m in p.t:
                divs = [a for a in m if a.startswith('(')]
                if divs and len(m) > 1:
                    return True
                atoms.update(divs)
        return len(atoms) > 1

    def is_hard(self, rel, l, r):
        pl, pr = poly_of(l), poly_of(r)
        diff = pl - pr
        if diff.const_value() is not None:
            return False
        if self.hard(pl, pr):
            return True
        # a nonlinear inequality: Z3 may not decide it either
        return rel in ('>=', '<=', '<', '>') and not (diff.nonneg() or (-diff).nonneg()) and any(
            len(m) >= 2 and c < 0 for m, c in (diff if rel in ('>=', '>') else -diff).t.items())

    def _prove(self, rel, l, r):
        if rel == '=' and self.sem(l, True) == self.sem(r, True):
            return PROVED  # shapemlc decides it without Z3
        if not self.is_hard(rel, l, r):
            return self._prove1(rel, l, r)
        for m in self.models:
            try:
                if not rel_holds(rel, deval(l, m), deval(r, m)):
                    return REFUTED
            except (KeyError, ZeroDivisionError):
                break
        return UNKNOWN

    def _prove1(self, rel, l, r):
        pl, pr = poly_of(l), poly_of(r)
        diff = pl - pr
        c = diff.const_value()
        if rel == '=':
            if c is not None:
                return PROVED if c == 0 else REFUTED
            if self.sem(l) == self.sem(r):
                return PROVED
        elif rel in ('>=', '<='):
            d = diff if rel == '>=' else -diff
            if c is not None:
                return PROVED if d.const_value() >= 0 else REFUTED
            if d.nonneg() and all(not a.startswith('(') for m in d.t for a in m):
                return PROVED
            sd = self.sem(l) - self.sem(r)
            if rel == '<=':
                sd = -sd
            if sd.nonneg():  # every semantic atom is >= 1
                return PROVED
        elif rel == 'divides':
            if divides_syntactically(pl, pr) or divides_syntactically(self.sem(l, True), self.sem(r, True)):
                return PROVED
            if pl.const_value() is None:
                # shapemlc hands a variable divisor to Z3 as a nonlinear mod,
                # which Z3 does not decide (E0501): never rely on one.
                return UNKNOWN
        for m in self.models:
            try:
                if not rel_holds(rel, deval(l, m), deval(r, m)):
                    return REFUTED
            except (KeyError, ZeroDivisionError):
                break
        s = self._z3()
        self.z3_queries += 1
        s.push()
        s.add(z3.Not(z3_rel(rel, dz3(l, self.zv), dz3(r, self.zv), False, 0)))
        res = s.check()
        s.pop()
        if res == z3.unsat:
            return PROVED
        if res == z3.sat:
            return REFUTED
        return UNKNOWN


# ----------------------------------------------------------------------------
# The generator's AST

FLOAT = ('f32', 'f64', 'bf16')
INTEGRAL = ('i32', 'i64')
NUMERIC = FLOAT + INTEGRAL
UNARY_ANY = ('neg', 'abs', 'relu')
UNARY_FLOAT = ('exp', 'log', 'sqrt', 'rsqrt', 'tanh', 'sigmoid', 'gelu', 'silu', 'sin', 'cos', 'erf')
BINARY = ('add', 'sub', 'mul', 'div', 'max', 'min', 'pow', 'floordiv', 'mod')
NEEDS_INTEGRAL = ('floordiv', 'mod')
ARG = ('argmax', 'argmin')
LOGICAL = ('not', 'and', 'or')  # bool operands only (§4.20)
COMPARE = ('eq', 'ne', 'lt', 'le', 'gt', 'ge')
REDUCE = ('reduce_sum', 'reduce_max', 'reduce_mean', 'reduce_min')
SOFTMAX = ('softmax', 'log_softmax')
NEEDS_FLOAT = set(UNARY_FLOAT) | {'pow', 'reduce_mean'} | set(SOFTMAX)


def family(op):
    if op in UNARY_ANY or op in UNARY_FLOAT or op == 'not':
        return 'unary'
    if op in BINARY or op in ('and', 'or'):
        return 'binary'
    if op in SOFTMAX:
        return 'softmax'
    if op in COMPARE:
        return 'compare'
    if op in REDUCE:
        return 'reduce'
    if op in ARG:
        return 'arg'
    return op


class TT:
    __slots__ = ('dtype', 'dims', 'dev')

    def __init__(self, dtype, dims, dev='host'):
        self.dtype = dtype
        self.dims = tuple(dims)
        self.dev = dev

    @property
    def rank(self):
        return len(self.dims)

    def text(self):
        return '(tensor %s (%s) %s)' % (dtype_text(self.dtype), ' '.join(dtext(d) for d in self.dims), device_text(self.dev))

    def __repr__(self):
        return self.text()


class Ref:
    __slots__ = ('name',)

    def __init__(self, name):
        self.name = name


class Num:
    __slots__ = ('text', 'is_int')

    def __init__(self, text):
        self.text = text
        self.is_int = all(ch.isdigit() or ch == '-' for ch in text)


class Op:
    __slots__ = ('name', 'args', 'a')

    def __init__(self, name, args, **attrs):
        self.name = name
        self.args = list(args)
        self.a = attrs


class Call:
    __slots__ = ('fname', 'args')

    def __init__(self, fname, args):
        self.fname = fname
        self.args = list(args)


class Let:
    __slots__ = ('names', 'asc', 'expr')

    def __init__(self, names, asc, expr):
        self.names = list(names)
        self.asc = asc
        self.expr = expr


class Func:
    def __init__(self, name, dims, where):
        self.name = name
        self.dims = list(dims)
        self.where = list(where)
        self.params = []   # (name, TT)
        self.returns = []  # TT
        self.lets = []
        self.results = []  # names


class Program:
    def __init__(self, name):
        self.name = name
        self.funcs = []
        self.header = []


# print_program(prog, device_var='Dv') writes every function with a host
# parameter generic in its device (spec §3.5): `(devices Dv)`, and Dv where
# it says host; float_var='Tf' every function with a floating parameter
# generic in its floating dtype: `(dtypes (Tf floating))`, and Tf for each
# of f32, f64 and bf16. The variables of the function being printed, or None.
_DEVICE_VAR = None
_FLOAT_VAR = None
_RENAME = {}  # print_program(bundle_params=True): a parameter's name -> its bundle field's


def device_text(dev):
    return _DEVICE_VAR if dev == 'host' and _DEVICE_VAR else dev


def dtype_text(dt):
    return _FLOAT_VAR if dt in FLOAT and _FLOAT_VAR else dt


def etext(x):
    if isinstance(x, Ref):
        return _RENAME.get(x.name, x.name)
    if isinstance(x, Num):
        return x.text
    if isinstance(x, Call):
        return '(call %s%s)' % (x.fname, ''.join(' ' + etext(a) for a in x.args))
    n, a = x.name, x.a
    args = ' '.join(etext(y) for y in x.args)
    if n == 'cast':
        return '(cast %s %s)' % (args, dtype_text(a['dtype']))
    if n == 'const':
        return '(const %s %s%s)' % (a['num'], dtype_text(a['dtype']), ' ' + device_text(a['device']) if a.get('device') else '')
    if n == 'fill':
        if a.get('type') is None:  # checking mode: takes the ascribed type
            return '(fill %s)' % a['num']
        return '(fill %s %s)' % (a['num'], a['type'].text())
    if n == 'iota':
        return '(iota %s :axis %d)' % (a['type'].text(), a['axis'])
    if n == 'permute':
        return '(permute %s (%s))' % (args, ' '.join(map(str, a['perm'])))
    if n in ('reshape', 'broadcast_to'):
        return '(%s %s (%s))' % (n, args, ' '.join(dtext(d) for d in a['shape']))
    if n == 'concat':
        return '(concat %s :axis %d)' % (args, a['axis'])
    if n == 'slice':
        return '(slice %s :axis %d :start %s :size %s)' % (args, a['axis'], dtext(a['start']), dtext(a['size']))
    if n in SOFTMAX:
        return '(%s %s%s)' % (n, args, '' if a.get('axis') is None else ' :axis %d' % a['axis'])
    if n == 'repeat_interleave':
        return '(repeat_interleave %s :repeats %s :axis %d)' % (args, dtext(a['repeats']), a['axis'])
    if n == 'cumsum':
        return '(cumsum %s :axis %d%s)' % (args, a['axis'], ' :reverse true' if a.get('reverse') else '')
    if n == 'squeeze':
        return '(squeeze %s :axes (%s))' % (args, ' '.join(map(str, a['axes'])))
    if n == 'unsqueeze':
        return '(unsqueeze %s :axis %d)' % (args, a['axis'])
    if n == 'pad':
        return '(pad %s :axis %d :low %s :high %s%s)' % (args, a['axis'], dtext(a['low']), dtext(a['high']),
                                                        ' :value %s' % a['value'] if a.get('value') else '')
    if n in ARG:
        return '(%s %s :axis %d%s)' % (n, args, a['axis'], ' :keepdims true' if a.get('keepdims') else '')
    if n == 'top_k':
        return '(top_k %s :k %d :axis %d)' % (args, a['k'], a['axis'])
    if n == 'dim_value':
        return '(dim_value %s %s%s)' % (dtext(a['dim']), dtype_text(a['dtype']), ' ' + device_text(a['device']) if a.get('device') else '')
    if n in REDUCE:
        s = '(%s %s' % (n, args)
        if a.get('axes') is not None:
            s += ' :axes (%s)' % ' '.join(map(str, a['axes']))
        if a.get('keepdims') is not None:
            s += ' :keepdims %s' % ('true' if a['keepdims'] else 'false')
        return s + ')'
    if n == 'copy_to_device':
        return '(copy_to_device %s %s)' % (args, a['device'])
    return '(%s %s)' % (n, args)


def let_text(l):
    head = l.names[0] if len(l.names) == 1 else '(' + ' '.join(l.names) + ')'
    asc = ' ' + l.asc.text() if l.asc is not None else ''
    return '(let %s%s %s)' % (head, asc, etext(l.expr))


def print_program(prog, device_var=None, float_var=None, bundle_params=False):
    """Source text and, per function, the line of each construct.
    `device_var`, `float_var`: functions with a host (floating) parameter
    become generic in their device (floating dtype), under that name (spec
    §3.5). `bundle_params`: each function takes its parameters as the fields
    of one bundle `p` (spec §4.32), declared before it over the function's
    dims, and reads them as `p.NAME`; calls still pass tensors, which the
    expansion makes the same program."""
    global _DEVICE_VAR, _FLOAT_VAR, _RENAME
    out = []

    def emit(s):
        out.append(s)
        return len(out)

    for h in prog.header:
        emit('; ' + h)
    emit('(module %s' % prog.name)
    layout = []
    for fi, f in enumerate(prog.funcs):
        _RENAME = {n: 'p.' + n for n, _ in f.params} if bundle_params and f.params else {}
        if _RENAME:
            emit('  (bundle P_%s (dims %s) %s)' % (f.name, ' '.join(f.dims), ' '.join('(%s %s)' % (n, t.text()) for n, t in f.params)))
        lay = {'first': emit('  (func %s' % f.name)}
        _DEVICE_VAR = device_var if device_var and any(t.dev == 'host' for _, t in f.params) else None
        _FLOAT_VAR = float_var if float_var and any(t.dtype in FLOAT for _, t in f.params) else None
        if _FLOAT_VAR:
            emit('    (dtypes (%s floating))' % _FLOAT_VAR)
        if _DEVICE_VAR:
            emit('    (devices %s)' % _DEVICE_VAR)
        emit('    (dims %s)' % ' '.join(f.dims))
        if f.where:
            lay['where'] = emit('    (where %s)' % ' '.join(ctext(c) for c in f.where))
        lay['params'] = []
        if _RENAME:
            lay['params'] = [emit('    (params (p (P_%s %s)))' % (f.name, ' '.join(f.dims)))] * len(f.params)
        elif f.params:
            emit('    (params')
            for i, (n, t) in enumerate(f.params):
                lay['params'].append(emit('      (%s %s)%s' % (n, t.text(), ')' if i + 1 == len(f.params) else '')))
        else:
            emit('    (params)')
        lay['returns'] = emit('    (returns %s)' % ' '.join(t.text() for t in f.returns))
        lay['lets'] = [emit('    ' + let_text(l)) for l in f.lets]
        close = ')' + (')' if fi + 1 == len(prog.funcs) else '')
        lay['ret'] = emit('    (return %s)%s' % (' '.join(_RENAME.get(r, r) for r in f.results), close))
        lay['last'] = lay['ret']
        layout.append(lay)
    _DEVICE_VAR = _FLOAT_VAR = None
    _RENAME = {}
    return '\n'.join(out) + '\n', layout


# ----------------------------------------------------------------------------
# Typer: language.md §4 over the generator's AST. It mirrors the order in which
# shapemlc reports (operands first, all obligations of a rule, a failed binding
# poisons its names silently, a failed function is not callable), so that it
# can predict the exact diagnostics of a mutant.

class Failure:
    __slots__ = ('line', 'code', 'obl', 'func')

    def __init__(self, line, code, obl, func):
        self.line, self.code, self.obl, self.func = line, code, obl, func

    def __repr__(self):
        o = '' if self.obl is None else ' (%s %s %s)' % (self.obl[0], dtext(self.obl[1]), dtext(self.obl[2]))
        return '%s@%s%s' % (self.code, self.line, o)


def product(dims):
    return MUL(*dims) if dims else I(1)


class ModTyper:
    def __init__(self, provers):
        self.provers = provers  # function index -> Prover
        self.sigs = {}
        self.poisoned = set()
        self.fails = []

    def run(self, prog, layout=None):
        for fi, f in enumerate(prog.funcs):
            ft = FuncTyper(self, f, self.provers[fi], layout[fi] if layout else None)
            ft.begin()
            for li, l in enumerate(f.lets):
                ft.line = layout[fi]['lets'][li] if layout else None
                ft.let(l)
            ft.finish()
        return self.fails


class FuncTyper:
    def __init__(self, mod, f, prover, lay=None):
        self.mod, self.f, self.p, self.lay = mod, f, prover, lay
        self.env = {}
        self.order = []  # names in definition order (not poisoned)
        self.line = None
        self.errors_before = len(mod.fails)

    # -- helpers --
    def require(self, rel, l, r, code):
        res = self.p.prove(rel, l, r)
        if res == PROVED:
            return True
        self.mod.fails.append(Failure(self.line, 'E0501' if res == UNKNOWN else code, (rel, l, r), self.f.name))
        return False

    def fail(self, code):
        self.mod.fails.append(Failure(self.line, code, None, self.f.name))

    def wf(self, t):
        ok = True
        for d in t.dims:
            if not obviously_positive(poly_of(d)):
                ok &= self.require('>=', d, I(1), 'E0305')
        return ok

    def subsumes(self, a, e):
        if a.dtype != e.dtype:
            self.fail('E0201')
            return False
        if a.dev != e.dev:
            self.fail('E0401')
            return False
        if a.rank != e.rank:
            self.fail('E0203')
            return False
        ok = True
        for x, y in zip(a.dims, e.dims):
            if poly_of(x) != poly_of(y):
                ok &= self.require('=', x, y, 'E0301')
        return ok

    def broadcast(self, a, b):
        n = max(len(a), len(b))
        out = []
        ok = True
        for i in range(n):
            da = a[i + len(a) - n] if i + len(a) >= n else None
            db = b[i + len(b) - n] if i + len(b) >= n else None
            if da is None:
                out.append(db)
                continue
            if db is None:
                out.append(da)
                continue
            pa, pb = poly_of(da), poly_of(db)
            if pa == pb or pb.is_one():
                out.append(da)
                continue
            if pa.is_one():
                out.append(db)
                continue
            out.append(da)
            ok &= self.require('=', da, db, 'E0302')
        return tuple(out) if ok else None

    def dtype_ok(self, op, t):
        if op in LOGICAL:
            ok = t.dtype == 'bool'
        elif op in NEEDS_INTEGRAL:
            ok = t.dtype in INTEGRAL
        else:
            ok = t.dtype in FLOAT if op in NEEDS_FLOAT else t.dtype in NUMERIC
        if not ok:
            self.fail('E0202')
        return ok

    def norm_axis(self, a, rank):
        if a < -rank or a >= rank:
            self.fail('E0204')
            return None
        return a + rank if a < 0 else a

    def same_dtype(self, ins, frm=0):
        for t in ins[frm + 1:]:
            if t.dtype != ins[frm].dtype:
                self.fail('E0201')
                return False
        return True

    def same_device(self, ins):
        for t in ins[1:]:
            if t.dev != ins[0].dev:
                self.fail('E0401')
                return False
        return True

    # -- functions --
    def begin(self):
        f = self.f
        for i, (n, t) in enumerate(f.params):
            self.line = self.lay['params'][i] if self.lay else None
            self.add_param_type(n, t)

    def add_param_type(self, n, t):
        ok = self.wf(t)
        self.env[n] = t if ok else None
        if ok:
            self.order.append(n)
        return ok

    def finish(self):
        f = self.f
        self.line = self.lay['returns'] if self.lay else None
        rets_ok = [self.wf(t) for t in f.returns]
        self.line = self.lay['ret'] if self.lay else None
        if all(rets_ok) and len(f.results) != len(f.returns):
            self.fail('E0205')
        elif all(rets_ok):
            for r, t in zip(f.results, f.returns):
                if r not in self.env:
                    self.fail('E0101')
                    continue
                v = self.env[r]
                if v is None:
                    continue
                self.subsumes(v, t)
        if len(self.mod.fails) > self.errors_before:
            self.mod.poisoned.add(f.name)
            return False
        self.mod.sigs[f.name] = f
        return True

    def bind(self, name, t):
        self.env[name] = t
        if t is not None:
            self.order.append(name)

    def let(self, l):
        for n in l.names:
            if n in self.env:
                self.fail('E0102')
                return
        if isinstance(l.expr, Op) and l.expr.name == 'top_k' and len(l.names) == 2:  # §4.31: values and i64 indices
            rs = self.top_k(l.expr)
            for n, t in zip(l.names, rs or (None, None)):
                self.bind(n, t)
            return
        if len(l.names) > 1 or isinstance(l.expr, Call):
            if not isinstance(l.expr, Call):
                self.fail('E0205')
                for n in l.names:
                    self.bind(n, None)
                return
            rs = self.call(l.expr, len(l.names))
            if rs is None:
                for n in l.names:
                    self.bind(n, None)
                return
            for n, t in zip(l.names, rs):
                self.bind(n, t)
            if l.asc is not None and len(l.names) == 1:
                if self.wf(l.asc):
                    if self.subsumes(rs[0], l.asc):
                        self.env[l.names[0]] = l.asc  # T-LetAsc: x : τ'
            return
        want = None
        if l.asc is not None:
            if not self.wf(l.asc):
                self.bind(l.names[0], None)
                return
            want = l.asc
        t = self.expr(l.expr, want)
        if t is None:
            self.bind(l.names[0], None)
            return
        if want is not None:
            if not self.subsumes(t, want):
                self.bind(l.names[0], None)
                return
            t = want  # T-LetAsc: x : τ'
        self.bind(l.names[0], t)

    def literal(self, num, dt, dev, dims):
        if dt in INTEGRAL and not num.is_int:
            self.fail('E0207')
            return None
        if dt == 'bool' and num.text not in ('0', '1'):
            self.fail('E0207')
            return None
        return TT(dt, dims, dev)

    def expr(self, x, expected=None):
        if isinstance(x, Ref):
            if x.name not in self.env:
                self.fail('E0101')
                return None
            return self.env[x.name]
        if isinstance(x, Num):
            if expected is None:
                self.fail('E0206')
                return None
            return self.literal(x, expected.dtype, expected.dev, expected.dims)
        if isinstance(x, Call):
            rs = self.call(x, 1)
            return rs[0] if rs else None
        op, fam = x.name, family(x.name)
        if op == 'fill' and x.a.get('type') is None:
            if expected is None:
                self.fail('E0206')
                return None
            return self.literal(Num(x.a['num']), expected.dtype, expected.dev, expected.dims)
        binaryish = fam in ('binary', 'compare', 'select')
        vals = [None] * len(x.args)
        ok = True
        for i, a in enumerate(x.args):
            if binaryish and isinstance(a, Num):
                continue
            vals[i] = self.expr(a)
            ok &= vals[i] is not None
        if not ok:
            return None
        if binaryish:
            ref = None
            for i in range(1 if fam == 'select' else 0, len(vals)):
                if vals[i] is not None:
                    ref = vals[i]
            for i in range(len(vals)):
                if vals[i] is not None:
                    continue
                if ref is None and not (fam == 'select' and i == 0):
                    self.fail('E0206')
                    return None
                rt = ref if ref is not None else vals[1]
                dt = 'bool' if (fam == 'select' and i == 0) else rt.dtype
                vals[i] = self.literal(x.args[i], dt, rt.dev, ())
                if vals[i] is None:
                    return None
        return self.type_op(x, vals)

    def type_op(self, x, ins):
        op, fam, a = x.name, family(x.name), x.a
        if fam == 'unary':
            return ins[0] if self.dtype_ok(op, ins[0]) else None
        if fam in ('binary', 'compare'):
            if not self.same_dtype(ins) or not self.same_device(ins):
                return None
            if fam == 'binary' and not self.dtype_ok(op, ins[0]):
                return None
            s = self.broadcast(ins[0].dims, ins[1].dims)
            if s is None:
                return None
            return TT('bool' if fam == 'compare' else ins[0].dtype, s, ins[0].dev)
        if fam == 'select':
            if ins[0].dtype != 'bool':
                self.fail('E0201')
                return None
            if not self.same_dtype(ins, 1) or not self.same_device(ins):
                return None
            s = self.broadcast(ins[0].dims, ins[1].dims)
            if s is None:
                return None
            s = self.broadcast(s, ins[2].dims)
            if s is None:
                return None
            return TT(ins[1].dtype, s, ins[0].dev)
        if op == 'cast':
            return TT(a['dtype'], ins[0].dims, ins[0].dev)
        if op == 'const':
            return self.literal(Num(a['num']), a['dtype'], a.get('device') or 'host', ())
        if op == 'fill':
            t = a['type']
            if not self.wf(t):
                return None
            return self.literal(Num(a['num']), t.dtype, t.dev, t.dims)
        if op == 'iota':
            t = a['type']
            if not self.wf(t):
                return None
            if t.dtype not in NUMERIC:
                self.fail('E0202')
                return None
            if a['axis'] < 0 or a['axis'] >= t.rank:
                self.fail('E0204')
                return None
            if not self.wf(t):
                return None
            return t
        if op == 'matmul':
            A, B = ins
            if not self.same_dtype(ins) or not self.same_device(ins) or not self.dtype_ok(op, A):
                return None
            if A.rank < 2 or B.rank < 2:
                self.fail('E0203')
                return None
            ok = True
            if poly_of(A.dims[-1]) != poly_of(B.dims[-2]):
                ok &= self.require('=', A.dims[-1], B.dims[-2], 'E0301')
            # Batch dimensions broadcast (spec §4.10), after the contraction.
            batch = self.broadcast(tuple(A.dims[:-2]), tuple(B.dims[:-2]))
            if not ok or batch is None:
                return None
            return TT(A.dtype, tuple(batch) + (A.dims[-2], B.dims[-1]), A.dev)
        if op == 'transpose':
            if ins[0].rank < 2:
                self.fail('E0203')
                return None
            d = list(ins[0].dims)
            d[-1], d[-2] = d[-2], d[-1]
            return TT(ins[0].dtype, d, ins[0].dev)
        if op == 'permute':
            p = a['perm']
            if sorted(p) != list(range(ins[0].rank)):
                self.fail('E0204')
                return None
            return TT(ins[0].dtype, [ins[0].dims[i] for i in p], ins[0].dev)
        if op == 'reshape':
            t = TT(ins[0].dtype, a['shape'], ins[0].dev)
            if not self.wf(t):
                return None
            src, dst = product(ins[0].dims), product(a['shape'])
            if poly_of(src) != poly_of(dst) and not self.require('=', src, dst, 'E0303'):
                return None
            return t
        if op == 'broadcast_to':
            s, to = ins[0].dims, tuple(a['shape'])
            t = TT(ins[0].dtype, to, ins[0].dev)
            if not self.wf(t):
                return None
            if len(s) > len(to):
                self.fail('E0203')
                return None
            ok = True
            for i, d in enumerate(s):
                b = to[i + len(to) - len(s)]
                pa = poly_of(d)
                if pa.is_one() or pa == poly_of(b):
                    continue
                ok &= self.require('=', d, b, 'E0302')
            return t if ok else None
        if op == 'concat':
            if not self.same_dtype(ins) or not self.same_device(ins):
                return None
            for t in ins[1:]:
                if t.rank != ins[0].rank:
                    self.fail('E0203')
                    return None
            ax = self.norm_axis(a['axis'], ins[0].rank)
            if ax is None:
                return None
            dims = list(ins[0].dims)
            ok = True
            for t in ins[1:]:
                dims[ax] = ADD(dims[ax], t.dims[ax])
                for d in range(ins[0].rank):
                    if d != ax and poly_of(ins[0].dims[d]) != poly_of(t.dims[d]):
                        ok &= self.require('=', ins[0].dims[d], t.dims[d], 'E0301')
            return TT(ins[0].dtype, dims, ins[0].dev) if ok else None
        if op == 'slice':
            r = ins[0].rank
            axis = a['axis'] + r if -r <= a['axis'] < 0 else a['axis']
            ax = self.norm_axis(axis, r)
            if ax is None:
                return None
            d = ins[0].dims[ax]
            st, sz = a['start'], a['size']
            ok = self.require('>=', st, I(0), 'E0304')
            ok &= self.require('>=', sz, I(1), 'E0304')
            ok &= self.require('<=', ADD(st, sz), d, 'E0304')
            if not ok:
                return None
            dims = list(ins[0].dims)
            dims[ax] = sz
            return TT(ins[0].dtype, dims, ins[0].dev)
        if fam == 'reduce':
            t = ins[0]
            if not self.dtype_ok(op, t):
                return None
            r = t.rank
            axes = list(range(r)) if a.get('axes') is None else [v + r if -r <= v < 0 else v for v in a['axes']]
            seen = set()
            for v in axes:
                n = self.norm_axis(v, r)
                if n is None:
                    return None
                if n in seen:
                    self.fail('E0204')
                    return None
                seen.add(n)
            dims = []
            for i, d in enumerate(t.dims):
                if i not in seen:
                    dims.append(d)
                elif a.get('keepdims'):
                    dims.append(I(1))
            return TT(t.dtype, dims, t.dev)
        if fam == 'softmax' or op == 'cumsum':  # §4.21, §4.27: the operand's type
            t = ins[0]
            if not self.dtype_ok(op, t):
                return None
            if t.rank < 1:
                self.fail('E0203')
                return None
            return t if self.norm_axis(a.get('axis', -1), t.rank) is not None else None
        if op == 'repeat_interleave':  # §4.22: dimension `axis` times the repeats, repeats >= 1
            t = ins[0]
            if t.rank < 1:
                self.fail('E0203')
                return None
            ax = self.norm_axis(a['axis'], t.rank)
            if ax is None:
                return None
            r = a['repeats']
            if not obviously_positive(poly_of(r)) and not self.require('>=', r, I(1), 'E0305'):
                return None
            dims = list(t.dims)
            dims[ax] = MUL(dims[ax], r)
            return TT(t.dtype, dims, t.dev)
        if op == 'squeeze':  # §4.28: each named dimension provably 1, removed
            t = ins[0]
            seen = set()
            for v in a['axes']:
                n = self.norm_axis(v, t.rank)
                if n is None:
                    return None
                if n in seen:
                    self.fail('E0204')
                    return None
                seen.add(n)
            ok = True
            for n in sorted(seen):
                if t.dims[n] != I(1):
                    ok &= self.require('=', t.dims[n], I(1), 'E0301')
            if not ok:
                return None
            return TT(t.dtype, [d for i, d in enumerate(t.dims) if i not in seen], t.dev)
        if op == 'unsqueeze':  # §4.28: a 1 inserted as dimension `axis` of the result
            t = ins[0]
            n = self.norm_axis(a['axis'], t.rank + 1)
            if n is None:
                return None
            dims = list(t.dims)
            dims.insert(n, I(1))
            return TT(t.dtype, dims, t.dev)
        if op == 'pad':  # §4.29: widths >= 0, dimension low + d + high
            t = ins[0]
            if t.rank < 1:
                self.fail('E0203')
                return None
            n = self.norm_axis(a['axis'], t.rank)
            if n is None:
                return None
            ok = True
            for wd in (a['low'], a['high']):
                if not (wd[0] == 'int' and wd[1] >= 0) and not obviously_positive(poly_of(wd)):
                    ok &= self.require('>=', wd, I(0), 'E0309')
            if not ok:
                return None
            dims = list(t.dims)
            dims[n] = ADD(a['low'], dims[n], a['high'])
            return TT(t.dtype, dims, t.dev)
        if fam == 'arg':  # §4.30: i64 indices, the axis removed (or 1)
            t = ins[0]
            if not self.dtype_ok(op, t):
                return None
            if t.rank < 1:
                self.fail('E0203')
                return None
            n = self.norm_axis(a['axis'], t.rank)
            if n is None:
                return None
            dims = [I(1) if i == n else d for i, d in enumerate(t.dims) if i != n or a.get('keepdims')]
            return TT('i64', dims, t.dev)
        if op == 'dim_value':  # §4.23: a rank-0 value of a numeric dtype
            if a['dtype'] not in NUMERIC:
                self.fail('E0202')
                return None
            return TT(a['dtype'], (), a.get('device') or 'host')
        if op == 'copy_to_device':
            return TT(ins[0].dtype, ins[0].dims, a['device'])
        if op == 'copy_to_host':
            return TT(ins[0].dtype, ins[0].dims, 'host')
        raise ValueError('no rule for ' + op)

    def top_k(self, x):
        t = self.expr(x.args[0])
        if t is None:
            return None
        if t.dtype not in NUMERIC:
            self.fail('E0202')
            return None
        if t.rank < 1:
            self.fail('E0203')
            return None
        n = self.norm_axis(x.a['axis'], t.rank)
        if n is None or not self.require('<=', I(x.a['k']), t.dims[n], 'E0304'):
            return None
        dims = list(t.dims)
        dims[n] = I(x.a['k'])
        return TT(t.dtype, dims, t.dev), TT('i64', dims, t.dev)

    def call(self, x, want):
        callee = self.mod.sigs.get(x.fname)
        if callee is None:
            if x.fname not in self.mod.poisoned:
                self.fail('E0105')
            return None
        args = []
        ok = True
        for e in x.args:
            v = self.expr(e)
            args.append(v)
            ok &= v is not None
        if not ok:
            return None
        if len(args) != len(callee.params) or want != len(callee.returns):
            self.fail('E0205')
            return None
        sub = {}
        for (_, pt), at in zip(callee.params, args):
            if pt.rank != at.rank:
                continue
            for pd, ad in zip(pt.dims, at.dims):
                v = poly_of(pd).lone_var()
                if v is not None and v not in sub:
                    sub[v] = ad
        for d in callee.dims:
            if d not in sub:
                self.fail('E0306')
                return None
        for (_, pt), at in zip(callee.params, args):
            inst = TT(pt.dtype, [dsubst(d, sub) for d in pt.dims], pt.dev)
            ok &= self.subsumes(at, inst)
        for c in callee.where:
            ok &= self.require(c[0], dsubst(c[1], sub), dsubst(c[2], sub), 'E0306')
        if not ok:
            return None
        return [TT(t.dtype, [dsubst(d, sub) for d in t.dims], t.dev) for t in callee.returns]

    # -- generation helpers: try without leaving a trace --
    def returns_ok(self, names, types):
        n = len(self.mod.fails)
        ok = all([self.wf(t) for t in types])
        for r, t in zip(names, types):
            ok = ok and self.env.get(r) is not None and self.subsumes(self.env[r], t)
        ok = ok and len(self.mod.fails) == n
        del self.mod.fails[n:]
        return ok

    def type_of(self, e):
        n = len(self.mod.fails)
        t = self.expr(e)
        if len(self.mod.fails) > n:
            del self.mod.fails[n:]
            return None
        return t

    def try_let(self, l):
        n = len(self.mod.fails)
        self.let(l)
        if len(self.mod.fails) > n or any(self.env.get(nm) is None for nm in l.names):
            del self.mod.fails[n:]
            for nm in l.names:
                self.env.pop(nm, None)
                if nm in self.order:
                    self.order.remove(nm)
            return False
        return True

    def try_param(self, name, t):
        n = len(self.mod.fails)
        ok = self.add_param_type(name, t)
        if not ok or len(self.mod.fails) > n:
            del self.mod.fails[n:]
            self.env.pop(name, None)
            if name in self.order:
                self.order.remove(name)
            return False
        self.f.params.append((name, t))
        return True


# ----------------------------------------------------------------------------
# Worlds: shape variables with roles and constraints

ODD_NAMES = {'batch': 'b_0', 'batch2': "n'", 'seq': 'seq.len', 'model': 'd.model', 'heads': 'n_heads',
             'headdim': "dh'", 'hidden': 'F2', 'window': 'win', 'extra': 'P.x', 'total': "T'"}
STD_NAMES = {'batch': 'B', 'batch2': 'N', 'seq': 'S', 'model': 'D', 'heads': 'H', 'headdim': 'Dh',
             'hidden': 'F', 'window': 'K', 'extra': 'P', 'total': 'T'}


class World:
    def __init__(self, rng, odd):
        self.rng = rng
        self.vars = []
        self.role = {}      # var -> role
        self.byrole = {}    # role -> var
        self.where = []
        self.lower = {}     # var -> known lower bound
        self.windows = []   # (K, S): K <= S
        self.sums = []      # (T, S, P): T = S + P
        self.mods = {}      # S -> c
        self.prods = {}     # D -> (H, Dh)
        self.odd = odd
        self.models = []
        self.dtype = 'f32'
        self.dev = 'host'

    def add(self, role):
        name = ODD_NAMES[role] if self.rng.random() < self.odd else STD_NAMES[role]
        self.vars.append(name)
        self.role[name] = role
        self.byrole[role] = name
        return name


def make_world(rng):
    w = World(rng, 0.12)
    r = rng.random
    B = w.add('batch')
    if r() < 0.3:
        w.add('batch2')
    S = w.add('seq')
    D = w.add('model')
    cons = []
    if r() < 0.6:
        H, Dh = w.add('heads'), w.add('headdim')
        w.prods[D] = (H, Dh)
        cons.append(rng.choice([('=', V(D), MUL(V(H), V(Dh))), ('=', MUL(V(H), V(Dh)), V(D)),
                                ('=', V(D), MUL(V(Dh), V(H)))]))
        if r() < 0.1:
            # redundant (implied by the product)
            cons.append(('divides', V(H), V(D)))
    if r() < 0.55:
        F = w.add('hidden')
        if r() < 0.5:
            e = rng.choice([2, 3, 4])
            cons.append(rng.choice([('=', V(F), MUL(I(e), V(D))), ('=', MUL(V(D), I(e)), V(F))]))
    if r() < 0.4:
        c = rng.choice([2, 4, 8])
        w.mods[S] = c
        w.lower[S] = max(w.lower.get(S, 1), c)
        cons.append(rng.choice([('=', ('mod', V(S), c), I(0)), ('divides', I(c), V(S))]))
    if r() < 0.45:
        k = rng.choice([2, 3, 4])
        w.lower[S] = max(w.lower.get(S, 1), k)
        cons.append(rng.choice([('>=', V(S), I(k)), ('>', V(S), I(k - 1)), ('<=', I(k), V(S)), ('<', I(k - 1), V(S))]))
    if r() < 0.3:
        K = w.add('window')
        w.windows.append((K, S))
        cons.append(rng.choice([('<=', V(K), V(S)), ('>=', V(S), V(K))]))
    if r() < 0.25:
        P, T = w.add('extra'), w.add('total')
        w.sums.append((T, S, P))
        cons.append(rng.choice([('=', V(T), ADD(V(S), V(P))), ('=', ADD(V(P), V(S)), V(T))]))
    if r() < 0.1:
        cons.append(('!=', V(B), V(S)))
    rng.shuffle(cons)
    w.where = cons
    if r() < 0.2:
        w.dtype = rng.choice(['f64', 'bf16'])
    if r() < 0.15:
        w.dev = '(cuda 0)'
    return w


def sample_models(w, rng, n=4):
    """Checks the constraints are satisfiable and returns up to n models."""
    s = z3.Solver()
    s.set('timeout', 2000)
    zv = {v: z3.Int(v) for v in w.vars}
    for v in w.vars:
        s.add(zv[v] >= 1)
    for i, c in enumerate(w.where):
        s.add(z3_rel(c[0], dz3(c[1], zv), dz3(c[2], zv), True, 1000 + i))
    if s.check() != z3.sat:
        return None
    models = []
    for _ in range(n):
        s.push()
        for v in w.vars:
            if rng.random() < 0.7:
                s.add(zv[v] >= rng.randint(1, 9))
        for m in models:
            s.add(z3.Or([zv[v] != m[v] for v in w.vars]))
        if s.check() == z3.sat:
            md = s.model()
            models.append({v: md.eval(zv[v], model_completion=True).as_long() for v in w.vars})
        s.pop()
    return models


# ----------------------------------------------------------------------------
# Program generation

def prime_factors(n):
    f, p = [], 2
    while n > 1 and p * p <= n:
        while n % p == 0:
            f.append(p)
            n //= p
        p += 1
    if n > 1:
        f.append(n)
    return f


class Gen:
    """Builds one function into `f`, typing every binding with `ft`."""

    def __init__(self, rng, w, f, ft, callees):
        self.rng, self.w, self.f, self.ft, self.callees = rng, w, f, ft, callees
        self.p = ft.p
        self.counter = 0
        self.max_params = 14
        # named spellings for semantic monomials
        self.named = []
        for v in w.vars:
            self.named.append(V(v))
        for s_, c in w.mods.items():
            self.named.append(FDIV(V(s_), c))

    # -- names and picking --
    def fresh(self, prefix):
        while True:
            self.counter += 1
            n = '%s%d' % (prefix, self.counter)
            if n not in self.ft.env:
                return n

    def values(self, pred=None):
        out = []
        for n in self.ft.order:
            t = self.ft.env.get(n)
            if t is not None and (pred is None or pred(t)):
                out.append((n, t))
        return out

    def pick(self, pred=None):
        vs = self.values(pred)
        if not vs:
            return None
        k = min(int(self.rng.expovariate(1 / 6.0)), len(vs) - 1)
        n, t = vs[len(vs) - 1 - k]
        return Ref(n), t

    # -- spelling of dimensions --
    def sem(self, d):
        return self.p.sem(d)

    def spell_monomial(self, coeff, atoms):
        rng = self.rng
        remaining = collections.Counter(atoms)
        pieces = []
        cands = list(self.named)
        rng.shuffle(cands)
        for t in cands:
            mono = self.sem(t).monomial()
            if mono is None:
                continue
            c2, a2 = mono
            need = collections.Counter(a2)
            if c2 > 0 and coeff % c2 == 0 and all(remaining[a] >= n for a, n in need.items()) and (
                    len(a2) > 1 or c2 > 1 or rng.random() < 0.8):
                if len(a2) == 0:
                    continue
                pieces.append(t)
                remaining -= need
                coeff //= c2
        for a in sorted(remaining.elements()):
            if '/' in a:
                s_, c = a.rsplit('/', 1)
                pieces.append(FDIV(V(s_), int(c)))
            else:
                pieces.append(V(a))
        if coeff != 1 or not pieces:
            pieces.insert(rng.randrange(len(pieces) + 1), I(coeff))
        if len(pieces) > 1 and rng.random() < 0.5:
            rng.shuffle(pieces)
        return MUL(*pieces)

    def respell(self, d, p=0.35):
        if self.rng.random() >= p or poly_of(d).const_value() is not None:
            return d
        mono = self.sem(d).monomial()
        if mono is None or mono[0] <= 0:
            return d
        return self.spell_monomial(mono[0], mono[1])

    def respell_type(self, t, p=0.35):
        return TT(t.dtype, [self.respell(d, p) for d in t.dims], t.dev)

    def vocab_dim(self):
        rng, w = self.rng, self.w
        x = rng.random()
        if x < 0.7:
            return V(rng.choice(w.vars))
        if x < 0.82:
            a, b = rng.sample(w.vars, 2) if len(w.vars) > 1 else (w.vars[0], w.vars[0])
            return MUL(V(a), V(b))
        if x < 0.9 and w.mods:
            s_ = rng.choice(sorted(w.mods))
            return FDIV(V(s_), w.mods[s_])
        return I(rng.choice([2, 3, 4, 8]))

    def compatible(self, a, b):
        """Broadcast-compatible by construction (semantic equality)."""
        for x, y in zip(reversed(a), reversed(b)):
            if poly_of(x).is_one() or poly_of(y).is_one():
                continue
            if not self.p.sem_equal(x, y):
                return False
        return True

    def same_shape(self, a, b):
        return len(a) == len(b) and all(self.p.sem_equal(x, y) for x, y in zip(a, b))

    def new_param(self, t, prefix='p', extra=0):
        if len(self.f.params) >= self.max_params + extra:
            return None
        n = self.fresh(prefix)
        if self.ft.try_param(n, t):
            return Ref(n), t
        return None

    def float_dt(self):
        return self.w.dtype

    # -- partners for elementwise binary operations --
    def partner(self, t, allow_literal=True):
        rng = self.rng
        x = rng.random()
        if allow_literal and x < 0.15:
            if t.dtype in INTEGRAL:
                return Num(rng.choice(['1', '2', '3', '-1'])), TT(t.dtype, (), t.dev)
            return Num(rng.choice(['0.5', '2.0', '1e-5', '-1.0', '3', '1.5e2'])), TT(t.dtype, (), t.dev)
        if allow_literal and x < 0.22:
            num = rng.choice(['2', '1']) if t.dtype in INTEGRAL else rng.choice(['0.25', '2.0', '1'])
            a = {'num': num, 'dtype': t.dtype}
            if t.dev != 'host':
                a['device'] = t.dev
            return Op('const', [], **a), TT(t.dtype, (), t.dev)
        if x < 0.3 and t.rank >= 1 and t.dtype in NUMERIC:
            return None  # the caller reduces its own operand with keepdims
        if x < 0.6:
            cands = self.values(lambda u: u.dtype == t.dtype and u.dev == t.dev and u.rank <= t.rank + 1
                                and self.compatible(u.dims, t.dims))
            if cands:
                k = min(int(rng.expovariate(1 / 8.0)), len(cands) - 1)
                n, u = cands[len(cands) - 1 - k]
                return Ref(n), u
        # a new parameter: drop leading dims, put literal 1s, respell others
        dims = list(t.dims)
        if dims and rng.random() < 0.5:
            dims = dims[rng.randrange(len(dims) + 1):]
        dims = [I(1) if rng.random() < 0.3 else self.respell(d) for d in dims]
        return self.new_param(TT(t.dtype, dims, t.dev), 'b')

    def binary_with(self, e, t):
        rng = self.rng
        if t.dtype not in NUMERIC:
            return None
        ops = ['add', 'sub', 'mul', 'div', 'max', 'min'] + (['pow'] if t.dtype in FLOAT else []) + \
            (list(NEEDS_INTEGRAL) if t.dtype in INTEGRAL else [])
        op = rng.choice(ops)
        pr = self.partner(t)
        if pr is None:
            r = rng.random()
            rop = rng.choice(['reduce_max', 'reduce_sum'] + (['reduce_mean'] if t.dtype in FLOAT else []))
            if t.rank == 0:
                return None
            axes = [-1] if r < 0.6 else [rng.randrange(t.rank)]
            b = Op(rop, [e], axes=axes, keepdims=True)
            return Op(op, [e, b])
        b, _ = pr
        if isinstance(b, Num) or rng.random() < 0.6:
            return Op(op, [e, b])
        return Op(op, [b, e])

    # -- generators: each returns an expression (or None) --
    def g_unary(self):
        pk = self.pick(lambda t: t.dtype in NUMERIC)
        if not pk:
            return None
        e, t = pk
        ops = UNARY_ANY + (UNARY_FLOAT if t.dtype in FLOAT else ())
        return Op(self.rng.choice(ops), [e])

    def g_binary(self):
        pk = self.pick(lambda t: t.dtype in NUMERIC)
        if not pk:
            return None
        return self.binary_with(*pk)

    def g_select(self):
        rng = self.rng
        pk = self.pick(lambda t: t.dtype in NUMERIC)
        if not pk:
            return None
        e, t = pk
        conds = self.values(lambda u: u.dtype == 'bool' and u.dev == t.dev and self.compatible(u.dims, t.dims))
        if conds and rng.random() < 0.5:
            c = Ref(rng.choice(conds)[0])
        else:
            pr = self.partner(t)
            if pr is None:
                pr = (Num('0' if t.dtype in INTEGRAL else '0.0'), None)
            c = Op(rng.choice(COMPARE), [e, pr[0]])
            if rng.random() < 0.4:
                return c  # a bool value, used by later selects
        other = self.partner(t, allow_literal=True)
        if other is None:
            other = (Num('0' if t.dtype in INTEGRAL else '0.0'), None)
        return Op('select', [c, e, other[0]])

    def g_cast(self):
        pk = self.pick()
        if not pk:
            return None
        e, t = pk
        choices = [d for d in ('f32', 'f64', 'bf16', 'i32', 'i64') if d != t.dtype]
        if t.dtype != self.w.dtype and self.rng.random() < 0.7:
            dt = self.w.dtype
        else:
            dt = self.rng.choice(choices)
        return Op('cast', [e], dtype=dt)

    def g_matmul(self):
        rng = self.rng
        pk = self.pick(lambda t: t.dtype in NUMERIC and t.rank >= 2)
        if not pk:
            return None
        e, t = pk
        K = t.dims[-1]
        if t.rank >= 3 and rng.random() < 0.35:
            # batched: same rank, equal batch dims
            cands = self.values(lambda u: u.dtype == t.dtype and u.dev == t.dev and u.rank == t.rank
                                and self.same_shape(u.dims[:-2], t.dims[:-2]) and self.p.sem_equal(u.dims[-2], K))
            if cands and rng.random() < 0.5:
                return Op('matmul', [e, Ref(rng.choice(cands)[0])])
            if rng.random() < 0.4:
                return Op('matmul', [e, Op('transpose', [e])])
            dims = [self.respell(d) for d in t.dims[:-2]] + [self.respell(K), self.vocab_dim()]
            pr = self.new_param(TT(t.dtype, dims, t.dev), 'w')
            return Op('matmul', [e, pr[0]]) if pr else None
        cands = self.values(lambda u: u.dtype == t.dtype and u.dev == t.dev and u.rank == 2
                            and self.p.sem_equal(u.dims[0], K))
        if cands and rng.random() < 0.5:
            return Op('matmul', [e, Ref(rng.choice(cands)[0])])
        pr = self.new_param(TT(t.dtype, [self.respell(K), self.vocab_dim()], t.dev), 'w')
        if not pr:
            return None
        if rng.random() < 0.15 and t.rank == 2:
            return Op('matmul', [Op('transpose', [pr[0]]), Op('transpose', [e])])
        return Op('matmul', [e, pr[0]])

    def g_transpose(self):
        pk = self.pick(lambda t: t.rank >= 2)
        return Op('transpose', [pk[0]]) if pk else None

    def g_permute(self):
        pk = self.pick(lambda t: t.rank >= 2)
        if not pk:
            return None
        e, t = pk
        p = list(range(t.rank))
        self.rng.shuffle(p)
        return Op('permute', [e], perm=p)

    def g_reshape(self):
        rng = self.rng
        pk = self.pick(lambda t: t.rank >= 1)
        if not pk:
            return None
        e, t = pk
        factors = []  # ('c', int) | ('a', atom) | ('o', tree)
        for d in t.dims:
            s = self.sem(d)
            mono = s.monomial()
            if s.is_one():
                continue
            if mono is not None and mono[0] > 0:
                factors += [('c', f) for f in prime_factors(mono[0])]
                factors += [('a', a) for a in mono[1]]
            else:
                factors.append(('o', d))
        if not factors:
            return Op('reshape', [e], shape=[I(1)] * rng.randint(1, 2))
        if rng.random() < 0.35:
            rng.shuffle(factors)
        n = rng.randint(1, min(4, len(factors)))
        cuts = sorted(rng.sample(range(1, len(factors)), n - 1)) if n > 1 else []
        groups, prev = [], 0
        for c in cuts + [len(factors)]:
            groups.append(factors[prev:c])
            prev = c
        dims = []
        for g in groups:
            coeff = 1
            atoms = []
            opaque = []
            for k, v in g:
                if k == 'c':
                    coeff *= v
                elif k == 'a':
                    atoms.append(v)
                else:
                    opaque.append(v)
            parts = list(opaque)
            if coeff != 1 or atoms:
                parts.append(self.spell_monomial(coeff, tuple(sorted(atoms))))
            dims.append(MUL(*parts))
        if len(dims) < 5 and rng.random() < 0.15:
            dims.insert(rng.randrange(len(dims) + 1), I(1))
        return Op('reshape', [e], shape=dims)

    def g_broadcast_to(self):
        rng = self.rng
        pk = self.pick(lambda t: t.rank <= 3)
        if not pk:
            return None
        e, t = pk
        dims = [self.vocab_dim() for _ in range(rng.randint(0, 2) if t.rank < 3 else rng.randint(0, 1))]
        for d in t.dims:
            if poly_of(d).is_one() and rng.random() < 0.7:
                dims.append(self.vocab_dim())
            else:
                dims.append(self.respell(d))
        if not dims:
            dims = [self.vocab_dim()]
        return Op('broadcast_to', [e], shape=dims)

    def g_concat(self):
        rng = self.rng
        pk = self.pick(lambda t: t.rank >= 1)
        if not pk:
            return None
        e, t = pk
        ax = rng.randrange(t.rank)
        args = [e]
        for _ in range(rng.choice([1, 1, 1, 2])):
            x = rng.random()
            if x < 0.25:
                args.append(e)
                continue
            if x < 0.6:
                cands = self.values(lambda u: u.dtype == t.dtype and u.dev == t.dev and u.rank == t.rank and all(
                    i == ax or self.p.sem_equal(u.dims[i], t.dims[i]) for i in range(t.rank)))
                if cands:
                    args.append(Ref(rng.choice(cands)[0]))
                    continue
            dims = [self.vocab_dim() if i == ax else self.respell(d) for i, d in enumerate(t.dims)]
            pr = self.new_param(TT(t.dtype, dims, t.dev), 'c')
            if not pr:
                args.append(e)
            else:
                args.append(pr[0])
        axis = ax - t.rank if rng.random() < 0.3 else ax
        return Op('concat', args, axis=axis)

    def slice_options(self, d):
        w = self.w
        opts = [(I(0), self.respell(d)), (I(0), I(1)), (SUB(d, I(1)), I(1))]
        v = poly_of(d).lone_var()
        if v is not None:
            k = w.lower.get(v, 1)
            if k >= 2:
                j = self.rng.randint(1, k - 1)
                opts += [(I(1), SUB(d, I(1))), (I(0), I(j + 1)), (SUB(d, I(j)), I(j)), (I(j), SUB(d, I(j)))]
            for K, S in w.windows:
                if S == v:
                    opts += [(I(0), V(K)), (SUB(d, V(K)), V(K))]
                    if k >= 2:
                        opts.append((I(1), SUB(d, I(1))))
            for T, S, P in w.sums:
                if T == v:
                    opts += [(I(0), V(S)), (V(S), V(P)), (V(P), V(S)), (I(0), ADD(V(S), V(P)))]
            if v in w.mods:
                c = w.mods[v]
                q = FDIV(V(v), c)
                j = self.rng.randrange(c)
                opts += [(I(0), q), (MUL(I(j), q), q), (q, SUB(d, q)), (I(j), I(c - j))]
            if v in w.prods:
                H, Dh = w.prods[v]
                opts += [(I(0), V(self.rng.choice([H, Dh]))), (SUB(d, V(Dh)), V(Dh))]
        mono = self.sem(d).monomial()
        if mono is not None and len(mono[1]) >= 2 and mono[0] == 1:
            a = self.rng.choice(mono[1])
            sp = self.spell_monomial(1, (a,))
            opts.append((I(0), sp))
        return opts

    def g_slice(self):
        rng = self.rng
        pk = self.pick(lambda t: t.rank >= 1)
        if not pk:
            return None
        e, t = pk
        ax = rng.randrange(t.rank)
        st, sz = rng.choice(self.slice_options(t.dims[ax]))
        axis = ax - t.rank if rng.random() < 0.25 else ax
        return Op('slice', [e], axis=axis, start=st, size=sz)

    def g_reduce(self):
        rng = self.rng
        pk = self.pick(lambda t: t.dtype in NUMERIC and t.rank >= 1)
        if not pk:
            return None
        e, t = pk
        op = rng.choice(['reduce_sum', 'reduce_max', 'reduce_min'] + (['reduce_mean'] if t.dtype in FLOAT else []))
        attrs = {}
        if rng.random() < 0.9:
            k = rng.randint(1, min(2, t.rank))
            axes = rng.sample(range(t.rank), k)
            attrs['axes'] = [a - t.rank if rng.random() < 0.3 else a for a in axes]
        if rng.random() < 0.7:
            attrs['keepdims'] = rng.random() < 0.6
        return Op(op, [e], **attrs)

    def g_softmax(self):
        rng = self.rng
        pk = self.pick(lambda t: t.dtype in FLOAT and t.rank >= 1)
        if not pk:
            return None
        e, t = pk
        attrs = {}
        if rng.random() < 0.7:
            ax = rng.randrange(t.rank)
            attrs['axis'] = ax - t.rank if rng.random() < 0.4 else ax
        return Op(rng.choice(SOFTMAX), [e], **attrs)

    def g_logic(self):
        """not/and/or over bool values, made by comparisons when none exist."""
        rng = self.rng

        def cond():
            pk = self.pick(lambda t: t.dtype in NUMERIC)
            if not pk:
                return None
            e, t = pk
            return Op(rng.choice(COMPARE), [e, Num('0')]), t
        pk = self.pick(lambda t: t.dtype == 'bool')
        c = pk if pk and rng.random() < 0.6 else cond()
        if c is None:
            return None
        e, t = c
        op = rng.choice(LOGICAL)
        if op == 'not':
            return Op('not', [e])
        others = self.values(lambda u: u.dtype == 'bool' and u.dev == t.dev and self.compatible(u.dims, t.dims))
        x = rng.random()
        if others and x < 0.5:
            b = Ref(rng.choice(others)[0])
        elif x < 0.65:
            b = Num(rng.choice(['0', '1']))
        else:
            b = Op('not', [e])
        return Op(op, [e, b] if rng.random() < 0.6 else [b, e])

    def g_repeat(self):
        rng = self.rng
        pk = self.pick(lambda t: t.rank >= 1)
        if not pk:
            return None
        e, t = pk
        ax = rng.randrange(t.rank)
        r = rng.choice([I(2), I(3), V(rng.choice(self.w.vars))] if self.w.vars else [I(2), I(3)])
        return Op('repeat_interleave', [e], repeats=r, axis=ax - t.rank if rng.random() < 0.3 else ax)

    def g_cumsum(self):
        rng = self.rng
        pk = self.pick(lambda t: t.dtype in NUMERIC and t.rank >= 1)
        if not pk:
            return None
        e, t = pk
        ax = rng.randrange(t.rank)
        return Op('cumsum', [e], axis=ax - t.rank if rng.random() < 0.3 else ax, reverse=rng.random() < 0.4)

    def g_squeeze(self):
        """unsqueeze anything; squeeze a literal 1 (or an unsqueezed value)."""
        rng = self.rng
        pk = self.pick(lambda t: any(d == I(1) for d in t.dims)) if rng.random() < 0.5 else None
        if pk:
            e, t = pk
            ones = [i for i, d in enumerate(t.dims) if d == I(1)]
            axes = rng.sample(ones, rng.randint(1, len(ones)))
            return Op('squeeze', [e], axes=[a - t.rank if rng.random() < 0.3 else a for a in axes])
        pk = self.pick()
        if not pk:
            return None
        e, t = pk
        ax = rng.randrange(t.rank + 1)
        u = Op('unsqueeze', [e], axis=ax - t.rank - 1 if rng.random() < 0.3 else ax)
        return Op('squeeze', [u], axes=[ax]) if rng.random() < 0.3 else u

    def g_pad(self):
        rng = self.rng
        pk = self.pick(lambda t: t.rank >= 1)
        if not pk:
            return None
        e, t = pk
        ax = rng.randrange(t.rank)

        def width():
            r = rng.random()
            if r < 0.5 or not self.w.vars:
                return I(rng.randint(0, 3))
            v = V(rng.choice(self.w.vars))
            return SUB(v, I(1)) if r < 0.8 else v  # (- V 1): 0 for V = 1
        a = {'axis': ax - t.rank if rng.random() < 0.3 else ax, 'low': width(), 'high': width()}
        if rng.random() < 0.5:
            a['value'] = rng.choice(['0', '1'] if t.dtype == 'bool' else ['1', '-2', '3'] if t.dtype in INTEGRAL else ['1', '-2', '0.5'])
        return Op('pad', [e], **a)

    def g_arg(self):
        rng = self.rng
        pk = self.pick(lambda t: t.dtype in NUMERIC and t.rank >= 1)
        if not pk:
            return None
        e, t = pk
        ax = rng.randrange(t.rank)
        return Op(rng.choice(ARG), [e], axis=ax - t.rank if rng.random() < 0.3 else ax, keepdims=rng.random() < 0.5)

    def g_dim_value(self):
        """A dimension as a value, e.g. (mul x (rsqrt (dim_value Dh f32)))."""
        rng = self.rng
        pk = self.pick(lambda t: t.dtype in NUMERIC)
        if not pk or not self.w.vars:
            return None
        e, t = pk
        v = V(rng.choice(self.w.vars))
        d = rng.choice([v, ADD(v, I(1)), MUL(I(2), v)])
        a = {'dim': d, 'dtype': t.dtype}
        if t.dev != 'host':
            a['device'] = t.dev
        dv = Op('dim_value', [], **a)
        if t.dtype in FLOAT and rng.random() < 0.5:
            dv = Op('rsqrt', [dv])
        return Op(rng.choice(['mul', 'add']), [e, dv])

    def g_copy(self):
        pk = self.pick()
        if not pk:
            return None
        e, t = pk
        if t.dev == 'host':
            return Op('copy_to_host', [Op('copy_to_device', [e], device=self.rng.choice(['(cuda 0)', '(cuda 1)']))])
        return Op('copy_to_device', [Op('copy_to_host', [e])], device=t.dev)

    def g_fill(self):
        rng = self.rng
        pk = self.pick(lambda t: t.rank >= 1)
        if not pk:
            return None
        e, t = pk
        if rng.random() < 0.5:
            tt = TT(self.float_dt(), [self.respell(d) for d in t.dims], t.dev)
            f = Op('fill', [], num=rng.choice(['0.0', '1', '0.5']), type=tt)
            return Op(rng.choice(['add', 'mul', 'sub']), [f, Op('cast', [e], dtype=self.float_dt())] if t.dtype != tt.dtype else [f, e])
        tt = TT(rng.choice(['i32', 'i64']), [self.respell(d) for d in t.dims], t.dev)
        return Op('cast', [Op('iota', [], type=tt, axis=rng.randrange(t.rank))], dtype=self.float_dt())

    # -- calls --
    def map_callee(self, g, gw, mode):
        """A substitution callee var -> caller dim tree."""
        rng, w = self.rng, self.w
        sigma = {}
        defined = {}
        for kind, l, r in g.where:
            if kind == '=' and l[0] == 'var' and r[0] != 'int' and l[1] not in dvars(r):
                defined.setdefault(l[1], r)
            elif kind == '=' and r[0] == 'var' and l[0] != 'mod' and r[1] not in dvars(l):
                defined.setdefault(r[1], l)
        for v in g.dims:
            if mode == 'derive' and v in defined:
                continue
            role = gw.role[v]
            cv = w.byrole.get(role)
            if mode == 'role' and cv is not None:
                sigma[v] = V(cv)
                continue
            if v in gw.mods:
                c = gw.mods[v]
                if cv is not None and cv in w.mods and w.mods[cv] % c == 0:
                    sigma[v] = V(cv)
                else:
                    sigma[v] = MUL(I(c), V(rng.choice(w.vars)))
            elif gw.lower.get(v, 1) >= 2:
                k = gw.lower[v]
                if cv is not None and w.lower.get(cv, 1) >= k:
                    sigma[v] = V(cv)
                else:
                    sigma[v] = ADD(V(rng.choice(w.vars)), I(k - 1))
            elif cv is not None and rng.random() < 0.8:
                sigma[v] = V(cv)
            else:
                sigma[v] = self.vocab_dim() if rng.random() < 0.3 else V(rng.choice(w.vars))
        if mode == 'derive':
            for _ in range(3):
                for v, tree in defined.items():
                    if v not in sigma and dvars(tree) <= set(sigma):
                        sigma[v] = dsubst(tree, sigma)
            for v in g.dims:
                if v not in sigma:
                    sigma[v] = V(rng.choice(w.vars))
        for K, S in gw.windows:
            if S in sigma and K in sigma and self.p.prove('<=', sigma[K], sigma[S]) != PROVED:
                sigma[K] = sigma[S] if rng.random() < 0.5 else I(1)
        for c in g.where:
            if self.p.prove(c[0], dsubst(c[1], sigma), dsubst(c[2], sigma)) != PROVED:
                return None
        return sigma

    def g_call(self):
        rng = self.rng
        if not self.callees:
            return None
        g, gw = rng.choice(self.callees)
        sigma = None
        for mode in ('role', 'derive', 'random', 'derive'):
            sigma = self.map_callee(g, gw, mode)
            if sigma is not None:
                break
        if sigma is None:
            return None
        if any(not obviously_positive(poly_of(s)) and self.p.prove('>=', s, I(1)) != PROVED for s in sigma.values()):
            return None
        args = []
        for _, pt in g.params:
            want = TT(pt.dtype, [dsubst(d, sigma) for d in pt.dims], pt.dev)
            cands = self.values(lambda u: u.dtype == want.dtype and u.dev == want.dev and self.same_shape(u.dims, want.dims))
            if cands and rng.random() < 0.9:
                args.append(Ref(rng.choice(cands)[0]))
                continue
            pr = self.new_param(TT(want.dtype, [self.respell(d) for d in want.dims], want.dev), 'a', extra=16)
            if pr is None:
                return None
            args.append(pr[0])
        return Call(g.name, args), len(g.returns)


def generate_program(seed, index, min_lets=20, max_lets=200, timeout_ms=2000):
    rng = random.Random('%d/%d' % (seed, index))
    prog = Program('gen_%d_%d' % (seed, index))
    nfuncs = rng.choice([1, 2, 2, 3, 3])
    total = rng.randint(min_lets, max_lets)
    sizes = []
    left = total
    for i in range(nfuncs - 1):
        s = rng.randint(3, max(3, min(30, left // 3)))
        sizes.append(s)
        left -= s
    sizes.append(max(left, 5))
    provers = {}
    worlds = []
    mt = ModTyper(provers)
    callees = []
    models_all = []
    for fi in range(nfuncs):
        helper = fi + 1 < nfuncs
        for _ in range(20):
            w = make_world(rng)
            models = sample_models(w, rng)
            if models is not None:
                break
        if models is None:
            raise RuntimeError('no satisfiable world')
        fname = ('helper%d' % fi) if helper else 'main'
        f = Func(fname, w.vars, w.where)
        prover = get_prover(w.vars, w.where, models, timeout_ms)
        provers[fi] = prover
        ft = FuncTyper(mt, f, prover)
        gen = Gen(rng, w, f, ft, list(callees))
        if helper:
            gen.max_params = 7
        build_function(gen, sizes[fi], helper)
        if not ft.finish():
            raise RuntimeError('generated function %s does not type-check: %r' % (fname, mt.fails))
        prog.funcs.append(f)
        worlds.append(w)
        models_all.append(models)
        callees.append((f, w))
    return prog, worlds, models_all


GEN_WEIGHTS = [('unary', 10), ('binary', 16), ('select', 4), ('cast', 4), ('matmul', 11), ('transpose', 4),
               ('permute', 4), ('reshape', 11), ('broadcast_to', 4), ('concat', 5), ('slice', 8), ('reduce', 7),
               ('copy', 2), ('fill', 2), ('call', 7), ('softmax', 3), ('logic', 3), ('repeat', 3), ('dim_value', 2),
               ('cumsum', 2), ('squeeze', 2), ('pad', 2), ('arg', 2), ('top_k', 1)]


def build_function(gen, n_lets, helper):
    rng, w, f, ft = gen.rng, gen.w, gen.f, gen.ft
    dt, dev = w.dtype, w.dev
    S, D, B = w.byrole['seq'], w.byrole['model'], w.byrole['batch']
    # initial parameters
    x_dims = [V(B), V(S), gen.respell(V(D), 0.25)]
    if 'batch2' in w.byrole and rng.random() < 0.5:
        x_dims.insert(1, V(w.byrole['batch2']))
    gen.new_param(TT(dt, x_dims, dev), 'x')
    for _ in range(rng.randint(1, 3)):
        y = rng.choice([V(D), V(w.byrole.get('hidden', D)), gen.vocab_dim()])
        gen.new_param(TT(dt, [gen.respell(V(D)), y], dev), 'w')
    if rng.random() < 0.6:
        gen.new_param(TT(dt, [I(1)] * rng.randint(0, 2) + [V(D)], dev), 'g')
    if rng.random() < 0.3:
        gen.new_param(TT(dt, (), dev), 's')
    kinds = [k for k, _ in GEN_WEIGHTS]
    weights = [wt for _, wt in GEN_WEIGHTS]
    attempts = 0
    while len(f.lets) < n_lets and attempts < n_lets * 8:
        attempts += 1
        kind = rng.choices(kinds, weights)[0]
        nested = None
        if kind == 'call':
            r = gen.g_call()
            if r is None:
                continue
            e, nres = r
            if nres == 1 and rng.random() < 0.4:
                nested = e  # used as an operand below
            else:
                names = [gen.fresh('r') for _ in range(nres)]
                asc = None
                if nres == 1 and rng.random() < 0.2:
                    t = ft.type_of(e)
                    if t is None:
                        continue
                    asc = gen.respell_type(t, 0.6)
                if ft.try_let(Let(names, asc, e)):
                    f.lets.append(Let(names, asc, e))
                continue
        if kind == 'top_k':  # two names: the values and the indices
            pk = gen.pick(lambda t: t.dtype in NUMERIC and t.rank >= 1)
            if pk is None:
                continue
            ax = rng.randrange(pk[1].rank)
            l = Let([gen.fresh('v'), gen.fresh('i')], None, Op('top_k', [pk[0]], k=rng.choice([1, 1, 2, 3]), axis=ax - pk[1].rank if rng.random() < 0.3 else ax))
            if ft.try_let(l):
                f.lets.append(l)
            continue
        e = nested if nested is not None else getattr(gen, 'g_' + kind)()
        if e is None:
            continue
        t = ft.type_of(e)
        if t is None:
            continue
        if rng.random() < (0.9 if nested is not None else 0.2):  # fuse one more operation into the binding
            if t.dtype in FLOAT and rng.random() < 0.5:
                e2 = Op(rng.choice(UNARY_FLOAT + UNARY_ANY), [e])
            else:
                e2 = gen.binary_with(e, t)
            t2 = ft.type_of(e2) if e2 is not None else None
            if t2 is not None:
                e, t = e2, t2
        asc = gen.respell_type(t, 0.6) if rng.random() < 0.12 else None
        name = gen.fresh('v')
        l = Let([name], asc, e)
        if ft.try_let(l):
            f.lets.append(l)
        if rng.random() < 0.03:  # checking-mode literals and aliases
            pk = gen.pick()
            if pk is None:
                continue
            e, t = pk
            x = rng.random()
            if x < 0.4:
                l = Let([gen.fresh('a')], None, e)  # `(let y x)`
            elif t.dtype in FLOAT or (t.dtype in INTEGRAL and x < 0.7):
                num = '2' if t.dtype in INTEGRAL else rng.choice(['0.0', '1.5'])
                l = Let([gen.fresh('z')], gen.respell_type(t), Num(num) if x < 0.7 else Op('fill', [], num=num))
            else:
                continue
            if ft.try_let(l):
                f.lets.append(l)
    # results: the last binding, sometimes one more
    vals = [n for l in f.lets for n in l.names if ft.env.get(n) is not None]
    if not vals:
        vals = [n for n, _ in f.params]
    res = [vals[-1]]
    if len(vals) > 2 and rng.random() < (0.45 if helper else 0.25):
        o = rng.choice(vals[:-1])
        if o not in res:
            res.append(o)
    tries = [(res, [gen.respell_type(ft.env[r], 0.3) for r in res]), (res, [ft.env[r] for r in res])]
    tries += [([v], [ft.env[v]]) for v in reversed(vals + [n for n, _ in f.params])]
    for names, types in tries:
        if ft.returns_ok(names, types):
            f.results, f.returns = list(names), list(types)
            break
    # Every shape variable must be inferable from the parameters, at call
    # sites and for the entry point alike (E0308).
    if True:
        for v in w.vars:
            if not any(poly_of(d).lone_var() == v for _, t in f.params for d in t.dims):
                gen.max_params += 1
                gen.new_param(TT(dt, [V(v)], dev), 'aux', extra=100)


# ----------------------------------------------------------------------------
# Mutations: each breaks one obligation; the Typer predicts the diagnostics.

ALLOWED = {'E0201', 'E0203', 'E0301', 'E0302', 'E0303', 'E0304', 'E0305', 'E0306'}
CEX_REQUIRED = {'E0301', 'E0302', 'E0303', 'E0304'}


def walk_ops(e, path=()):
    if isinstance(e, Op):
        yield e, path
        for i, a in enumerate(e.args):
            yield from walk_ops(a, path + (i,))
    elif isinstance(e, Call):
        for i, a in enumerate(e.args):
            yield from walk_ops(a, path + (i,))


def all_ops(prog, pred):
    out = []
    for fi, f in enumerate(prog.funcs):
        for li, l in enumerate(f.lets):
            for op, path in walk_ops(l.expr):
                if pred(op):
                    out.append((fi, li, op))
    return out


def other_var(rng, f, tree):
    vs = [v for v in f.dims if v not in dvars(tree)]
    return rng.choice(vs) if vs else None


def m_reshape_target(prog, rng):
    c = all_ops(prog, lambda o: o.name == 'reshape')
    if not c:
        return None
    fi, li, op = rng.choice(c)
    f = prog.funcs[fi]
    shape = list(op.a['shape'])
    i = rng.randrange(len(shape))
    vs = sorted(dvars(shape[i]))
    x = rng.random()
    if vs and x < 0.5:
        old = rng.choice(vs)
        new = rng.choice([v for v in f.dims if v != old] or [old])
        shape[i] = dreplace_var(shape[i], old, new)
        desc = 'reshape target: %s -> %s in dim %d' % (old, new, i)
    elif x < 0.8:
        shape[i] = MUL(I(2), shape[i])
        desc = 'reshape target: dim %d doubled' % i
    else:
        if len(shape) < 2 or poly_of(shape[i]).is_one():
            return None
        del shape[i]
        desc = 'reshape target: dim %d dropped' % i
    op.a['shape'] = shape
    return desc, (fi, 'let', li, {'E0303'})


def m_drop_constraint(prog, rng):
    c = [fi for fi, f in enumerate(prog.funcs) if f.where]
    if not c:
        return None
    fi = rng.choice(c)
    f = prog.funcs[fi]
    i = rng.randrange(len(f.where))
    desc = 'dropped constraint %s of %s' % (ctext(f.where[i]), f.name)
    del f.where[i]
    return desc, None


def m_swap_param(prog, rng):
    c = [(fi, pi) for fi, f in enumerate(prog.funcs) for pi, (n, t) in enumerate(f.params) if t.rank >= 2]
    if not c:
        return None
    fi, pi = rng.choice(c)
    n, t = prog.funcs[fi].params[pi]
    i, j = rng.sample(range(t.rank), 2)
    if poly_of(t.dims[i]) == poly_of(t.dims[j]):
        return None
    d = list(t.dims)
    d[i], d[j] = d[j], d[i]
    prog.funcs[fi].params[pi] = (n, TT(t.dtype, d, t.dev))
    return 'swapped dims %d and %d of parameter %s' % (i, j, n), None


def m_matmul(prog, rng):
    c = all_ops(prog, lambda o: o.name == 'matmul')
    if not c:
        return None
    fi, li, op = rng.choice(c)
    if rng.random() < 0.6:
        op.args[1] = Op('transpose', [op.args[1]])
        desc = 'matmul: transposed right operand'
    else:
        op.args[0] = Op('transpose', [op.args[0]])
        desc = 'matmul: transposed left operand'
    return desc, (fi, 'let', li, {'E0301'})


def m_slice(prog, rng):
    c = all_ops(prog, lambda o: o.name == 'slice')
    if not c:
        return None
    fi, li, op = rng.choice(c)
    x = rng.random()
    if x < 0.4:
        op.a['size'] = ADD(op.a['size'], I(1))
        desc = 'slice: size + 1'
    elif x < 0.7:
        op.a['start'] = ADD(op.a['start'], I(1))
        desc = 'slice: start + 1'
    elif x < 0.85:
        op.a['start'] = SUB(op.a['start'], I(1))
        desc = 'slice: start - 1'
    else:
        op.a['size'] = SUB(op.a['size'], op.a['size'])
        desc = 'slice: size 0'
    return desc, (fi, 'let', li, {'E0304'})


def m_broadcast(prog, rng):
    c = all_ops(prog, lambda o: family(o.name) in ('binary', 'compare') and not isinstance(o.args[1], Num))
    if not c:
        return None
    fi, li, op = rng.choice(c)
    k = rng.randrange(2)
    if rng.random() < 0.6:
        op.args[k] = Op('transpose', [op.args[k]])
        desc = 'binary: transposed operand %d' % k
    else:
        op.args[k] = Op('reduce_sum', [op.args[k]], axes=[0])
        desc = 'binary: reduced axis 0 of operand %d' % k
    return desc, (fi, 'let', li, {'E0302'})


def m_concat(prog, rng):
    c = all_ops(prog, lambda o: o.name == 'concat' and len(o.args) >= 2)
    if not c:
        return None
    fi, li, op = rng.choice(c)
    op.a['axis'] = op.a['axis'] + rng.choice([-1, 1])
    return 'concat: axis moved to %d' % op.a['axis'], (fi, 'let', li, {'E0301'})


def m_ascription(prog, rng):
    c = [(fi, li) for fi, f in enumerate(prog.funcs) for li, l in enumerate(f.lets) if l.asc is not None and l.asc.rank >= 1]
    c += [(fi, -1) for fi, f in enumerate(prog.funcs) if f.returns and f.returns[0].rank >= 1]
    if not c:
        return None
    fi, li = rng.choice(c)
    f = prog.funcs[fi]
    t = f.lets[li].asc if li >= 0 else f.returns[0]
    i = rng.randrange(t.rank)
    d = list(t.dims)
    v = other_var(rng, f, d[i])
    if v is None or rng.random() < 0.3:
        d[i] = MUL(I(2), d[i]) if not poly_of(d[i]).is_one() else V(rng.choice(f.dims))
    else:
        d[i] = V(v)
    nt = TT(t.dtype, d, t.dev)
    if li >= 0:
        f.lets[li].asc = nt
        return 'ascription of %s: dim %d' % (f.lets[li].names[0], i), (fi, 'let', li, {'E0301'})
    f.returns[0] = nt
    return 'returns of %s: dim %d' % (f.name, i), (fi, 'ret', 0, {'E0301'})


def m_dtype(prog, rng):
    c = [(fi, pi) for fi, f in enumerate(prog.funcs) for pi, (n, t) in enumerate(f.params) if t.dtype in FLOAT]
    if not c:
        return None
    fi, pi = rng.choice(c)
    n, t = prog.funcs[fi].params[pi]
    nd = rng.choice([d for d in FLOAT if d != t.dtype])
    prog.funcs[fi].params[pi] = (n, TT(nd, t.dims, t.dev))
    return 'dtype of parameter %s: %s -> %s' % (n, t.dtype, nd), None


def m_call_arg(prog, rng):
    c = []
    for fi, f in enumerate(prog.funcs):
        for li, l in enumerate(f.lets):
            if isinstance(l.expr, Call) and l.expr.args:
                c.append((fi, li))
    if not c:
        return None
    fi, li = rng.choice(c)
    call = prog.funcs[fi].lets[li].expr
    k = rng.randrange(len(call.args))
    call.args[k] = Op('transpose', [call.args[k]])
    return 'call: transposed argument %d' % k, (fi, 'let', li, {'E0301', 'E0306', 'E0203'})


MUTATIONS = [('reshape_target', m_reshape_target), ('drop_constraint', m_drop_constraint), ('swap_param', m_swap_param),
             ('matmul', m_matmul), ('slice', m_slice), ('broadcast', m_broadcast), ('concat', m_concat),
             ('ascription', m_ascription), ('dtype', m_dtype), ('call_arg', m_call_arg)]


_PROVERS = {}


def get_prover(dims, where, models, timeout_ms):
    """One Prover (and Z3 solver) per distinct (dims, where): a mutant that
    keeps a function's constraints reuses the original's proofs."""
    key = (tuple(dims), tuple(where), timeout_ms)
    p = _PROVERS.get(key)
    if p is None:
        p = _PROVERS[key] = Prover(dims, where, models, timeout_ms)
    return p


def type_program(prog, layout, models, timeout_ms):
    provers = {fi: get_prover(f.dims, f.where, models[fi], timeout_ms) for fi, f in enumerate(prog.funcs)}
    return ModTyper(provers).run(prog, layout)


def copy_expr(e):
    if isinstance(e, Op):
        return Op(e.name, [copy_expr(a) for a in e.args], **e.a)
    if isinstance(e, Call):
        return Call(e.fname, [copy_expr(a) for a in e.args])
    return e


def copy_program(prog):
    """A copy that a mutation may change (trees and types are immutable)."""
    m = Program(prog.name)
    m.header = list(prog.header)
    for f in prog.funcs:
        g = Func(f.name, f.dims, f.where)
        g.params = list(f.params)
        g.returns = list(f.returns)
        g.lets = [Let(l.names, l.asc, copy_expr(l.expr)) for l in f.lets]
        g.results = list(f.results)
        m.funcs.append(g)
    return m


def make_mutant(prog, models, seed, index, timeout_ms):
    rng = random.Random('mutant %d/%d' % (seed, index))
    order = list(range(len(MUTATIONS)))
    start = index % len(MUTATIONS)
    order = order[start:] + order[:start]
    first, rest = order[0], order[1:]
    rng.shuffle(rest)
    for mi in [first] * 6 + rest * 4:
        kind, fn = MUTATIONS[mi]
        m = copy_program(prog)
        r = fn(m, rng)
        if r is None:
            continue
        desc, intended = r
        m.header = ['mutant of %s: %s' % (prog.name, desc)]
        text, layout = print_program(m)
        fails = type_program(m, layout, models, timeout_ms)
        if not fails or any(x.code not in ALLOWED for x in fails):
            continue
        # shapemlc needs Z3 to produce each counterexample; Z3 leaves some
        # nonlinear refutations undecided (E0501), so keep only mutants whose
        # broken obligations Z3 refutes here, with a shorter budget.
        fmap = {f.name: fi for fi, f in enumerate(m.funcs)}

        def easy(x):
            fi = fmap[x.func]
            p = get_prover(m.funcs[fi].dims, m.funcs[fi].where, models[fi], timeout_ms)
            return not p.is_hard(*x.obl) and p.z3_refutes(*x.obl, 500)
        if not all(x.obl is None or easy(x) for x in fails):
            continue
        if intended is not None:
            fi, where, li, codes = intended
            line = layout[fi]['lets'][li] if where == 'let' else layout[fi]['ret']
            if not any(x.line == line and x.code in codes for x in fails):
                continue
        return {'kind': kind, 'desc': desc, 'prog': m, 'text': text, 'layout': layout, 'fails': fails}
    return None


# ----------------------------------------------------------------------------
# Driver

def count_lets(prog):
    return sum(len(f.lets) for f in prog.funcs)


def run_checker(shapemlc, path, timeout):
    t0 = time.time()
    try:
        p = subprocess.run([shapemlc, 'check', '--format=json', path], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None, 'timed out after %ds' % timeout, time.time() - t0
    except OSError as e:  # e.g. the binary is being rebuilt
        return None, None, 'cannot run %s: %s' % (shapemlc, e), time.time() - t0
    diags, err = None, None
    try:
        diags = json.loads(p.stderr) if p.stderr.strip() else []
        if not isinstance(diags, list):
            err = 'diagnostics are not a JSON array'
    except ValueError as e:
        err = 'stderr is not JSON (%s): %s' % (e, p.stderr[:500])
    return p.returncode, diags, err, time.time() - t0


def func_at_line(prog, layout, line):
    for f, lay in zip(prog.funcs, layout):
        if lay['first'] <= line <= lay['last']:
            return f
    return None


def check_counterexample(d, f, obls):
    """Problems with the counterexample of diagnostic d (empty when valid)."""
    cex = d.get('counterexample')
    probs = []
    if not isinstance(cex, dict):
        return ['no counterexample']
    missing = [v for v in f.dims if v not in cex]
    if missing:
        return ['counterexample lacks %s' % ', '.join(missing)]
    env = {v: int(cex[v]) for v in f.dims}
    low = [v for v in f.dims if env[v] < 1]
    if low:
        probs.append('counterexample gives %s < 1' % ', '.join('%s=%d' % (v, env[v]) for v in low))
    for c in f.where:
        if not cholds(c, env):
            probs.append('counterexample violates where constraint %s' % ctext(c))
    if not obls:
        probs.append('no predicted obligation to check the counterexample against')
    violated = []
    for rel, l, r in obls:
        a, b = deval(l, env), deval(r, env)
        if not rel_holds(rel, a, b):
            violated.append('%s = %d, %s = %d' % (dtext(l), a, dtext(r), b))
    if obls and not violated:
        probs.append('counterexample %s does not violate the obligation(s) %s' % (
            env, '; '.join('(%s %s %s) [%d vs %d]' % (rel, dtext(l), dtext(r), deval(l, env), deval(r, env))
                           for rel, l, r in obls)))
    return probs


def verify_valid(rc, diags, err):
    probs = []
    if err:
        probs.append(err)
    if rc != 0:
        probs.append('exit status %s, expected 0' % rc)
    if diags:
        probs.append('%d diagnostic(s) on a well-typed program' % len(diags))
    return probs


def verify_mutant(mut, rc, diags, err, stats, allow_undecided=False):
    """Problems with shapemlc's answer on a mutant (empty when right).

    Every error must be one the Typer predicted, at the same line with the
    same code; every predicted one must be reported. Z3 sometimes leaves a
    nonlinear refutation undecided: an E0501 in place of a predicted refuted
    obligation is tolerated (it is a rejection, and counted as `undecided`),
    but at least one error must be a shape/dtype/rank error."""
    if err:
        return [err]
    probs = []
    if rc != 1:
        probs.append('exit status %s, expected 1' % rc)
    errs = [d for d in diags if d.get('severity') == 'error']
    predicted = collections.defaultdict(list)
    for x in mut['fails']:
        predicted[(x.line, x.code)].append(x.obl)
    refuted_lines = {x.line for x in mut['fails'] if x.obl is not None}
    seen = set()
    undecided_lines = set()
    for d in errs:
        code, line = d.get('code'), d.get('line')
        where = '%s at line %s' % (code, line)
        if code == 'E0501' and line in refuted_lines:
            undecided_lines.add(line)
            stats['undecided'] += 1
            continue
        seen.add((line, code))
        if code not in ALLOWED:
            probs.append('%s: not a shape/dtype/rank error' % where)
        if (line, code) not in predicted:
            probs.append('%s: not predicted (predicted: %s)' % (where, sorted(predicted)))
            continue
        if code in CEX_REQUIRED and 'counterexample' not in d:
            probs.append('%s: no counterexample' % where)
            continue
        if 'counterexample' in d:
            f = func_at_line(mut['prog'], mut['layout'], line)
            obls = [o for o in predicted[(line, code)] if o is not None]
            probs += ['%s: %s' % (where, p) for p in check_counterexample(d, f, obls)]
            stats['counterexamples'] += 1
    if not any(d.get('code') in ALLOWED for d in errs):
        if undecided_lines and allow_undecided:
            stats['undecided only'] += 1
        else:
            probs.append('no shape/dtype/rank error reported' +
                         (' (only E0501 where Z3 did not decide a refutable obligation)' if undecided_lines else ''))
    for key in sorted(predicted):
        if key not in seen and key[0] not in undecided_lines:
            probs.append('predicted %s at line %s was not reported' % (key[1], key[0]))
    return probs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--shapemlc', required=True)
    ap.add_argument('--count', type=int, default=60)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--keep', metavar='DIR')
    ap.add_argument('--write-largest', metavar='PATH')
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--timeout-ms', type=int, default=2000, help='Z3 budget per obligation in the generator')
    ap.add_argument('--check-timeout', type=int, default=120, help='seconds per shapemlc run')
    ap.add_argument('--min-lets', type=int, default=20)
    ap.add_argument('--max-lets', type=int, default=200)
    ap.add_argument('--allow-undecided', action='store_true',
                    help='pass a mutant whose only errors are E0501 on obligations it predicted refuted')
    ap.add_argument('-v', '--verbose', action='store_true')
    args = ap.parse_args()

    t0 = time.time()
    tmp = None
    if args.keep:
        outdir = args.keep
        os.makedirs(outdir, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix='shapeml-gen-')
        outdir = tmp.name
    shapemlc = os.path.abspath(args.shapemlc)
    if not os.access(shapemlc, os.X_OK):
        sys.exit('gen_programs.py: %s is not an executable' % args.shapemlc)

    results = []   # (label, kind, text, future, extra)
    largest = None
    stats = collections.Counter()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for i in range(args.count):
            prog, worlds, models = generate_program(args.seed, i, args.min_lets, args.max_lets, args.timeout_ms)
            n = count_lets(prog)
            prog.header = ['generated by tests/generated/gen_programs.py --seed %d (program %d): %d bindings in %d function(s)'
                           % (args.seed, i, n, len(prog.funcs))]
            text, layout = print_program(prog)
            if largest is None or n > largest[0]:
                largest = (n, text)
            path = os.path.join(outdir, 'prog_%04d.sml' % i)
            with open(path, 'w') as fh:
                fh.write(text)
            results.append(('program %d (seed %d)' % (i, args.seed), 'valid', text, path,
                            pool.submit(run_checker, shapemlc, path, args.check_timeout), None))
            # The same program with every function's parameters one bundle
            # (spec §4.32): the expansion must give the same program.
            btext, _ = print_program(prog, bundle_params=True)
            bpath = os.path.join(outdir, 'bundled_%04d.sml' % i)
            with open(bpath, 'w') as fh:
                fh.write(btext)
            results.append(('program %d (seed %d), parameters as bundles' % (i, args.seed), 'valid', btext, bpath,
                            pool.submit(run_checker, shapemlc, bpath, args.check_timeout), None))
            mut = make_mutant(prog, models, args.seed, i, args.timeout_ms)
            if mut is None:
                results.append(('mutant %d (seed %d)' % (i, args.seed), 'nomutant', text, path, None, None))
                continue
            stats['m:' + mut['kind']] += 1
            mpath = os.path.join(outdir, 'mut_%04d.sml' % i)
            with open(mpath, 'w') as fh:
                fh.write(mut['text'])
            results.append(('mutant %d (seed %d): %s' % (i, args.seed, mut['desc']), 'mutant', mut['text'], mpath,
                            pool.submit(run_checker, shapemlc, mpath, args.check_timeout), mut))
            mbtext, _ = print_program(mut['prog'], bundle_params=True)
            mbpath = os.path.join(outdir, 'mut_bundled_%04d.sml' % i)
            with open(mbpath, 'w') as fh:
                fh.write(mbtext)
            results.append(('mutant %d (seed %d), parameters as bundles' % (i, args.seed), 'bundled-mutant', mbtext, mbpath,
                            pool.submit(run_checker, shapemlc, mbpath, args.check_timeout), len(results) - 1))

        passed = failed = 0
        slowest = 0.0
        for label, kind, text, path, fut, mut in results:
            if kind == 'nomutant':
                probs = ['the generator found no mutation that breaks an obligation']
            elif kind == 'bundled-mutant':
                # The same error codes as the mutant with plain parameters (its
                # lines moved: the bundle declarations come first).
                rc, diags, err, dt = fut.result()
                slowest = max(slowest, dt)
                prc, pdiags, _, _ = results[mut][4].result()
                codes, pcodes = sorted(d.get('code') for d in diags), sorted(d.get('code') for d in pdiags)
                probs = [] if rc == prc and codes == pcodes else ['exit %d with codes %s; with plain parameters exit %d with %s' % (rc, codes, prc, pcodes)]
                mut = None
            else:
                rc, diags, err, dt = fut.result()
                slowest = max(slowest, dt)
                probs = verify_valid(rc, diags, err) if kind == 'valid' else verify_mutant(mut, rc, diags, err, stats, args.allow_undecided)
            if probs:
                failed += 1
                print('FAIL %s [%s]' % (label, path))
                for p in probs:
                    print('  - ' + p)
                if kind == 'mutant':
                    print('  predicted: %s' % mut['fails'])
                if kind != 'nomutant' and diags:
                    print('  shapemlc said: %s' % json.dumps([{k: d.get(k) for k in ('code', 'line', 'message', 'counterexample')}
                                                              for d in diags])[:3000])
                print('---- program ----')
                print(text, end='')
                print('-----------------')
            else:
                passed += 1
                if args.verbose:
                    print('ok   %s' % label)

    if largest is not None:
        if args.keep:
            with open(os.path.join(outdir, 'largest.sml'), 'w') as fh:
                fh.write(largest[1])
        if args.write_largest:
            with open(args.write_largest, 'w') as fh:
                fh.write(largest[1])
    if tmp is not None:
        tmp.cleanup()
    kinds = ', '.join('%s %d' % (k[2:], v) for k, v in sorted(stats.items()) if k.startswith('m:'))
    print('mutations: %s; counterexamples checked: %d; undecided (E0501) refutations: %d%s'
          % (kinds, stats['counterexamples'], stats['undecided'],
             ' (%d mutant(s) with nothing else)' % stats['undecided only'] if stats['undecided only'] else ''))
    print('largest program: %d bindings; slowest check %.2fs; %.1fs in all'
          % (largest[0] if largest else 0, slowest, time.time() - t0))
    print('generated: %d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
