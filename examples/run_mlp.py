#!/usr/bin/env python3
"""Milestone 1, end to end through the C ABI: the 2-layer MLP of
examples/mlp.sml (B=4, S=128, D=256, F=1024, exact GELU) is
  1. JIT-compiled by libshapeml.so and called,
  2. built ahead of time into a shared object, loaded by
     libshapeml_runtime.so (no LLVM/MLIR/Z3) and called,
and both results are compared with PyTorch in float64. The same source is
then called with bf16 inputs (its dtype variable T bound to bf16).

Norm: relative Frobenius error ||y - y_ref||_2 / ||y_ref||_2 <= 1e-5, with
y_ref computed by PyTorch in float64 from the same float32 inputs; bf16:
within 2x PyTorch bf16's own error against float64 (from the same bf16
inputs).

Usage: run_mlp.py BUILD_DIR   (default build/default)
"""
import os
import sys
import tempfile
import time

# One thread on both sides. torch.set_num_threads(1) limits PyTorch's own
# (OpenMP) pool but not OpenBLAS's, which sizes its pool from the environment
# when it is loaded: so the thread variables are set before NumPy or PyTorch
# is imported, by re-executing this script with them when they are missing.
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
if any(os.environ.get(v) != "1" for v in THREAD_VARS) and "SHAPEML_RUN_MLP_PINNED" not in os.environ:
    env = dict(os.environ, SHAPEML_RUN_MLP_PINNED="1", **{v: "1" for v in THREAD_VARS})
    os.execve(sys.executable, [sys.executable, os.path.abspath(__file__)] + sys.argv[1:], env)

import ctypes  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
sys.path.insert(0, os.path.join(root, "sdk-examples", "python"))
import shapeml  # noqa: E402

B, S, D, F = 4, 128, 256, 1024
TOL = 1e-5


def reference(x, w1, b1, w2, b2, dtype):
    t = [torch.from_numpy(a).to(dtype) for a in (x, w1, b1, w2, b2)]
    h = torch.nn.functional.gelu(t[0] @ t[1] + t[2])  # exact (erf) GELU
    return (h @ t[3] + t[4]).float().numpy() if dtype == torch.bfloat16 else (h @ t[3] + t[4]).numpy()


def rel_err(y, ref):
    return float(np.linalg.norm((y.astype(np.float64) - ref).ravel()) / np.linalg.norm(ref.ravel()))


def blas_threads():
    """(threads, kernel) of every OpenBLAS loaded in this process, measured
    (openblas_get_num_threads / openblas_get_corename), not assumed."""
    found = []
    with open("/proc/self/maps") as f:
        paths = sorted({line.split()[-1] for line in f if "openblas" in line.lower() and line.split()[-1].startswith("/")})
    for p in paths:
        if "openblas" not in os.path.basename(p).lower():
            continue  # e.g. .../openblas-pthread/libblas.so.3, a front for libopenblas*.so
        try:
            lib = ctypes.CDLL(p, mode=os.RTLD_NOLOAD | os.RTLD_LOCAL)
        except OSError:
            continue
        for suffix in ("", "64_"):  # NumPy wheels bundle an ILP64 OpenBLAS with suffixed symbols
            try:
                nthreads, corename = getattr(lib, "openblas_get_num_threads" + suffix), getattr(lib, "openblas_get_corename" + suffix)
            except AttributeError:
                continue
            corename.restype = ctypes.c_char_p
            found.append((nthreads(), corename().decode()))
            break
    return found


