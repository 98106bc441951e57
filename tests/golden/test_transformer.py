#!/usr/bin/env python3
"""Golden test of examples/transformer_block.sml (entry `block`: pre-norm
RMSNorm, multi-head self-attention, softmax, SwiGLU MLP, residuals) against
an independent PyTorch float64 reference, through the C ABI (JIT and AOT).

Gate, as torch.compile's accuracy check (torch._dynamo.utils.same with an
fp64 reference): with RMSE(a, b) = sqrt(mean((a - b)^2)),
    RMSE(shapeml_f32, ref_f64) <= MULTIPLIER * RMSE(torch_f32, ref_f64) + ATOL
MULTIPLIER = 2 (torch's value for f32): shapeml may be at most twice as far
from the exact result as PyTorch's own float32 computation of the same block.
ATOL = 1e-7, not torch's tol/10 = 1e-5: the outputs here are O(1) (std ~1.3)
and both f32 RMSEs are ~2e-7, so 1e-5 would dominate the bound and let a 50x
accuracy loss through; 1e-7 is about one f32 half-ulp at |y| ~ 1 (6e-8).
Measured over 8 seeds and 3 sizes, RMSE(shapeml)/RMSE(torch f32) is 1.0-1.5.
The max absolute error is printed too (not gated).

Usage: /usr/bin/python3 tests/golden/test_transformer.py BUILD_DIR   (default build/default)
Last line: `golden-transformer: N passed, M failed`; exit status 1 on any failure.
"""
import math
import os
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ROOT, Runner  # noqa: E402
import shapeml  # noqa: E402

MULTIPLIER, ATOL = 2.0, 1e-7
EPS = 1e-5  # RMSNorm epsilon, as in the .sml
SIZES = [  # (B, S, H, Dh, F); D = H * Dh
    (2, 16, 4, 8, 64),
    (1, 7, 2, 16, 96),   # odd sequence length, F not a multiple of D
    (3, 33, 4, 16, 128),  # S = 33 does not divide any tile
]


