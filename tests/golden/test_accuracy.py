#!/usr/bin/env python3
"""Accuracy of long f32 sums (issue 23 item 3): reduce_sum and reduce_mean
over 2^16 ... 2^24 values, whole tensors and one axis of a matrix, and
matmuls with a long inner dimension (2^12 ... 2^20, and one that is not a
multiple of the 256-wide blocks), uniform
(every term the same sign: the worst case for a sequential sum) and normal
inputs, against float64, with PyTorch CPU's own f32 error as the bar: the
error must be within 2x PyTorch's plus half an f32 ulp (both results are
then correctly rounded up to the last bit, and which one is closer is luck).

Usage: /usr/bin/python3 tests/golden/test_accuracy.py BUILD_DIR
Last line: `accuracy: N passed, M failed`; exit status 1 on any failure.
"""
import os
import sys

import numpy as np
import torch

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import shapeml  # noqa: E402

HALF_ULP = 2.0 ** -24

SRC = """
(module acc
  (func total (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 () host))
    (return (reduce_sum x :axes (0))))
  (func average (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 () host))
    (return (reduce_mean x :axes (0))))
  (func row_sums (dims R C) (params (x (tensor f32 (R C) host))) (returns (tensor f32 (R) host))
    (return (reduce_sum x :axes (1))))
  (func column_sums (dims R C) (params (x (tensor f32 (R C) host))) (returns (tensor f32 (C) host))
    (return (reduce_sum x :axes (0))))
  (func mm (dims M K N) (params (a (tensor f32 (M K) host)) (b (tensor f32 (K N) host))) (returns (tensor f32 (M N) host))
    (return (matmul a b))))
"""


def rel(y, ref):
    y, ref = np.asarray(y, np.float64), np.asarray(ref, np.float64)
    return float(np.max(np.abs(y - ref) / np.maximum(np.abs(ref), 1e-300)))


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "build", "default")
    lib = shapeml.Library(os.path.join(build, "libshapeml.so"))
    mod = lib.compile(SRC, "accuracy.sml")
    torch.set_num_threads(1)
    rng = np.random.default_rng(7)
    passed = failed = 0

    def check(name, y, ref64, ref_torch):
        nonlocal passed, failed
        e, et = rel(y, ref64), rel(ref_torch, ref64)
        ok = e <= 2 * et + HALF_ULP
        print(f"  {'PASS' if ok else 'FAIL'} {name}: rel_err {e:.3g} (PyTorch {et:.3g}, bar {2 * et + HALF_ULP:.3g})")
        passed, failed = passed + ok, failed + (not ok)

    for logn in (16, 20, 24):
        n = 1 << logn
        for kind in ("uniform", "normal"):
            x = (rng.random(n) if kind == "uniform" else rng.standard_normal(n) + 0.5).astype(np.float32)
            x64, xt = x.astype(np.float64), torch.from_numpy(x)
            (s,) = mod.call("total", x)
            check(f"reduce_sum 2^{logn} {kind}", s, x64.sum(), xt.sum().numpy())
            (m,) = mod.call("average", x)
            check(f"reduce_mean 2^{logn} {kind}", m, x64.mean(), xt.mean().numpy())
    # One axis of a matrix: 2^16-long rows (the reduced axis innermost) and
    # columns (the reduced axis outermost: the loop over columns vectorizes).
    for rows, cols, fn, axis in ((8, 1 << 16, "row_sums", 1), (1 << 16, 8, "column_sums", 0)):
        x = rng.random((rows, cols)).astype(np.float32)
        (y,) = mod.call(fn, x)
        check(f"{fn} {rows}x{cols}", y, x.astype(np.float64).sum(axis=axis), torch.from_numpy(x).sum(dim=axis).numpy())
    # (the last: an output over 2^16 elements, summed in 512-wide blocks)
    for m, k, n in ((64, 1 << 12, 64), (16, 5000, 24), (4, 1 << 16, 4), (4, 1 << 20, 4), (512, 8192, 300)):
        a, b = rng.random((m, k)).astype(np.float32), rng.random((k, n)).astype(np.float32)
        (y,) = mod.call("mm", a, b)
        check(f"matmul {m}x{k}x{n}", y, a.astype(np.float64) @ b.astype(np.float64), (torch.from_numpy(a) @ torch.from_numpy(b)).numpy())
    print(f"accuracy: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
