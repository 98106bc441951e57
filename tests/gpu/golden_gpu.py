#!/usr/bin/env python3
"""Every operation of the language on the GPU, end to end: source -> checker
-> GPU dispatch plan -> AOT module (built where the compiler is) -> runtime +
CUDA plugin (on the GPU machine) -> compared with PyTorch on the same GPU,
computed in float64 where the dtype is floating (golden values never come
from shapeml).

  # here (compiler available): write the program and build the module
  /usr/bin/python3 tests/gpu/golden_gpu.py build --shapemlc build/default/shapemlc --out DIR
  # on the GPU machine: run every entry against PyTorch
  python3 tests/gpu/golden_gpu.py run --runtime DIR/libshapeml_runtime.so --module DIR/golden_gpu.so [--json OUT]

Tolerances are those of the CPU golden tests (tests/golden/README.md):
elementwise f32 within 1e-5 absolute + 1e-5 relative of the float64 value
(transcendental ops 4e-6 relative more), matmul and reductions by an
RMSE-vs-fp64 gate of 2x PyTorch's own fp32 error + 1e-7, integer and bool
results exactly.
"""
import argparse
import json
import os
import subprocess
import sys

N, M = 37, 65  # awkward sizes: no multiple of 4, 32 or a tile
DEV = "(cuda 0)"


def T(dt, shape):
    return "(tensor %s (%s) %s)" % (dt, " ".join(str(d) for d in shape), DEV)


UNARY = ["neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu", "silu", "sin", "cos", "erf"]
BINARY = ["add", "sub", "mul", "div", "max", "min", "pow"]
COMPARE = ["eq", "ne", "lt", "le", "gt", "ge"]


