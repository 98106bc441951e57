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

MULTIPLIER, ATOL = 2.0, 1e-7
EPS = 1e-5  # RMSNorm epsilon, as in the .sml
SIZES = [  # (B, S, H, Dh, F); D = H * Dh
    (2, 16, 4, 8, 64),
    (1, 7, 2, 16, 96),   # odd sequence length, F not a multiple of D
    (3, 33, 4, 16, 128),  # S = 33 does not divide any tile
]


def reference(x, scale, g1, wq, wk, wv, wo, g2, w_gate, w_up, w_down, H):
    """The block, from its description: h = x + Attn(RMSNorm(x)); out = h + SwiGLU(RMSNorm(h))."""
    B, S, D = x.shape
    Dh = D // H

    def rmsnorm(t, g):
        return t / torch.sqrt(t.pow(2).mean(dim=-1, keepdim=True) + EPS) * g

    def heads(t):  # [B, S, D] -> [B, H, S, Dh]
        return t.view(B, S, H, Dh).transpose(1, 2)

    n1 = rmsnorm(x, g1)
    q, k, v = heads(n1 @ wq), heads(n1 @ wk), heads(n1 @ wv)
    p = torch.softmax(torch.einsum("bhsd,bhtd->bhst", q, k) * scale, dim=-1)
    ctx = (p @ v).transpose(1, 2).reshape(B, S, D)
    h = x + ctx @ wo
    n2 = rmsnorm(h, g2)
    return h + (F.silu(n2 @ w_gate) * (n2 @ w_up)) @ w_down


def make_inputs(rng, B, S, H, Dh, Fd):
    D = H * Dh

    def w(i, o):
        return (rng.standard_normal((i, o)) / math.sqrt(i)).astype(np.float32)

    x = rng.standard_normal((B, S, D)).astype(np.float32)
    scale = np.full((H, 1, 1), 1.0 / math.sqrt(Dh), np.float32)  # per-head score scale
    g1 = (1.0 + 0.1 * rng.standard_normal(D)).astype(np.float32)
    g2 = (1.0 + 0.1 * rng.standard_normal(D)).astype(np.float32)
    return [x, scale, g1, w(D, D), w(D, D), w(D, D), w(D, D), g2, w(D, Fd), w(D, Fd), w(Fd, D)]


def rmse(a, b):
    return float(np.sqrt(np.mean((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2)))


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "default")
    R = Runner(build, "golden transformer")
    rng = np.random.default_rng(7)
    src = open(os.path.join(ROOT, "examples", "transformer_block.sml")).read()
    print(f"# gate: RMSE(shapeml f32, ref f64) <= {MULTIPLIER:g} * RMSE(torch f32, ref f64) + {ATOL:g}")

    def gate(name, call, args, H):
        try:
            (y,) = call(args)
            t64 = [torch.from_numpy(np.asarray(a, np.float64)) for a in args]
            t32 = [torch.from_numpy(np.asarray(a)) for a in args]
            ref = reference(*t64, H).numpy()
            base = rmse(reference(*t32, H).numpy(), ref)
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

    # The example exactly as written, JIT and AOT. H comes from the shape of
    # `scale`, Dh from the where-equality D = H*Dh.
    for (B, S, H, Dh, Fd), args in cases:
        tag = f"B={B},S={S},H={H},Dh={Dh},D={H * Dh},F={Fd}"
        gate(f"block JIT {tag}", lambda a: R.module(src, "examples/transformer_block.sml").call("block", *a), args, H)
        with tempfile.TemporaryDirectory() as tmp:
            so = os.path.join(tmp, "block.so")

            def aot(a, so=so, B=B, S=S, H=H, Dh=Dh, Fd=Fd):
                R.sdk.build(src, [f"block:B={B},S={S},D={H * Dh},H={H},Dh={Dh},F={Fd}"], so, name="transformer_block.sml")
                return R.runtime.load(so).call("block", *a)
            gate(f"block AOT {tag}", aot, args, H)
    return R.finish("golden-transformer")


if __name__ == "__main__":
    sys.exit(main())
