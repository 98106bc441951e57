#!/usr/bin/env python3
"""Observability on the GPU (issue 11; run on the H200 by scripts/gpu-device-run.sh):
the MLP module of Milestone 2 called through libshapeml_runtime.so with
tracing and GPU timing on, once with CUDA graph replay off (one `gpu op`
span and one `gpu time` span per launch, the NVTX ranges' names) and once
as the plan says (graph replay: one span for the replay). Checks the spans'
structure and the module ID, writes the trace for ui.perfetto.dev, and
checks that a failing device call names its module and entry.

  obs_gpu.py --runtime libshapeml_runtime.so --module mlp_gpu.so --trace OUT.json
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sdk-examples", "python"))
import shapeml  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--runtime", required=True)
ap.add_argument("--module", required=True)
ap.add_argument("--trace", required=True)
a = ap.parse_args()

B, S, D, F = 4, 128, 256, 1024
lib = shapeml.Library(a.runtime)
dev = shapeml.Device(lib, 0)
m = lib.load(a.module)
rng = np.random.default_rng(0)
host = [rng.standard_normal(s).astype(np.float32) * 0.1 for s in [(B, S, D), (D, F), (F,), (F, D), (D,)]]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


lib.trace_start(gpu_timing=True)
ins = [dev.upload(x) for x in host]
y = dev.upload(np.zeros((B, S, D), np.float32))
m.call_into("mlp", ins, [y], graph=2)  # direct: per-launch spans and GPU times
dev.sync()
m.call_into("mlp", ins, [y], graph=0)  # as the plan says (graph replay)
dev.sync()
try:
    bad = dev.upload(np.zeros((B, S, D // 2), np.float32))
    m.call_into("mlp", [bad] + ins[1:], [y], graph=2)
    check(False, "a wrong input shape must fail")
except shapeml.Error as e:
    check("module `mlp` [m-" in str(e) and "entry `mlp`" in str(e), f"the error names module and entry: {e}")
lib.trace_stop()
text = lib.trace_json()
with open(a.trace, "w") as f:
    f.write(text)
doc = json.loads(text)
spans = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
calls = sorted([e for e in spans if e["name"] == "call mlp"], key=lambda e: e["ts"])
ops = [e for e in spans if e["cat"] == "gpu op"]
gpu = [e for e in spans if e["cat"] == "gpu time"]
copies = [e for e in spans if e["name"] == "copy host to device"]
check(len(calls) == 3, f"three calls traced: {len(calls)}")
check(len(copies) >= 7, f"every upload is a copy span: {len(copies)}")
mid = calls[0]["args"].get("module", "") if calls else ""
check(mid.startswith("m-"), f"the call carries the module ID: {mid}")


def inside(c, p):
    return c["tid"] == p["tid"] and p["ts"] <= c["ts"] and c["ts"] + c["dur"] <= p["ts"] + p["dur"] + 0.002


direct = [o for o in ops if calls and inside(o, calls[0])]
check(len(direct) >= 3, f"the direct call has one span per launch (matmul, ..., matmul): {[o['name'] for o in direct]}")
check(all(o["name"].startswith("launch ") and o["args"].get("module") == mid and o["args"].get("entry") == "mlp" for o in direct),
      "launch spans are named after the launch and carry the module and entry")
check(any("matmul" in o["name"] for o in direct), "a matmul launch is there")
check(len(gpu) == len(direct), f"one GPU time per launch of the direct call: {len(gpu)} vs {len(direct)}")
check(all(g["args"].get("gpu_ms", 0) > 0 and g["tid"] == 1000000 for g in gpu), "GPU times are positive, on the device's timeline")
# The second call captures (its launches are enqueued once, under capture:
# spans but no GPU times) or replays; either way only the direct call is timed.
check(not any(inside(g, calls[1]) for g in gpu if len(calls) > 1), "no GPU times inside the graph call")
total_gpu_ms = sum(g["args"]["gpu_ms"] for g in gpu)
print(f"{len(spans)} spans; direct call: {len(direct)} launches, GPU {total_gpu_ms:.3f} ms; module {mid}; trace in {a.trace}")
for g in sorted(gpu, key=lambda g: -g["args"]["gpu_ms"])[:5]:
    print(f"  {g['name']:<32} {g['args']['gpu_ms'] * 1e3:8.1f} us")
for t in ins + [y]:
    dev.free(t)
if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("ok")
