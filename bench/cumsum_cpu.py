#!/usr/bin/env python3
"""cumsum on the CPU against PyTorch at the same thread count (the JIT's
default threads; torch.set_num_threads(os.cpu_count())): three layouts, the
innermost axis (the per-row scalar loop), the outermost (slice steps over
contiguous rows), a middle one. Median of 20 calls after one warm-up.

  /usr/bin/python3 bench/cumsum_cpu.py [--build build/default]
"""
import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "sdk-examples", "python"))
os.environ.pop("OPENBLAS_CORETYPE", None)
import numpy as np  # noqa: E402
import torch  # noqa: E402

import shapeml  # noqa: E402


def median_ms(f, n=20):
    f()
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "default"))
    a = ap.parse_args()
    torch.set_num_threads(os.cpu_count())
    lib = shapeml.Library(os.path.join(a.build, "libshapeml.so"))
    for shp, ax in (((64, 4096), 1), ((4096, 64), 0), ((8, 128, 512), 1)):
        dims = " ".join("ABC"[:len(shp)])
        src = (f"(module m (func f (dims {dims}) (params (x (tensor f32 ({dims}) host))) (returns (tensor f32 ({dims}) host))"
               f" (return (cumsum x :axis {ax}))))")
        m = lib.compile(src, "cumsum.sml")
        x = np.random.default_rng(0).standard_normal(shp).astype(np.float32)
        tx = torch.from_numpy(x)
        s = median_ms(lambda: m.call("f", x))
        t = median_ms(lambda: torch.cumsum(tx, ax))
        print(f"f32 {str(shp):14s} axis {ax}: shapeml {s:6.3f} ms  PyTorch {t:6.3f} ms  shapeml/PyTorch {s / t:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