def best_of(fn, n=20):
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build", "default"))
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((B, S, D), dtype=np.float32)
    w1 = (rng.standard_normal((D, F)) / np.sqrt(D)).astype(np.float32)
    b1 = (0.1 * rng.standard_normal(F)).astype(np.float32)
    w2 = (rng.standard_normal((F, D)) / np.sqrt(F)).astype(np.float32)
    b2 = (0.1 * rng.standard_normal(D)).astype(np.float32)
    args = (x, w1, b1, w2, b2)
    source = open(os.path.join(root, "examples", "mlp.sml")).read()
    ref64 = reference(*args, torch.float64)

    sdk = shapeml.Library(os.path.join(build, "libshapeml.so"))
    t0 = time.perf_counter()
    jit = sdk.compile(source, name="examples/mlp.sml")
    (y_jit,) = jit.call("mlp", *args)
    first_ms = (time.perf_counter() - t0) * 1e3
    jit_ms = best_of(lambda: jit.call("mlp", *args))

    with tempfile.TemporaryDirectory() as tmp:
        so = os.path.join(tmp, "libmlp.so")
        sdk.build(source, [f"mlp:T=f32,Dv=host,B={B},S={S},D={D},F={F}"], so, name="examples/mlp.sml")
        rt = shapeml.Library(os.path.join(build, "libshapeml_runtime.so"))
        aot = rt.load(so)
        (y_aot,) = aot.call("mlp", *args)
        aot_ms = best_of(lambda: aot.call("mlp", *args))

    # The same source in bf16 (spec §3.5: T from the inputs).
    bf_args = [np.asarray(torch.from_numpy(a).to(torch.bfloat16).to(torch.float32)) for a in args]
    (y_bf,) = jit.call("mlp", *[shapeml.bf16(a) for a in bf_args])
    ref_bf64 = reference(*bf_args, torch.float64)
    e_bf = rel_err(np.asarray(y_bf, np.float64), ref_bf64)
    e_torch_bf = rel_err(reference(*bf_args, torch.bfloat16), ref_bf64)

    tx = [torch.from_numpy(a) for a in args]
    torch_ms = best_of(lambda: torch.nn.functional.gelu(tx[0] @ tx[1] + tx[2]) @ tx[3] + tx[4])
    e_jit, e_aot = rel_err(y_jit, ref64), rel_err(y_aot, ref64)
    e_torch32 = rel_err(reference(*args, torch.float32), ref64)
    print(f"shapeml {sdk.version}: MLP B={B} S={S} D={D} F={F} (f32, exact GELU), one thread")
    print(f"  JIT via libshapeml.so:          rel. L2 error vs PyTorch f64 = {e_jit:.2e}   "
          f"check+compile+first call {first_ms:.0f} ms, then {jit_ms:.2f} ms per call")
    print(f"  AOT via libshapeml_runtime.so:  rel. L2 error vs PyTorch f64 = {e_aot:.2e}   {aot_ms:.2f} ms per call")
    blas = blas_threads()
    blas_txt = ", ".join(f"OpenBLAS {k}: {n} thread{'s' if n != 1 else ''}" for n, k in blas) or "no OpenBLAS loaded"
    threads = torch.get_num_threads()
    one = threads == 1 and all(n == 1 for n, _ in blas)
    print(f"  PyTorch {torch.__version__} CPU f32 ({threads} thread{'s' if threads != 1 else ''}; {blas_txt}):  "
          f"rel. L2 error = {e_torch32:.2e}   {torch_ms:.2f} ms per call")
    print(f"  time ratio shapeml AOT / PyTorch = {aot_ms / torch_ms:.2f} (calls through ctypes include copying inputs)"
          + ("" if one else "  NOTE: PyTorch used more than one thread, shapeml one"))
    print(f"  bf16 (the same source, T = bf16 from the inputs): rel. L2 error vs PyTorch f64 = {e_bf:.2e}   "
          f"(PyTorch bf16 {e_torch_bf:.2e}; bound 2x)")
    ok = e_jit <= TOL and e_aot <= TOL and e_bf <= 2 * e_torch_bf and np.isfinite(np.asarray(y_bf, np.float64)).all()
    print(f"mlp: {'PASS' if ok else 'FAIL'} (tolerance {TOL:g}; bf16 2x PyTorch bf16's)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