def cases():
    """(name, [(param, dtype, shape, domain)], [result types], body, reference name)."""
    c = []
    for op in UNARY:
        dom = "pos" if op in ("log", "sqrt", "rsqrt") else "any"
        c.append(("u_" + op, [("x", "f32", (N, M), dom)], [("f32", (N, M))], "(return (%s x))" % op))
    c.append(("u_exp_f64", [("x", "f64", (N, M), "any")], [("f64", (N, M))], "(return (exp x))"))
    for op in BINARY:
        dom = "pos" if op == "pow" else "any"
        # y broadcasts over rows: (M) against (N M)
        c.append(("b_" + op, [("x", "f32", (N, M), dom), ("y", "f32", (M,), "any" if op != "div" else "nonzero")], [("f32", (N, M))],
                  "(return (%s x y))" % op))
    c.append(("b_add_col", [("x", "f32", (N, M), "any"), ("y", "f32", (N, 1), "any")], [("f32", (N, M))], "(return (add x y))"))
    c.append(("b_div_i32", [("x", "i32", (N, M), "int"), ("y", "i32", (N, M), "int0")], [("i32", (N, M))], "(return (div x y))"))
    c.append(("b_scalar", [("x", "f32", (N, M), "any")], [("f32", (N, M))], "(return (mul (add x 1.5) 2))"))
    for op in COMPARE:
        c.append(("c_" + op, [("x", "f32", (N, M), "small"), ("y", "f32", (N, M), "small")], [("bool", (N, M))], "(return (%s x y))" % op))
    c.append(("select", [("x", "f32", (N, M), "any"), ("y", "f32", (N, M), "any")], [("f32", (N, M))], "(return (select (gt x y) x y))"))
    c.append(("cast_f32_i32", [("x", "f32", (N, M), "wide")], [("i32", (N, M))], "(return (cast x i32))"))
    c.append(("cast_i32_f32", [("x", "i32", (N, M), "int")], [("f32", (N, M))], "(return (cast x f32))"))
    c.append(("cast_f32_bf16_f32", [("x", "f32", (N, M), "any")], [("f32", (N, M))], "(return (cast (cast x bf16) f32))"))
    c.append(("cast_f32_f64", [("x", "f32", (N, M), "any")], [("f64", (N, M))], "(return (cast x f64))"))
    c.append(("iota", [("x", "f32", (N, M), "any")], [("i64", (N, M))], "(return (iota %s :axis 1))" % T("i64", (N, M))))
    c.append(("fill", [("x", "f32", (N, M), "any")], [("f32", (N, M))], "(return (add x (fill 0.25 %s)))" % T("f32", (N, M))))
    c.append(("matmul_shared", [("x", "f32", (3, N, M), "any"), ("w", "f32", (M, 33), "any")], [("f32", (3, N, 33))], "(return (matmul x w))"))
    c.append(("matmul_batched", [("x", "f32", (3, N, M), "any"), ("w", "f32", (3, M, 7), "any")], [("f32", (3, N, 7))], "(return (matmul x w))"))
    c.append(("matmul_bias", [("x", "f32", (3, N, M), "any"), ("w", "f32", (M, 33), "any"), ("b", "f32", (33,), "any")],
              [("f32", (3, N, 33))], "(return (add (matmul x w) b))"))
    c.append(("matmul_bias_f64", [("x", "f64", (N, M), "any"), ("w", "f64", (M, 33), "any"), ("b", "f64", (33,), "any")],
              [("f64", (N, 33))], "(return (add b (matmul x w)))"))
    c.append(("matmul_f64", [("x", "f64", (N, M), "any"), ("w", "f64", (M, 33), "any")], [("f64", (N, 33))], "(return (matmul x w))"))
    c.append(("transpose", [("x", "f32", (3, N, M), "any")], [("f32", (3, M, N))], "(return (transpose x))"))
    c.append(("permute", [("x", "f32", (3, N, 5), "any")], [("f32", (5, 3, N))], "(return (permute x (2 0 1)))"))
    c.append(("reshape", [("x", "f32", (N, M), "any")], [("f32", (M, N))], "(return (reshape x (%d %d)))" % (M, N)))
    c.append(("broadcast_to", [("x", "f32", (M,), "any")], [("f32", (3, N, M))], "(return (broadcast_to x (3 %d %d)))" % (N, M)))
    c.append(("concat", [("x", "f32", (N, M), "any"), ("y", "f32", (N, 5), "any")], [("f32", (N, M + 5))], "(return (concat x y :axis 1))"))
    c.append(("slice", [("x", "f32", (N, M), "any")], [("f32", (N, 20))], "(return (slice x :axis 1 :start 7 :size 20))"))
    c.append(("reduce_sum_last", [("x", "f32", (N, M), "any")], [("f32", (N,))], "(return (reduce_sum x :axes (-1)))"))
    c.append(("reduce_sum_first_keep", [("x", "f32", (N, M), "any")], [("f32", (1, M))], "(return (reduce_sum x :axes (0) :keepdims true))"))
    c.append(("reduce_max_mid", [("x", "f32", (3, N, M), "any")], [("f32", (3, M))], "(return (reduce_max x :axes (1)))"))
    c.append(("reduce_mean_all", [("x", "f32", (N, M), "any")], [("f32", ())], "(return (reduce_mean x))"))
    c.append(("reduce_sum_i32", [("x", "i32", (N, M), "int")], [("i32", (M,))], "(return (reduce_sum x :axes (0)))"))
    # The operations of issue 10.
    c.append(("l_not", [("x", "bool", (N, M), "any")], [("bool", (N, M))], "(return (not x))"))
    c.append(("l_and", [("x", "bool", (N, M), "any"), ("y", "bool", (M,), "any")], [("bool", (N, M))], "(return (and x y))"))
    c.append(("l_or", [("x", "bool", (N, 1), "any"), ("y", "bool", (N, M), "any")], [("bool", (N, M))], "(return (or x y))"))
    c.append(("reduce_min_mid", [("x", "f32", (3, N, M), "any")], [("f32", (3, M))], "(return (reduce_min x :axes (1)))"))
    c.append(("softmax_last", [("x", "f32", (3, N, M), "any")], [("f32", (3, N, M))], "(return (softmax (mul x 4) :axis -1))"))
    c.append(("softmax_mid", [("x", "f32", (3, N, M), "any")], [("f32", (3, N, M))], "(return (softmax x :axis 1))"))
    c.append(("log_softmax_last", [("x", "f32", (N, M), "any")], [("f32", (N, M))], "(return (log_softmax (mul x 4)))"))
    c.append(("repeat_interleave", [("x", "f32", (N, 5), "any")], [("f32", (N, 15))], "(return (repeat_interleave x :repeats 3 :axis 1))"))
    c.append(("dim_value", [("x", "f32", (N, M), "any")], [("f32", (N, M))], "(return (mul x (rsqrt (dim_value %d f32 %s))))" % (M, DEV)))
    c.append(("gather", [("t", "f32", (50, M), "any"), ("i", "i64", (3, N), "idx50")], [("f32", (3, N, M))], "(return (gather t i))"))
    c.append(("gather_oob", [("t", "f32", (50, M), "any"), ("i", "i64", (3, N), "idx50bad")], [("f32", (3, N, M))], "(return (gather t i))"))
    c.append(("take_along", [("x", "f32", (3, N, M), "any"), ("i", "i64", (3, N), "idx%d" % M)], [("f32", (3, N))],
              "(return (take_along_axis x i :axis -1))"))
    # StoryLM-0's loss (issue 13): the per-token NLL as a composition.
    c.append(("nll", [("x", "f32", (3, N, M), "any"), ("i", "i64", (3, N), "idx%d" % M)], [("f32", (3, N))],
              "(return (neg (take_along_axis (log_softmax x :axis -1) i)))"))
    c.append(("matmul_bcast_left", [("x", "f32", (N, M), "any"), ("w", "f32", (3, M, 7), "any")], [("f32", (3, N, 7))], "(return (matmul x w))"))
    c.append(("matmul_bcast_4d", [("x", "f32", (2, 1, N, M), "any"), ("w", "f32", (3, M, 7), "any")], [("f32", (2, 3, N, 7))],
              "(return (matmul x w))"))
    c.append(("call_dims", [("x", "f32", (2, N, 12), "any")], [("f32", (2, 3, N, 4))], "(return (call heads :dims ((H 3)) x))"))
    # The operations of spec §4.27-4.30 and floordiv/mod (issue 25).
    c.append(("b_floordiv_i32", [("x", "i32", (N, M), "int"), ("y", "i32", (N, M), "int0")], [("i32", (N, M))], "(return (floordiv x y))"))
    c.append(("b_mod_i64", [("x", "i64", (N, M), "int64"), ("y", "i64", (M,), "int64_0")], [("i64", (N, M))], "(return (mod x y))"))
    c.append(("cumsum_last", [("x", "f32", (N, M), "any")], [("f32", (N, M))], "(return (cumsum x :axis 1))"))
    c.append(("cumsum_long_rev", [("x", "f32", (3, 700), "any")], [("f32", (3, 700))], "(return (cumsum x :axis -1 :reverse true))"))
    c.append(("cumsum_mid_i32", [("x", "i32", (3, N, 5), "int")], [("i32", (3, N, 5))], "(return (cumsum x :axis 1))"))
    c.append(("pad_mid", [("x", "f32", (3, N, 5), "any")], [("f32", (3, N + 3, 5))], "(return (pad x :axis 1 :low 1 :high 2 :value -2.5))"))
    c.append(("squeeze_unsqueeze", [("x", "f32", (N, 1, M), "any")], [("f32", (1, N, M))], "(return (unsqueeze (squeeze x :axis 1) :axis 0))"))
    c.append(("argmax_last", [("x", "f32", (3, N, M), "small")], [("i64", (3, N))], "(return (argmax x :axis -1))"))
    c.append(("argmin_mid_keep", [("x", "f32", (3, N, M), "small")], [("i64", (3, 1, M))], "(return (argmin x :axis 1 :keepdims true))"))
    c.append(("top_k_last", [("x", "f32", (3, N, M), "small")], [("f32", (3, N, 4)), ("i64", (3, N, 4))],
              "(let (v i) (top_k x :k 4 :axis -1)) (return v i)"))
    # Mixed placement: host in, host out, the work on the device.
    c.append(("mixed", [("x", "f32", (N, M), "any")], [("f32", (N, M))], None))
    return c


