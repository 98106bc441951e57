#!/usr/bin/env python3
"""One direct call of the transformer block (bench/transformer_gpu.py's
modules and inputs) between cudaProfilerStart/Stop, for Nsight Compute:

  ncu --profile-from-start off --clock-control none --csv --metrics gpu__time_duration.sum \\
      python3 bench/profile_block_gpu.py --runtime LIB --dir DIR --mode bf16 --size small

Two warm-up calls first (plan creation, cuBLASLt algorithm choice), then the
profiled call: every kernel of the plan once, with its duration.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "sdk-examples", "python"))

import numpy as np  # noqa: E402

import transformer_gpu as tg  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runtime", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--mode", default="bf16", choices=["fp32", "tf32", "bf16", "fp32_nopat", "bf16_noattn", "bf16_nogroup", "bf16_owna", "fp32_noattn"])
    ap.add_argument("--size", default="small", choices=list(tg.SIZES))
    a = ap.parse_args()
    import torch
    import shapeml
    lib = shapeml.Library(a.runtime)
    dev = shapeml.Device(lib, 0)
    mod = lib.load(os.path.join(a.dir, f"transformer_{a.mode}.so"))
    s = tg.SIZES[a.size]
    host = tg.make_inputs(s)
    wrap = shapeml.bf16 if a.mode.startswith("bf16") else (lambda t: t)
    ins = [dev.upload(wrap(t)) for t in host]
    out = dev.upload(wrap(np.zeros((s["B"], s["S"], s["D"]), np.float32)))
    for _ in range(2):
        mod.call_into("block", ins, [out], graph=2)  # direct: each launch its own kernel
    dev.sync()
    torch.cuda.init()
    torch.cuda.cudart().cudaProfilerStart()
    mod.call_into("block", ins, [out], graph=2)
    dev.sync()
    torch.cuda.cudart().cudaProfilerStop()
    print(f"profiled one direct call: {a.size} {a.mode}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
