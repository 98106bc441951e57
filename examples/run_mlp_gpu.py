#!/usr/bin/env python3
"""Milestone 2: the MLP of examples/mlp.sml (B=4, S=128, D=256, F=1024,
exact GELU) with inputs and weights resident on cuda(0), run through
libshapeml_runtime.so + the CUDA plugin from an ahead-of-time module, against
PyTorch on the same GPU in the same run.

  python3 examples/run_mlp_gpu.py --runtime DIR/libshapeml_runtime.so \
      --module DIR/mlp_gpu.so [--bf16-module DIR/mlp_gpu_bf16.so] [--json OUT.json] [--iters 2000] [--no-compile]

Accuracy: relative Frobenius error against PyTorch float64 on the GPU (gate
1e-5, TF32 off on both sides). --bf16-module: the same source built with
T = bf16, called with the inputs rounded to bf16, within 2x PyTorch bf16's
own error against float64. Speed: the mean time of one call in a loop of
`iters` calls, synchronized at the ends (host-bound for a problem this small,
so it is end-to-end time from Python for both), for shapeml, PyTorch eager
and torch.compile; plus shapeml's host time to enqueue one call. The ratios
are what counts; absolute times depend on the machine.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sdk-examples", "python"))
import shapeml  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runtime", required=True)
    ap.add_argument("--module", required=True)
    ap.add_argument("--json")
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--bf16-module", help="examples/mlp.sml built for (cuda 0) with T = bf16")
    a = ap.parse_args()

    import torch
    import torch.nn.functional as F
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    B, S, D, Fh = 4, 128, 256, 1024
    rng = np.random.default_rng(0)
    x = rng.standard_normal((B, S, D)).astype(np.float32)
    w1 = (rng.standard_normal((D, Fh)) / np.sqrt(D)).astype(np.float32)
    b1 = (0.1 * rng.standard_normal(Fh)).astype(np.float32)
    w2 = (rng.standard_normal((Fh, D)) / np.sqrt(Fh)).astype(np.float32)
    b2 = (0.1 * rng.standard_normal(D)).astype(np.float32)

    lib = shapeml.Library(a.runtime)
    dev = shapeml.Device(lib, 0)
    mod = lib.load(a.module)
    ins = [dev.upload(t) for t in (x, w1, b1, w2, b2)]
    (y_t,) = mod.call_tensors("mlp", *ins)
    y = dev.download(y_t)
    dev.free(y_t)
    # Destination passing: the same call writing into a tensor the caller
    # allocated on the device (shapeml_entry_call with options.outputs).
    dst = dev.upload(np.full((B, S, D), np.nan, dtype=np.float32))
    mod.call_into("mlp", ins, [dst])
    y_into = dev.download(dst)
    dev.free(dst)
    into_same = bool(np.array_equal(y_into, y))

    def mlp(x, w1, b1, w2, b2):
        return torch.matmul(F.gelu(torch.matmul(x, w1) + b1), w2) + b2

    cuda = torch.device("cuda:0")
    t32 = [torch.from_numpy(t).to(cuda) for t in (x, w1, b1, w2, b2)]
    t64 = [t.double() for t in t32]
    ref64 = mlp(*t64).cpu().numpy()
    ref32 = mlp(*t32).cpu().numpy()
    norm = np.linalg.norm(ref64)
    err = float(np.linalg.norm(y.astype(np.float64) - ref64) / norm)
    err_torch = float(np.linalg.norm(ref32.astype(np.float64) - ref64) / norm)

    def time_loop(fn, sync, iters):
        for _ in range(20):
            fn()
        sync()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        return (time.perf_counter() - t0) / iters

    def shapeml_call():
        (o,) = mod.call_tensors("mlp", *ins)
        dev.free(o)

    ms_shapeml = time_loop(shapeml_call, dev.sync, a.iters) * 1e3
    # Host time to enqueue one call (the GPU is left to catch up).
    dev.sync()
    host = []
    for _ in range(200):
        t0 = time.perf_counter()
        shapeml_call()
        host.append(time.perf_counter() - t0)
    dev.sync()
    host_us = float(np.median(host) * 1e6)
    ms_eager = time_loop(lambda: mlp(*t32), torch.cuda.synchronize, a.iters) * 1e3

    # The idiomatic PyTorch spelling: F.linear fuses each bias into the GEMM
    # (addmm), 3 kernels like shapeml's plan; the weights are passed as
    # transposed views (no copies).
    def mlp_linear(x, w1, b1, w2, b2):
        return F.linear(F.gelu(F.linear(x, w1.t(), b1)), w2.t(), b2)

    lin = mlp_linear(*t32).cpu().numpy()
    err_linear = float(np.linalg.norm(lin.astype(np.float64) - ref64) / norm)
    ms_linear = time_loop(lambda: mlp_linear(*t32), torch.cuda.synchronize, a.iters) * 1e3
    ms_compile = None
    if not a.no_compile:
        try:
            cmlp = torch.compile(mlp)
            cmlp(*t32)
            ms_compile = time_loop(lambda: cmlp(*t32), torch.cuda.synchronize, a.iters) * 1e3
        except Exception as e:  # report, do not fail the accuracy result
            print(f"torch.compile failed: {e}", file=sys.stderr)
    for t in ins:
        dev.free(t)
    bf16 = None
    if a.bf16_module:  # the same source in bf16 (spec §3.5)
        tb = [t.to(torch.bfloat16) for t in t32]
        mb = lib.load(a.bf16_module)
        ins_b = [dev.upload(shapeml.bf16(t.float().cpu().numpy())) for t in tb]
        (yb_t,) = mb.call_tensors("mlp", *ins_b)
        yb = np.asarray(dev.download(yb_t), np.float64)
        for t in (*ins_b, yb_t):
            dev.free(t)
        refb64 = mlp(*[t.double() for t in tb]).cpu().numpy()
        nb = np.linalg.norm(refb64)
        eb = float(np.linalg.norm(yb - refb64) / nb)
        eb_torch = float(np.linalg.norm(mlp(*tb).double().cpu().numpy() - refb64) / nb)
        bf16 = {"rel_err_vs_fp64": eb, "torch_bf16_rel_err_vs_fp64": eb_torch, "passed": bool(np.isfinite(yb).all() and eb <= 2 * eb_torch)}
        print(f"  bf16 (the same source, T = bf16): rel. error vs float64 {eb:.2e}, PyTorch bf16 {eb_torch:.2e} (bound 2x): "
              f"{'PASS' if bf16['passed'] else 'FAIL'}")

    res = {
        "device": torch.cuda.get_device_name(0),
        "shape": {"B": B, "S": S, "D": D, "F": Fh},
        "rel_err_vs_fp64": err,
        "torch_fp32_rel_err_vs_fp64": err_torch,
        "gate": 1e-5,
        "passed": err <= 1e-5 and into_same and (bf16 is None or bf16["passed"]),
        "bf16": bf16,
        "caller_output_equals_new_output": into_same,
        "ms_per_call": {"shapeml": ms_shapeml, "torch_eager": ms_eager, "torch_eager_linear": ms_linear, "torch_compile": ms_compile},
        "ratio_shapeml_over_eager": ms_shapeml / ms_eager,
        "ratio_shapeml_over_eager_linear": ms_shapeml / ms_linear,
        "torch_linear_rel_err_vs_fp64": err_linear,
        "ratio_shapeml_over_compile": (ms_shapeml / ms_compile) if ms_compile else None,
        "shapeml_host_us_per_call": host_us,
        "launches_per_call": 3,
        "iters": a.iters,
    }
    print(f"MLP on {res['device']} (B={B} S={S} D={D} F={Fh}, exact GELU, TF32 off)")
    print(f"  relative error vs PyTorch float64: shapeml {err:.2e}, PyTorch fp32 {err_torch:.2e} (gate 1e-5): "
          f"{'PASS' if res['passed'] else 'FAIL'}")
    print(f"  into a caller-provided device tensor: {'same result' if into_same else 'DIFFERENT RESULT'}")
    print(f"  per call: shapeml {ms_shapeml:.4f} ms, PyTorch eager {ms_eager:.4f} ms (matmul + add), {ms_linear:.4f} ms (F.linear)"
          + (f", torch.compile {ms_compile:.4f} ms" if ms_compile else ""))
    print(f"  ratio shapeml / eager = {res['ratio_shapeml_over_eager']:.2f}, / eager F.linear = {res['ratio_shapeml_over_eager_linear']:.2f}"
          + (f", shapeml / compile = {res['ratio_shapeml_over_compile']:.2f}" if ms_compile else ""))
    print(f"  shapeml host time to enqueue one call: {host_us:.1f} us (3 launches, through Python ctypes)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)
    return 0 if res["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