def program():
    out = ["; Generated by tests/gpu/golden_gpu.py: one device entry per case.", "(module golden_gpu",
           "  ; a helper only called with :dims (not an entry point)",
           "  (func heads (dims B S H Dh) (params (x %s)) (returns %s)" % (T("f32", ("B", "S", "(* H Dh)")), T("f32", ("B", "H", "S", "Dh"))),
           "    (return (permute (reshape x (B S H Dh)) (0 2 1 3))))"]
    for name, params, results, body in cases():
        if name == "mixed":
            out.append("  (func mixed (params (x (tensor f32 (%d %d) host))) (returns (tensor f32 (%d %d) host))" % (N, M, N, M))
            out.append("    (let d (copy_to_device x (cuda 0))) (return (copy_to_host (exp d))))")
            continue
        ps = " ".join("(%s %s)" % (p, T(dt, sh)) for p, dt, sh, _ in params)
        rs = " ".join(T(dt, sh) for dt, sh in results)
        out.append("  (func %s (params %s) (returns %s)" % (name, ps, rs))
        out.append("    %s)" % body)
    out[-1] += ")"
    return "\n".join(out) + "\n"


def build(a):
    os.makedirs(a.out, exist_ok=True)
    src = os.path.join(a.out, "golden_gpu.sml")
    with open(src, "w") as f:
        f.write(program())
    cmd = [a.shapemlc, "build", src, "-o", os.path.join(a.out, "golden_gpu.so"), "--target", "x86-64"]
    for name, *_ in cases():
        cmd += ["--bind", name + ":"]
    subprocess.run(cmd, check=True)
    return 0


