#!/usr/bin/env python3
"""Tracing and logging from Python through the ctypes binding
(sdk-examples/python/shapeml.py): a log sink receives the runtime's records,
filtered by level, and a trace of a JIT compile and its calls parses with one
module ID in compile and run spans.

Usage: test_python_binding.py BUILD_DIR SOURCE_DIR
"""
import json
import os
import sys

import numpy as np

build, src = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(src, "sdk-examples", "python"))
import shapeml  # noqa: E402

lib = shapeml.Library(os.path.join(build, "libshapeml.so"))
records = []
lib.set_log_levels("off,runtime=info")
lib.set_log_sink(lambda *r: records.append(r))
lib.trace_start()
with open(os.path.join(src, "examples", "mlp.sml")) as f:
    m = lib.compile(f.read(), name="mlp.sml")
rng = np.random.default_rng(0)
B, S, D, F = 2, 4, 8, 16
args = [rng.standard_normal(s).astype(np.float32) for s in [(B, S, D), (D, F), (F,), (F, D), (D,)]]
y = m.call("mlp", *args)[0]
assert y.shape == (B, S, D), y.shape
try:
    m.call("mlp", args[0][:, :, :4], *args[1:])
    raise SystemExit("a bad input must fail")
except shapeml.Error as e:
    assert "[m-" in str(e) and "entry `mlp`" in str(e), str(e)
lib.trace_stop()
doc = json.loads(lib.trace_json())
lib.set_log_sink(None)
lib.set_log_levels("warn")

spans = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
names = {e["name"] for e in spans}
for n in ("check_source", "parse", "jit compile", "call mlp", "run compiled code"):
    assert n in names, f"{n} missing from {sorted(names)[:20]}"
ids = {e["args"]["module"] for e in spans if "module" in e["args"]}
assert len(ids) == 1, ids
mid = ids.pop()
levels = {(r[0], r[1], r[2]) for r in records}
assert ("info", "runtime", "module created") in levels, records
assert ("warn", "runtime", "call failed") in levels, records
assert all(r[1] == "runtime" for r in records), records  # everything else is off
failed = [r for r in records if r[2] == "call failed"][0]
assert failed[3]["entry"] == "mlp" and failed[4] == mid and failed[5] == "mlp", failed
print(f"ok: {len(spans)} spans, {len(records)} log records, module {mid}")
