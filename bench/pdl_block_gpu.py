#!/usr/bin/env python3
"""Programmatic dependent launch (on by default; SHAPEML_CUDA_PDL=0 turns it
off, src/cuda/executor/dependent_launch.cuh) against ordinary launches, on the transformer block
(bench/transformer_gpu.py's modules and inputs), graph replay.

The variable is read once per process, so each measurement is its own
process: `--child MODE SIZE PDL` times one (mode, size) and prints one JSON
line (median ms of a CUDA-synchronized loop, the output's bytes' hash); the
parent runs ROUNDS interleaved rounds (PDL off, on, off, on, ...) of every
(mode, size), reports the median of each side and the ratio on/off, and
fails when the two sides' outputs differ in a single bit.

  python3 bench/pdl_block_gpu.py --runtime LIB --dir DIR [--rounds 5] [--json OUT]
"""
import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "sdk-examples", "python"))

import numpy as np  # noqa: E402

import transformer_gpu as tg  # noqa: E402

CASES = [(m, s) for s in ("small", "large") for m in ("fp32", "tf32", "bf16")]


def child(a):
    import shapeml
    mode, size = a.child
    lib = shapeml.Library(a.runtime)
    dev = shapeml.Device(lib, 0)
    mod = lib.load(os.path.join(a.dir, f"transformer_{mode}.so"))
    s = tg.SIZES[size]
    wrap = shapeml.bf16 if mode == "bf16" else (lambda t: t)
    ins = [dev.upload(wrap(t)) for t in tg.make_inputs(s)]
    out = dev.upload(wrap(np.zeros((s["B"], s["S"], s["D"]), np.float32)))
    iters = 20 if size == "large" else 200
    for _ in range(5):
        mod.call_into("block", ins, [out], graph=1)
    dev.sync()
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(iters):
            mod.call_into("block", ins, [out], graph=1)
        dev.sync()
        times.append((time.perf_counter() - t0) * 1e3 / iters)
    y = np.asarray(dev.download(out))
    print(json.dumps(dict(ms=min(times), hash=hashlib.sha256(y.tobytes()).hexdigest())))
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runtime", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--child", nargs=2)
    a = ap.parse_args()
    if a.child:
        return child(a)
    res, ok = {}, True
    for mode, size in CASES:
        ms = {"off": [], "on": []}
        hashes = set()
        for _ in range(a.rounds):
            for side in ("off", "on"):
                env = dict(os.environ, SHAPEML_CUDA_PDL="1" if side == "on" else "0")
                p = subprocess.run([sys.executable, __file__, "--runtime", a.runtime, "--dir", a.dir, "--child", mode, size], env=env,
                                   capture_output=True, text=True, check=True)
                r = json.loads(p.stdout.strip().splitlines()[-1])
                ms[side].append(r["ms"])
                hashes.add(r["hash"])
        off, on = statistics.median(ms["off"]), statistics.median(ms["on"])
        same = len(hashes) == 1
        ok &= same
        res[f"{size}_{mode}"] = dict(off_ms=off, on_ms=on, ratio=on / off, same_bits=same, rounds=ms)
        print(f"  {size}_{mode}: PDL off {off:.4f} ms, on {on:.4f} ms, on/off {on / off:.3f}, {'same bits' if same else 'BITS DIFFER'}",
              flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)
    print(f"pdl_block_gpu: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