def inputs(rng, params, np):
    arrs = []
    for _, dt, shape, dom in params:
        if dt == "bool":
            arrs.append(rng.integers(0, 2, size=shape).astype(np.bool_))
            continue
        if dt == "i64" and dom.startswith("int64"):  # signed values; "int64_0": every third 0
            v = rng.integers(-50, 50, size=shape).astype(np.int64)
            if dom == "int64_0":
                v[::3] = 0
            arrs.append(v)
            continue
        if dt == "i64":  # indices: "idxV" in [0, V); "idxVbad" with one 77 (out of range)
            bound = int(dom[3:].replace("bad", ""))
            v = rng.integers(0, bound, size=shape).astype(np.int64)
            if dom.endswith("bad"):
                v.flat[5] = 77
            arrs.append(v)
            continue
        if dt == "i32":
            v = rng.integers(-50, 50, size=shape).astype(np.int32)
            if dom == "int0":
                v[::3] = 0  # integer division by zero is 0 (spec §5)
            arrs.append(v)
            continue
        if dom == "pos":
            v = rng.uniform(0.05, 4.0, size=shape)
        elif dom == "small":
            v = rng.integers(-3, 4, size=shape).astype(np.float64)  # ties, so eq/le/ge see equal values
        elif dom == "wide":
            v = rng.uniform(-3e9, 3e9, size=shape)  # saturates at the i32 range
        elif dom == "nonzero":
            v = rng.uniform(0.5, 2.0, size=shape) * rng.choice([-1, 1], size=shape)
        else:
            v = rng.standard_normal(size=shape) * 2
        arrs.append(v.astype(np.float32 if dt == "f32" else np.float64))
    return arrs