def reference(x, g1, wq, wk, wv, wo, g2, w_gate, w_up, w_down, H, Hkv=None):
    """The block, from its description: h = x + CausalAttn(RMSNorm(x)); out =
    h + SwiGLU(RMSNorm(h)); with Hkv < H key/value heads, each shared by
    H / Hkv query heads (grouped-query attention)."""
    B, S, D = x.shape
    Dh = D // H
    Hkv = Hkv or H

    def rmsnorm(t, g):
        return t / torch.sqrt(t.pow(2).mean(dim=-1, keepdim=True) + EPS) * g

    def heads(t, n):  # [B, S, n*Dh] -> [B, n, S, Dh]
        return t.view(B, S, n, Dh).transpose(1, 2)

    n1 = rmsnorm(x, g1)
    q = heads(n1 @ wq.reshape(D, D), H)
    k = heads(n1 @ wk.reshape(D, Hkv * Dh), Hkv).repeat_interleave(H // Hkv, dim=1)
    v = heads(n1 @ wv.reshape(D, Hkv * Dh), Hkv).repeat_interleave(H // Hkv, dim=1)
    scores = torch.einsum("bhsd,bhtd->bhst", q, k) / math.sqrt(Dh)
    causal = torch.ones(S, S, dtype=torch.bool).tril()
    p = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
    ctx = (p @ v).transpose(1, 2).reshape(B, S, D)
    h = x + ctx @ wo.reshape(D, D)
    n2 = rmsnorm(h, g2)
    return h + (F.silu(n2 @ w_gate) * (n2 @ w_up)) @ w_down


def make_inputs(rng, B, S, H, Dh, Fd, Hkv=None):
    D = H * Dh
    Hkv = Hkv or H

    def w(*shape):
        return (rng.standard_normal(shape) / math.sqrt(shape[0] if len(shape) < 3 else D)).astype(np.float32)

    x = rng.standard_normal((B, S, D)).astype(np.float32)
    g1 = (1.0 + 0.1 * rng.standard_normal(D)).astype(np.float32)
    g2 = (1.0 + 0.1 * rng.standard_normal(D)).astype(np.float32)
    # projection weights carry their heads: (D H Dh), and wo (H Dh D)
    return [x, g1, w(D, H, Dh), w(D, Hkv, Dh), w(D, Hkv, Dh), w(H, Dh, D), g2, w(D, Fd), w(D, Fd), w(Fd, D)]


def rmse(a, b):
    return float(np.sqrt(np.mean((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2)))


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "default")
    R = Runner(build, "golden transformer")
    rng = np.random.default_rng(7)
    src = open(os.path.join(ROOT, "examples", "transformer_block.sml")).read()
    print(f"# gate: RMSE(shapeml f32, ref f64) <= {MULTIPLIER:g} * RMSE(torch f32, ref f64) + {ATOL:g}")

    def gate(name, call, args, H, Hkv=None):
        try:
            (y,) = call(args)
            t64 = [torch.from_numpy(np.asarray(a, np.float64)) for a in args]
            t32 = [torch.from_numpy(np.asarray(a)) for a in args]
            ref = reference(*t64, H, Hkv).numpy()
            base = rmse(reference(*t32, H, Hkv).numpy(), ref)
            err = rmse(y, ref)
            bound = MULTIPLIER * base + ATOL
            ok = y.shape == ref.shape and y.dtype == np.float32 and err <= bound
            maxabs = float(np.max(np.abs(y.astype(np.float64) - ref)))
            R.report(name, err, ok, f"torch_f32={base:.2e} bound={bound:.2e} maxabs={maxabs:.2e}")
        except Exception as ex:  # noqa: BLE001
            R.report(name, "-", False, f"{type(ex).__name__}: {ex}".replace("\n", " | ")[:300])

    cases = []
    for B, S, H, Dh, Fd in SIZES:
        cases.append(((B, S, H, Dh, Fd), make_inputs(rng, B, S, H, Dh, Fd)))

    # The example exactly as written, JIT and AOT. H and Dh come from the
    # shapes of the projection weights (D H Dh).
    for (B, S, H, Dh, Fd), args in cases:
        tag = f"B={B},S={S},H={H},Dh={Dh},D={H * Dh},F={Fd}"
        gate(f"block JIT {tag}", lambda a: R.module(src, "examples/transformer_block.sml").call("block", *a), args, H)
        with tempfile.TemporaryDirectory() as tmp:
            so = os.path.join(tmp, "block.so")

            def aot(a, so=so, B=B, S=S, H=H, Dh=Dh, Fd=Fd):
                # The block is generic in its dtype T and device Dv (spec §3.5): an AOT build binds them too.
                R.sdk.build(src, [f"block:T=f32,Dv=host,B={B},S={S},D={H * Dh},H={H},Dh={Dh},F={Fd}"], so, name="transformer_block.sml")
                return R.runtime.load(so).call("block", *a)
            gate(f"block AOT {tag}", aot, args, H)
    # The same source in bf16 on the CPU (T = bf16 from the inputs): within 2x
    # PyTorch bf16's own error against float64 (plus a bf16 half-ulp at O(1)).
    for (B, S, H, Dh, Fd), args in cases[:2]:
        tag = f"B={B},S={S},H={H},Dh={Dh},D={H * Dh},F={Fd}"
        try:
            y = R.module(src, "examples/transformer_block.sml").call("block", *[shapeml.bf16(a) for a in args])[0]
            bf = [torch.from_numpy(np.asarray(a)).to(torch.bfloat16) for a in args]
            ref = reference(*[torch.from_numpy(np.asarray(a, np.float64)) for a in args], H, None).numpy()
            base = rmse(reference(*bf, H, None).float().numpy(), ref)
            err = rmse(np.asarray(y, np.float64), ref)
            bound = MULTIPLIER * base
            R.report(f"block JIT bf16 {tag}", err, err <= bound and np.isfinite(y).all(), f"torch_bf16={base:.2e} bound={bound:.2e}")
        except Exception as ex:  # noqa: BLE001
            R.report(f"block JIT bf16 {tag}", "-", False, f"{type(ex).__name__}: {ex}".replace("\n", " | ")[:300])
    # The entry's variables as the C ABI reports them (spec §3.5).
    e = R.module(src, "examples/transformer_block.sml").entry("block")
    R.report("block introspection names T and Dv", "-", e.dtype_variables == {"T": ["f32", "f64", "bf16"]} and e.device_variables == ["Dv"]
             and e.params[0].type == "(tensor T (B S D) Dv)", f"{e.dtype_variables} {e.device_variables} {e.params[0].type}")
    # One dtype variable, two dtypes: T is bf16 from x, so the f32 g1 is refused, by name.
    args = cases[0][1]
    try:
        R.module(src, "examples/transformer_block.sml").call("block", shapeml.bf16(args[0]), *args[1:])
        R.report("block bf16 x with f32 weights is refused", "-", False, "the call succeeded")
    except Exception as ex:  # noqa: BLE001
        msg = str(ex)
        R.report("block bf16 x with f32 weights is refused", "-", "INVALID_ARGUMENT" in msg and "`g1`" in msg and "f32" in msg, msg[:160])
    # The grouped-query variant: Hkv key/value heads, G = H / Hkv.
    for B, S, H, Hkv, Dh, Fd in [(2, 16, 4, 2, 8, 64), (1, 9, 6, 2, 16, 96), (2, 5, 4, 1, 8, 32)]:
        args = make_inputs(rng, B, S, H, Dh, Fd, Hkv)
        gate(f"block_gqa JIT B={B},S={S},H={H},Hkv={Hkv},Dh={Dh},F={Fd}",
             lambda a: R.module(src, "examples/transformer_block.sml").call("block_gqa", *a), args, H, Hkv)
    return R.finish("golden-transformer")


if __name__ == "__main__":
    sys.exit(main())
