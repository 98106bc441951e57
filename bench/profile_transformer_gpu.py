#!/usr/bin/env python3
"""Per-kernel GPU times of one transformer-block call (for Nsight Compute):

  ncu --metrics gpu__time_duration.sum --csv python3 bench/profile_transformer_gpu.py \
      --runtime DIR/libshapeml_runtime.so --dir DIR [--size large] [--mode fp32]

Runs the block once to create and warm the plan, then once more (graph replay
off, so every launch is a separate kernel that the profiler sees); the
second call's kernels are the profile. Inputs as bench/transformer_gpu.py.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sdk-examples", "python"))
import shapeml  # noqa: E402
from transformer_gpu import SIZES, make_inputs  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--runtime", required=True)
ap.add_argument("--dir", required=True)
ap.add_argument("--size", default="large")
ap.add_argument("--mode", default="fp32")
a = ap.parse_args()
s = SIZES[a.size]
lib = shapeml.Library(a.runtime)
dev = shapeml.Device(lib, 0)
mod = lib.load(os.path.join(a.dir, f"transformer_{a.mode}.so"))
ins = [dev.upload(t) for t in make_inputs(s)]
out = dev.upload(np.zeros((s["B"], s["S"], s["D"]), np.float32))
for _ in range(2):
    mod.call_into("block", ins, [out], graph=2)
dev.sync()
print("profiled", a.size, a.mode)
