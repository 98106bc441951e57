#!/usr/bin/env python3
"""Golden tests of reverse-mode differentiation, `(grad NAME OF)` (spec
§4.26): for every operation with a derivative rule, and for compositions
(calls, RMSNorm, causal attention, the NLL loss), the derived function
`df` — OF's result followed by the gradient of the SUM of that result with
respect to each differentiated parameter — is called through the C ABI and
checked two independent ways, on random shapes (two draws per case):

  autograd  every result against PyTorch autograd in float64
            (y.sum().backward()); f64 programs: relative Frobenius error
            <= 1e-10; f32 programs: <= 1e-4 (float32 rounding in a long
            reverse sweep; measured ~1e-6)
  fd        the directional derivative <g, v> for a random direction v,
            against a central finite difference of OF itself
            (f(x + h v) - f(x - h v)).sum() / 2h, h = 1e-6, in float64:
            relative error <= 1e-6 (the difference's truncation error is
            O(h^2) and its rounding error O(eps/h) ~ 1e-10)

Usage: /usr/bin/python3 tests/golden/test_grad.py BUILD_DIR
Last line: `golden-grad: N passed, M failed`; exit status 1 on any failure.
"""
import os
import random
import zlib
import sys

import numpy as np
import torch

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Runner  # noqa: E402

F = torch.nn.functional
H_FD = 1e-6


class P:
    """A parameter: name, dtype, dims (a string of shape variables and
    literals), how to draw it ('normal', 'pos' = positive, away from 0,
    'nonzero' = |x| >= 0.1, ('index', VAR) = integers in [0, VAR))."""

    def __init__(self, name, dt, dims, draw="normal"):
        self.name, self.dt, self.dims, self.draw = name, dt, dims, draw


def dims_of(text, env):
    """The concrete shape of a dims string such as 'B (* 3 H) D'."""
    import re
    toks = re.findall(r"\(|\)|[^\s()]+", text)

    def ev(i):
        t = toks[i]
        if t != "(":
            return (env[t] if t in env else int(t)), i + 1
        op, i = toks[i + 1], i + 2
        args = []
        while toks[i] != ")":
            v, i = ev(i)
            args.append(v)
        r = args[0]
        for a in args[1:]:
            r = r * a if op == "*" else r + a if op == "+" else r - a
        return r, i + 1
    out, i = [], 0
    while i < len(toks):
        v, i = ev(i)
        out.append(v)
    return tuple(out)


def draw(p, env, rng):
    shape = dims_of(p.dims, env)
    if isinstance(p.draw, tuple):
        return rng.integers(0, env[p.draw[1]], size=shape).astype(np.int64 if p.dt == "i64" else np.int32)
    x = rng.standard_normal(shape)
    if p.draw == "pos":
        x = np.abs(x) + 0.5
    elif p.draw == "nonzero":
        x = np.where(np.abs(x) < 0.1, 0.1 * np.sign(x) + (x == 0) * 0.1, x)
    return x.astype(np.float64 if p.dt == "f64" else np.float32)


def source(params, ret, body, dims, where="", wrt=None):
    d = f" (dims {dims})" if dims else ""
    w = f" (where {where})" if where else ""
    ps = " ".join(f"({p.name} (tensor {p.dt} ({p.dims}) host))" for p in params)
    w_ = f" :wrt ({' '.join(wrt)})" if wrt else ""
    return (f"(module g\n(func f{d}{w}\n  (params {ps})\n  (returns (tensor {ret[0]} ({ret[1]}) host))\n  {body})\n"
            f"(grad df f{w_}))\n")


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    n = np.linalg.norm(b)
    return float(np.linalg.norm(a - b) / (n if n > 0 else 1.0))