def reference(name, xs, torch):
    """PyTorch on the GPU, in float64 for floating inputs."""
    F = torch.nn.functional
    d = [torch.from_numpy(x).cuda() for x in xs]
    f = [t.double() if t.is_floating_point() else t for t in d]
    op = name.split("_", 1)[1] if name[:2] in ("u_", "b_", "c_", "l_") else name
    if name.startswith("u_"):
        x = f[0]
        fn = {"neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt,
              "tanh": torch.tanh, "sigmoid": torch.sigmoid, "relu": torch.relu, "gelu": lambda t: F.gelu(t),
              "silu": F.silu, "exp_f64": torch.exp, "sin": torch.sin, "cos": torch.cos, "erf": torch.erf}[op]
        return fn(x)
    if name == "b_add_col" or name == "b_scalar" or name == "b_div_i32":
        if name == "b_add_col":
            return f[0] + f[1]
        if name == "b_scalar":
            return (f[0] + 1.5) * 2
        x, y = d[0].long(), d[1].long()
        q = torch.where(y == 0, torch.zeros_like(x), torch.div(x, torch.where(y == 0, torch.ones_like(y), y), rounding_mode="trunc"))
        return q.int()
    if name in ("b_floordiv_i32", "b_mod_i64"):  # floor semantics; a zero divisor gives 0
        x, y = d[0].long(), d[1].long()
        y1 = torch.where(y == 0, torch.ones_like(y), y)
        r = torch.div(x, y1, rounding_mode="floor") if name == "b_floordiv_i32" else torch.remainder(x, y1)
        r = torch.where(y == 0, torch.zeros_like(r), r)
        return r.int() if name == "b_floordiv_i32" else r
    if name == "cumsum_last":
        return f[0].cumsum(1)
    if name == "cumsum_long_rev":
        return f[0].flip(-1).cumsum(-1).flip(-1)
    if name == "cumsum_mid_i32":
        return d[0].cumsum(1).int()
    if name == "pad_mid":
        return F.pad(f[0], (0, 0, 1, 2), value=-2.5)
    if name == "squeeze_unsqueeze":
        return f[0].squeeze(1).unsqueeze(0)
    if name == "argmax_last":
        return d[0].argmax(-1)
    if name == "top_k_last":  # ties in index order (a stable sort of -x)
        idx = torch.sort(-d[0], dim=-1, stable=True).indices[..., :4]
        return d[0].gather(-1, idx).double(), idx
    if name == "argmin_mid_keep":
        return d[0].argmin(1, keepdim=True)
    if name.startswith("b_"):
        x, y = f
        return {"add": x + y, "sub": x - y, "mul": x * y, "div": x / y, "max": torch.maximum(x, y), "min": torch.minimum(x, y),
                "pow": torch.pow(x, y)}[op]
    if name.startswith("l_"):
        return {"not": lambda: ~d[0], "and": lambda: d[0] & d[1], "or": lambda: d[0] | d[1]}[op]()
    if name == "reduce_min_mid":
        return f[0].amin(1)
    if name == "softmax_last":
        return torch.softmax(f[0] * 4, -1)
    if name == "softmax_mid":
        return torch.softmax(f[0], 1)
    if name == "log_softmax_last":
        return torch.log_softmax(f[0] * 4, -1)
    if name == "repeat_interleave":
        return f[0].repeat_interleave(3, dim=1)
    if name == "dim_value":
        return f[0] / (M ** 0.5)
    if name in ("gather", "gather_oob"):
        return F.embedding(d[1], f[0])
    if name == "take_along":
        return f[0].gather(-1, d[1].unsqueeze(-1)).squeeze(-1)
    if name == "nll":
        return F.cross_entropy(f[0].reshape(-1, M), d[1].reshape(-1), reduction="none").reshape(3, N)
    if name == "call_dims":
        return f[0].reshape(2, N, 3, 4).permute(0, 2, 1, 3)
    if name.startswith("c_"):
        x, y = f
        return {"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y}[op]
    x = f[0]
    if name == "select":
        return torch.where(f[0] > f[1], f[0], f[1])
    if name == "cast_f32_i32":
        lo, hi = -2**31, 2**31 - 1
        return torch.clamp(torch.trunc(d[0].double()), lo, hi).long().int()
    if name == "cast_i32_f32":
        return d[0].float()
    if name == "cast_f32_bf16_f32":
        return d[0].bfloat16().float()
    if name == "cast_f32_f64":
        return d[0].double()
    if name == "iota":
        return torch.arange(M, device="cuda").reshape(1, M).expand(N, M).long()
    if name == "fill":
        return x + 0.25
    if name.startswith("matmul_bias"):
        return torch.matmul(f[0], f[1]) + f[2]
    if name.startswith("matmul"):
        return torch.matmul(f[0], f[1])
    if name == "transpose":
        return x.transpose(-1, -2)
    if name == "permute":
        return x.permute(2, 0, 1)
    if name == "reshape":
        return x.reshape(M, N)
    if name == "broadcast_to":
        return x.expand(3, N, M)
    if name == "concat":
        return torch.cat([f[0], f[1]], dim=1)
    if name == "slice":
        return x[:, 7:27]
    if name == "reduce_sum_last":
        return x.sum(-1)
    if name == "reduce_sum_first_keep":
        return x.sum(0, keepdim=True)
    if name == "reduce_max_mid":
        return x.amax(1)
    if name == "reduce_mean_all":
        return x.mean()
    if name == "reduce_sum_i32":
        return d[0].sum(0).int()
    if name == "mixed":
        return torch.exp(x)
    raise KeyError(name)


def compare(name, got, ref, xs, torch, np):
    ref_np = ref.cpu().numpy()
    if ref_np.dtype == np.bool_ or np.issubdtype(ref_np.dtype, np.integer):
        ok = got.shape == ref_np.shape and np.array_equal(got.astype(ref_np.dtype), ref_np)
        return ok, "exact" if ok else "mismatch at %d element(s)" % int(np.sum(got.astype(ref_np.dtype) != ref_np))
    if got.shape != ref_np.shape:
        return False, "shape %s, expected %s" % (got.shape, ref_np.shape)
    g = got.astype(np.float64)
    if name.startswith("matmul") or name.startswith("reduce"):
        # RMSE gate: 2x PyTorch's own error in the input dtype, + 1e-7.
        d = [torch.from_numpy(x).cuda() for x in xs]
        torch.backends.cuda.matmul.allow_tf32 = False
        own = reference(name, [x for x in xs], torch) if got.dtype == np.float64 else None
        if got.dtype == np.float32:
            t32 = {"matmul_shared": lambda: torch.matmul(d[0], d[1]), "matmul_batched": lambda: torch.matmul(d[0], d[1]),
                   "matmul_bias": lambda: torch.matmul(d[0], d[1]) + d[2],
                   "reduce_sum_last": lambda: d[0].sum(-1), "reduce_sum_first_keep": lambda: d[0].sum(0, keepdim=True),
                   "reduce_max_mid": lambda: d[0].amax(1), "reduce_mean_all": lambda: d[0].mean(),
                   "reduce_min_mid": lambda: d[0].amin(1), "matmul_bcast_left": lambda: torch.matmul(d[0], d[1]),
                   "matmul_bcast_4d": lambda: torch.matmul(d[0], d[1])}[name]()
            torch_err = float(np.sqrt(np.mean((t32.double().cpu().numpy() - ref_np) ** 2)))
        else:
            torch_err = float(np.sqrt(np.mean((own.cpu().numpy() - ref_np) ** 2))) if own is not None else 0.0
        err = float(np.sqrt(np.mean((g - ref_np) ** 2)))
        gate = 2 * torch_err + 1e-7 * (1 + float(np.sqrt(np.mean(ref_np ** 2))))
        return err <= gate, "rmse %.3g (gate %.3g)" % (err, gate)
    if name == "cast_f32_bf16_f32" or name == "cast_f32_f64" or name == "cast_i32_f32" or name == "reshape" or name in (
            "transpose", "permute", "broadcast_to", "concat", "slice", "repeat_interleave", "gather", "take_along", "call_dims", "pad_mid",
            "squeeze_unsqueeze", "top_k_last"):
        ok = np.array_equal(g, ref_np)
        return ok, "exact" if ok else "max |diff| %.3g" % float(np.max(np.abs(g - ref_np)))
    if name.startswith("cumsum"):
        # the running sum in f64: each output is the prefix sum rounded once
        ok = np.array_equal(g, ref_np.astype(np.float32).astype(np.float64))
        return ok, "correctly rounded" if ok else "max |diff| %.3g" % float(np.max(np.abs(g - ref_np)))
    rel = 1e-5 + (4e-6 if name.split("_", 1)[-1] in ("exp", "log", "tanh", "sigmoid", "silu", "gelu", "erf", "pow", "rsqrt", "sqrt", "sin", "cos",
                                                     "last", "mid") else 0)
    if got.dtype == np.float64:
        rel = 1e-12
    bound = 1e-5 * (got.dtype == np.float32) + rel * np.abs(ref_np)
    worst = float(np.max(np.abs(g - ref_np) - bound)) if g.size else -1.0
    return worst <= 0, "max |diff| %.3g" % float(np.max(np.abs(g - ref_np)) if g.size else 0.0)


def run(a):
    import numpy as np
    import torch
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sdk-examples", "python"))
    import shapeml
    torch.backends.cuda.matmul.allow_tf32 = False
    lib = shapeml.Library(a.runtime)
    dev = shapeml.Device(lib, 0)
    mod = lib.load(a.module)
    rng = np.random.default_rng(7)
    results, failed = [], 0
    for name, params, rtypes, body in cases():
        xs = inputs(rng, params, np)
        try:
            if name == "gather_oob":  # a bad index is OUT_OF_RANGE naming it, never a read
                ins = [dev.upload(x) for x in xs]
                try:
                    mod.call_tensors(name, *ins)
                    ok, detail = False, "no error for index 77 of [0, 50)"
                except shapeml.Error as e:
                    ok = e.name == "OUT_OF_RANGE" and "index 77 is out of range [0, 50) at indices[0, 5]" in e.message
                    detail = "%s: %s" % (e.name, e.message[:160])
                for t in ins:
                    dev.free(t)
                failed += 0 if ok else 1
                results.append({"case": name, "passed": bool(ok), "detail": detail})
                print("%-24s %s  %s" % (name, "ok  " if ok else "FAIL", detail))
                continue
            if name == "mixed":
                gots = [mod.call(name, *xs)[0]]
            else:
                ins = [dev.upload(x) for x in xs]
                outs = mod.call_tensors(name, *ins)
                gots = [dev.download(t) for t in outs]
                for t in list(ins) + list(outs):
                    dev.free(t)
            refs = reference(name, xs, torch)
            refs = list(refs) if isinstance(refs, tuple) else [refs]
            checks = [compare(name, np.asarray(g), r, xs, torch, np) for g, r in zip(gots, refs)]
            ok = len(gots) == len(refs) and all(k for k, _ in checks)
            detail = "; ".join(d for _, d in checks)
        except Exception as e:  # a failure of one case is reported, the rest still run
            ok, detail = False, "error: %s" % e
        failed += 0 if ok else 1
        results.append({"case": name, "passed": bool(ok), "detail": detail})
        print("%-24s %s  %s" % (name, "ok  " if ok else "FAIL", detail))
    print("%d of %d GPU cases passed" % (len(results) - failed, len(results)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"cases": results, "failed": failed}, f, indent=2)
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--shapemlc", required=True)
    b.add_argument("--out", required=True)
    r = sub.add_parser("run")
    r.add_argument("--runtime", required=True)
    r.add_argument("--module", required=True)
    r.add_argument("--json")
    a = ap.parse_args()
    return build(a) if a.cmd == "build" else run(a)


if __name__ == "__main__":
    sys.exit(main())