class GradRunner(Runner):
    def grad_case(self, name, params, ret, body, ref, dims="", ranges=None, where="", wrt=None, draws=2, prelude="", check=None):
        """ref(*torch_tensors) -> the result, in torch (differentiable)."""
        src = source(params, ret, body, dims, where, wrt)
        if prelude:
            src = src.replace("(func f", prelude + "\n(func f", 1)
        rng = np.random.default_rng(zlib.crc32(name.encode()))  # str hash() differs per process (PYTHONHASHSEED)
        pyrng = random.Random(name)
        float_params = [i for i, p in enumerate(params) if p.dt in ("f32", "f64")]
        wrt_idx = [i for i, p in enumerate(params) if p.name in wrt] if wrt else float_params
        tol = 1e-10 if ret[0] == "f64" else 1e-4
        for k in range(draws):
            env = {}
            for v, (lo, hi) in (ranges or {}).items():
                env[v] = pyrng.randint(lo, hi)
            if check and not check(env):
                continue
            label = f"{name}[{','.join(f'{a}={b}' for a, b in env.items())}]"
            try:
                m = self.module(src)
                xs = [draw(p, env, rng) for p in params]
                ys = m.call("df", *xs)
                # autograd in float64
                ts = [torch.from_numpy(x.astype(np.float64)).requires_grad_(i in wrt_idx) if x.dtype.kind == "f"
                      else torch.from_numpy(x.astype(np.int64)) for i, x in enumerate(xs)]
                y = ref(*ts)
                y.sum().backward()
                refs = [y.detach().numpy()] + [ts[i].grad.numpy() if ts[i].grad is not None else np.zeros(ts[i].shape) for i in wrt_idx]
                if len(ys) != len(refs):
                    raise AssertionError(f"{len(ys)} results, expected {len(refs)}")
                errs = []
                for i, (a, r) in enumerate(zip(ys, refs)):
                    if tuple(a.shape) != tuple(r.shape):
                        raise AssertionError(f"result {i}: shape {a.shape}, reference {r.shape}")
                    errs.append(rel(a, r))
                e_ad = max(errs)
                ok = e_ad <= tol
                # finite differences of OF itself, along a random direction (f64 programs)
                e_fd = 0.0
                if ret[0] == "f64":
                    vs = {i: rng.standard_normal(xs[i].shape) for i in wrt_idx}
                    plus = [x.copy() for x in xs]
                    minus = [x.copy() for x in xs]
                    for i, v in vs.items():
                        plus[i] = xs[i] + H_FD * v
                        minus[i] = xs[i] - H_FD * v
                    fd = (m.call("f", *plus)[0].sum() - m.call("f", *minus)[0].sum()) / (2 * H_FD)
                    an = sum(float((ys[1 + j] * vs[i]).sum()) for j, i in enumerate(wrt_idx))
                    e_fd = abs(fd - an) / max(abs(an), 1e-3)
                    ok &= e_fd <= 1e-6
                self.report(label, e_ad, ok, f"fd={e_fd:.1e}")
            except Exception as ex:  # noqa: BLE001 - every failure is a FAIL line
                self.report(label, "-", False, f"{type(ex).__name__}: {ex}".replace("\n", " | ")[:300])


def main():
    r = GradRunner(sys.argv[1] if len(sys.argv) > 1 else "build/default", "golden-grad")
    ND = {"N": (1, 5), "D": (1, 6)}
    x = P("x", "f64", "N D")

    # elementwise unary
    unary = {
        "neg": (lambda t: -t, "normal"), "abs": (torch.abs, "nonzero"), "exp": (torch.exp, "normal"),
        "log": (torch.log, "pos"), "sqrt": (torch.sqrt, "pos"), "rsqrt": (torch.rsqrt, "pos"),
        "tanh": (torch.tanh, "normal"), "sigmoid": (torch.sigmoid, "normal"), "relu": (torch.relu, "nonzero"),
        "silu": (F.silu, "normal"), "sin": (torch.sin, "normal"), "cos": (torch.cos, "normal"),
        "erf": (torch.erf, "normal"), "gelu": (F.gelu, "normal"),  # exact GELU: Phi(x) + x phi(x)
    }
    for op, (fn, how) in unary.items():
        r.grad_case(f"{op}", [P("x", "f64", "N D", how)], ("f64", "N D"), f"(return ({op} x))", fn, "N D", ND)

    # binary, with broadcasting (sum over the broadcast axes)
    shapes = [("N D", "N D"), ("N D", "D"), ("N 1", "1 D"), ("1", "N D")]
    binary = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}
    for op, fn in binary.items():
        for sa, sb in shapes:
            out = "N D"
            r.grad_case(f"{op}({sa})({sb})", [P("a", "f64", sa), P("b", "f64", sb, "pos" if op == "div" else "normal")],
                        ("f64", out), f"(return ({op} a b))", fn, "N D", ND)
    for op, fn in {"max": torch.maximum, "min": torch.minimum}.items():
        r.grad_case(f"{op}(N D)(D)", [P("a", "f64", "N D"), P("b", "f64", "D")], ("f64", "N D"), f"(return ({op} a b))", fn, "N D", ND)
        # every position a tie: each operand gets half (PyTorch's rule)
        r.grad_case(f"{op}-ties", [x, P("w", "f64", "N D")], ("f64", "N D"), f"(return (mul ({op} x (mul x 1.0)) w))",
                    lambda t, w, fn=fn: fn(t, t * 1.0) * w, "N D", ND)
    r.grad_case("pow", [P("a", "f64", "N D", "pos"), P("b", "f64", "N D")], ("f64", "N D"), "(return (pow a b))", torch.pow, "N D", ND)
    r.grad_case("mul-self", [x], ("f64", "N D"), "(return (mul x x))", lambda t: t * t, "N D", ND)

    # select (the condition is data), cast
    r.grad_case("select", [P("a", "f64", "N D"), P("b", "f64", "D")], ("f64", "N D"),
                "(return (select (gt a 0.0) (mul a b) b))", lambda a, b: torch.where(a > 0, a * b, b), "N D", ND)
    r.grad_case("select-scalar-branch", [x], ("f64", "N D"), "(return (select (gt x 0.0) x -2.5))",
                lambda t: torch.where(t > 0, t, torch.tensor(-2.5, dtype=t.dtype)), "N D", ND)
    r.grad_case("cast-f32-roundtrip", [P("x", "f32", "N D")], ("f32", "N D"), "(return (cast (exp (cast x f64)) f32))",
                torch.exp, "N D", ND)

    # matmul: 2-D, broadcast batch, rank 4
    r.grad_case("matmul-2d", [P("a", "f64", "M K"), P("b", "f64", "K N")], ("f64", "M N"), "(return (matmul a b))",
                torch.matmul, "M K N", {"M": (1, 5), "K": (1, 6), "N": (1, 4)})
    r.grad_case("matmul-batch-bcast", [P("a", "f64", "B M K"), P("b", "f64", "K N")], ("f64", "B M N"),
                "(return (matmul a b))", torch.matmul, "B M K N", {"B": (1, 3), "M": (1, 4), "K": (1, 5), "N": (1, 4)})
    r.grad_case("matmul-rank4", [P("q", "f64", "B H S D"), P("k", "f64", "B H S D")], ("f64", "B H S S"),
                "(return (matmul q (transpose k)))", lambda q, k: q @ k.transpose(-1, -2), "B H S D",
                {"B": (1, 2), "H": (1, 3), "S": (1, 4), "D": (1, 4)})
    r.grad_case("matmul-bcast-1", [P("a", "f64", "B 1 M K"), P("b", "f64", "H K N")], ("f64", "B H M N"),
                "(return (matmul a b))", torch.matmul, "B H M K N", {"B": (1, 3), "H": (1, 3), "M": (1, 3), "K": (1, 4), "N": (1, 3)})

    # layout
    r.grad_case("transpose", [P("a", "f64", "M N"), P("w", "f64", "M N")], ("f64", "N M"), "(return (mul (transpose a) (transpose w)))",
                lambda a, w: a.T * w.T, "M N", {"M": (1, 5), "N": (1, 5)})
    r.grad_case("permute", [P("a", "f64", "A B C")], ("f64", "C A B"), "(return (exp (permute a (2 0 1))))",
                lambda a: torch.exp(a.permute(2, 0, 1)), "A B C", {"A": (1, 3), "B": (1, 4), "C": (1, 3)})
    r.grad_case("reshape", [P("a", "f64", "A B"), P("w", "f64", "B A")], ("f64", "B A"), "(return (mul (reshape a (B A)) w))",
                lambda a, w: a.reshape(w.shape) * w, "A B", {"A": (1, 4), "B": (1, 5)})
    r.grad_case("broadcast_to", [P("a", "f64", "1 D"), P("w", "f64", "N D")], ("f64", "N D"),
                "(return (mul (broadcast_to a (N D)) w))", lambda a, w: a.expand(w.shape) * w, "N D", ND)
    r.grad_case("concat", [P("a", "f64", "N D"), P("b", "f64", "N 2")], ("f64", "N (+ D 2)"),
                "(return (tanh (concat a b :axis -1)))", lambda a, b: torch.tanh(torch.cat([a, b], -1)), "N D", ND)
    r.grad_case("slice", [P("a", "f64", "N 6")], ("f64", "N 3"), "(return (exp (slice a :axis 1 :start 2 :size 3)))",
                lambda a: torch.exp(a[:, 2:5]), "N", {"N": (1, 4)})
    # the zero padding after the slice, N - 1 rows, may be empty: padded by N on both sides, sliced back
    r.grad_case("slice-prefix", [P("a", "f64", "N D")], ("f64", "1 D"), "(return (exp (slice a :axis 0 :start 0 :size 1)))",
                lambda a: torch.exp(a[0:1]), "N D", {"N": (1, 5), "D": (1, 4)})
    r.grad_case("slice-prefix-where", [P("a", "f64", "N D")], ("f64", "1 D"), "(return (exp (slice a :axis 0 :start 0 :size 1)))",
                lambda a: torch.exp(a[0:1]), "N D", {"N": (2, 5), "D": (1, 4)}, where="(>= N 2)")
    # a symbolic window: the pad after it, D - S - K, is 0 for some shapes
    r.grad_case("slice-symbolic", [P("a", "f64", "N D"), P("s", "f64", "S"), P("k", "f64", "K")], ("f64", "N K"),
                "(return (sin (slice a :axis -1 :start S :size K)))",
                lambda a, s_, k_: torch.sin(a[:, s_.shape[0]:s_.shape[0] + k_.shape[0]]) + 0 * s_.sum() + 0 * k_.sum(),
                "N D S K", {"N": (1, 3), "D": (2, 7), "S": (1, 3), "K": (1, 3)}, where="(<= (+ S K) D)",
                draws=4, check=lambda e: e["S"] + e["K"] <= e["D"])

    # reductions
    r.grad_case("reduce_sum-keepdims", [x], ("f64", "N 1"), "(return (mul (reduce_sum x :axes (-1) :keepdims true) (reduce_sum x :axes (-1) :keepdims true)))",
                lambda t: t.sum(-1, keepdim=True) ** 2, "N D", ND)
    r.grad_case("reduce_sum-drop", [P("x", "f64", "A B C")], ("f64", "B"), "(return (exp (reduce_sum x :axes (0 2))))",
                lambda t: torch.exp(t.sum((0, 2))), "A B C", {"A": (1, 3), "B": (1, 4), "C": (1, 3)})
    r.grad_case("reduce_mean", [P("x", "f64", "A B C")], ("f64", "A 1 1"), "(return (exp (reduce_mean x :axes (1 2) :keepdims true)))",
                lambda t: torch.exp(t.mean((1, 2), keepdim=True)), "A B C", {"A": (1, 3), "B": (1, 4), "C": (1, 3)})

    for op, fn in {"reduce_max": torch.amax, "reduce_min": torch.amin}.items():
        r.grad_case(op, [P("x", "f64", "A B C"), P("w", "f64", "A C")], ("f64", "A C"), f"(return (mul ({op} x :axes (1)) w))",
                    lambda t, w, fn=fn: fn(t, 1) * w, "A B C", {"A": (1, 3), "B": (1, 4), "C": (1, 3)})
        # ties: each maximum appears twice, and shares the cotangent
        r.grad_case(f"{op}-ties", [P("x", "f64", "A B")], ("f64", "A 1"),
                    f"(return (exp ({op} (repeat_interleave x :repeats 2 :axis 1) :axes (1) :keepdims true)))",
                    lambda t, fn=fn: torch.exp(fn(t.repeat_interleave(2, 1), 1, keepdim=True)), "A B", {"A": (1, 3), "B": (1, 4)})

    # softmax family
    r.grad_case("softmax-last", [x, P("w", "f64", "N D")], ("f64", "N D"), "(return (mul (softmax x :axis -1) w))",
                lambda t, w: torch.softmax(t, -1) * w, "N D", ND)
    r.grad_case("softmax-axis0", [x, P("w", "f64", "N D")], ("f64", "N D"), "(return (mul (softmax x :axis 0) w))",
                lambda t, w: torch.softmax(t, 0) * w, "N D", ND)
    r.grad_case("log_softmax", [x, P("w", "f64", "N D")], ("f64", "N D"), "(return (mul (log_softmax x :axis -1) w))",
                lambda t, w: torch.log_softmax(t, -1) * w, "N D", ND)
    r.grad_case("repeat_interleave", [P("a", "f64", "B H D"), P("w", "f64", "B (* 3 H) D")], ("f64", "B (* 3 H) D"),
                "(return (mul (repeat_interleave a :repeats 3 :axis 1) w))", lambda a, w: a.repeat_interleave(3, dim=1) * w,
                "B H D", {"B": (1, 2), "H": (1, 3), "D": (1, 3)})

    # indexing: cotangents by one-hot selection / contraction
    r.grad_case("take_along_axis", [P("l", "f64", "B T V"), P("t", "i64", "B T", ("index", "V"))], ("f64", "B T"),
                "(return (neg (take_along_axis (log_softmax l :axis -1) t :axis -1)))",
                lambda l, t: -torch.log_softmax(l, -1).gather(-1, t.unsqueeze(-1)).squeeze(-1), "B T V",
                {"B": (1, 3), "T": (1, 5), "V": (2, 7)})
    r.grad_case("take_along_axis-0", [P("l", "f64", "V C"), P("t", "i32", "C", ("index", "V"))], ("f64", "C"),
                "(return (exp (take_along_axis l t :axis 0)))",
                lambda l, t: torch.exp(l.gather(0, t.unsqueeze(0)).squeeze(0)), "V C", {"V": (1, 5), "C": (1, 4)})
    r.grad_case("gather-2d", [P("e", "f64", "V D"), P("ids", "i64", "B T", ("index", "V"))], ("f64", "B T D"),
                "(return (tanh (gather e ids)))", lambda e, ids: torch.tanh(e[ids]), "V D B T",
                {"V": (1, 6), "D": (1, 4), "B": (1, 3), "T": (1, 5)})
    r.grad_case("gather-rank1-table", [P("e", "f64", "V"), P("ids", "i64", "N", ("index", "V"))], ("f64", "N"),
                "(return (exp (gather e ids)))", lambda e, ids: torch.exp(e[ids]), "V N", {"V": (1, 5), "N": (1, 8)})

    # scans and the derived operations (spec §4.27-4.30): cumsum's rule is the
    # opposite scan; squeeze/unsqueeze/pad/argmax differentiate through the
    # primitives they are written as (argmax carries no gradient: its
    # operand's gradient comes from the other path only)
    w = P("w", "f64", "N D")
    for axis, rev in ((1, "false"), (0, "true"), (-1, "true")):
        def cs(t, w_, axis=axis, rev=rev):
            c = torch.flip(torch.cumsum(torch.flip(t, [axis]), axis), [axis]) if rev == "true" else torch.cumsum(t, axis)
            return c * w_
        r.grad_case(f"cumsum-axis{axis}-reverse-{rev}", [x, w], ("f64", "N D"), f"(return (mul (cumsum x :axis {axis} :reverse {rev}) w))",
                    cs, "N D", ND)
    r.grad_case("squeeze-unsqueeze", [P("a", "f64", "N 1 D")], ("f64", "N D 1"),
                "(return (unsqueeze (exp (squeeze a :axis 1)) :axis -1))", lambda a: torch.exp(a.squeeze(1)).unsqueeze(-1), "N D", ND)
    r.grad_case("pad-literal", [x, P("w", "f64", "N (+ D 3)")], ("f64", "N (+ D 3)"),
                "(return (mul (pad (tanh x) :axis 1 :low 2 :high 1 :value 0.5) w))",
                lambda t, w_: F.pad(torch.tanh(t), (2, 1), value=0.5) * w_, "N D", ND)
    r.grad_case("pad-symbolic", [x, P("k", "f64", "K"), P("w", "f64", "(+ N (- K 1)) D")], ("f64", "(+ N (- K 1)) D"),
                "(return (mul (pad (sin x) :axis 0 :low (- K 1) :high 0) w))",
                lambda t, k, w_: F.pad(torch.sin(t), (0, 0, k.shape[0] - 1, 0)) * w_ + 0 * k.sum(), "N D K",
                {"N": (1, 4), "D": (1, 4), "K": (1, 4)})
    r.grad_case("argmax-select", [x], ("f64", "N D"),
                "(return (mul x (cast (eq (iota (tensor i64 (N D) host) :axis 1) (argmax x :axis 1 :keepdims true)) f64)))",
                lambda t: t * (torch.arange(t.shape[1]).unsqueeze(0) == t.argmax(1, keepdim=True)).double(), "N D", ND)

    r.grad_case("top_k-values", [P("x", "f64", "N D"), P("w", "f64", "N 2")], ("f64", "N 2"),
                "(let (v i) (top_k x :k 2 :axis 1))\n  (return (mul v w))", lambda t, w_: torch.topk(t, 2, 1).values * w_, "N D",
                {"N": (1, 5), "D": (2, 6)}, where="(>= D 2)")

    # wrt a subset; an unused parameter gets zeros
    r.grad_case("wrt-subset", [P("a", "f64", "N D"), P("b", "f64", "N D")], ("f64", "N D"), "(return (mul a b))",
                lambda a, b: a * b, "N D", ND, wrt=["b"])
    r.grad_case("unused-param", [P("a", "f64", "N D"), P("b", "f64", "N D")], ("f64", "N D"), "(return (exp a))",
                lambda a, b: torch.exp(a) + 0 * b, "N D", ND)

    # compositions: calls (inlined), RMSNorm, causal attention, the NLL loss
    rms = ("(func rmsnorm (dims N D) (params (x (tensor f64 (N D) host)) (g (tensor f64 (D) host)))\n"
           "  (returns (tensor f64 (N D) host))\n"
           "  (let ms (reduce_mean (mul x x) :axes (-1) :keepdims true))\n"
           "  (return (mul (mul x (rsqrt (add ms 1e-5))) g)))")

    def rmsnorm(t, g):
        return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-5) * g
    r.grad_case("call-rmsnorm", [x, P("g", "f64", "D")], ("f64", "N D"), "(return (tanh (call rmsnorm x g)))",
                lambda t, g: torch.tanh(rmsnorm(t, g)), "N D", ND, prelude=rms)
    attend = ("(func attend (dims B H S Dh)\n"
              "  (params (q (tensor f64 (B H S Dh) host)) (k (tensor f64 (B H S Dh) host)) (v (tensor f64 (B H S Dh) host)))\n"
              "  (returns (tensor f64 (B H S Dh) host))\n"
              "  (let scores (mul (matmul q (transpose k)) (rsqrt (dim_value Dh f64 host))))\n"
              "  (let causal (ge (iota (tensor i32 (S S) host) :axis 0) (iota (tensor i32 (S S) host) :axis 1)))\n"
              "  (return (matmul (softmax (select causal scores -inf) :axis -1) v)))")

    def attn(q, k, v):
        s = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
        S = q.shape[-2]
        s = s.masked_fill(~torch.ones(S, S, dtype=torch.bool).tril(), float("-inf"))
        return torch.softmax(s, -1) @ v
    r.grad_case("call-attention", [P("q", "f64", "B H S Dh"), P("k", "f64", "B H S Dh"), P("v", "f64", "B H S Dh")],
                ("f64", "B H S Dh"), "(return (call attend q k v))", attn, "B H S Dh",
                {"B": (1, 2), "H": (1, 3), "S": (1, 5), "Dh": (1, 4)}, prelude=attend)
    split = ("(func split_heads (dims B S H Dh) (params (x (tensor f64 ((* B S) (* H Dh)) host)))\n"
             "  (returns (tensor f64 (B H S Dh) host))\n"
             "  (return (permute (reshape x (B S H Dh)) (0 2 1 3))))")
    r.grad_case("call-dims", [P("x", "f64", "B S H Dh")], ("f64", "B H S Dh"),
                "(return (exp (call split_heads :dims ((B B) (H H)) (reshape x ((* B S) (* H Dh))))))",
                lambda t: torch.exp(t.permute(0, 2, 1, 3)), "B S H Dh", {"B": (1, 3), "S": (1, 3), "H": (1, 3), "Dh": (1, 3)},
                prelude=split)
    r.grad_case("nll-sum-keepdims", [P("l", "f64", "B T V"), P("t", "i64", "B T", ("index", "V"))], ("f64", "1 1"),
                "(return (reduce_sum (neg (take_along_axis (log_softmax l :axis -1) t :axis -1)) :axes (0 1) :keepdims true))",
                lambda l, t: F.cross_entropy(l.reshape(-1, l.shape[-1]), t.reshape(-1), reduction="sum").reshape(1, 1),
                "B T V", {"B": (1, 3), "T": (1, 5), "V": (2, 9)})
    # second order: f calls a derived function; its gradient is a second derivative
    inner = ("(func energy (dims N D) (params (x (tensor f64 (N D) host)) (w (tensor f64 (D) host)))\n"
             "  (returns (tensor f64 () host)) (return (reduce_sum (mul (sin x) w) :axes (0 1))))\n"
             "(grad denergy energy :wrt (x))")

    def second(x_, w):
        e = (torch.sin(x_) * w).sum()
        (g,) = torch.autograd.grad(e, x_, create_graph=True)
        return g * g
    r.grad_case("second-order", [x, P("w", "f64", "D")], ("f64", "N D"), "(let (e g) (call denergy x w))\n  (return (mul g g))",
                second, "N D", ND, prelude=inner)
    r.grad_case("f32-mlp", [P("x", "f32", "N D"), P("w1", "f32", "D F"), P("w2", "f32", "F D")], ("f32", "N D"),
                "(return (matmul (silu (matmul x w1)) w2))", lambda x_, a, b: F.silu(x_ @ a) @ b, "N D F",
                {"N": (1, 6), "D": (1, 8), "F": (1, 8)})
    return r.finish("golden-grad")


if __name__ == "__main__":
    sys.exit(main())
