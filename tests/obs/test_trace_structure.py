#!/usr/bin/env python3
"""`shapemlc run` with SHAPEML_TRACE writes a Chrome trace-event JSON in which
the compile and the run of the MLP are visible under one module ID
(docs/design/observability.md). Parses the trace and checks its structure:
the event format, the phases that must be there, their nesting (by time on
one thread) and the module ID shared by compile and run spans.

Usage: test_trace_structure.py BUILD_DIR SOURCE_DIR
"""
import json
import os
import re
import subprocess
import sys
import tempfile

build, src = sys.argv[1], sys.argv[2]
shapemlc = os.path.join(build, "shapemlc")
mlp = os.path.join(src, "examples", "mlp.sml")

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


with tempfile.TemporaryDirectory() as tmp:
    trace_path = os.path.join(tmp, "trace.json")
    env = dict(os.environ, SHAPEML_TRACE=trace_path)
    env.pop("SHAPEML_LOG", None)
    args = [shapemlc, "run", mlp, "--bind", "T=f32,B=2,S=4,D=8,F=16"] + [a for i, p in enumerate(["x", "w1", "b1", "w2", "b2"]) for a in ("--random", f"{p}={i + 1}")]
    r = subprocess.run(args, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        sys.exit(f"shapemlc run failed with {r.returncode}")
    check(r.stderr == "", f"nothing on stderr without SHAPEML_LOG (got {r.stderr!r})")
    with open(trace_path) as f:
        doc = json.load(f)  # must be valid JSON

    # The same run with SHAPEML_LOG: records on stderr, filtered by component.
    env_log = dict(os.environ, SHAPEML_LOG="off,runtime=info")
    env_log.pop("SHAPEML_TRACE", None)
    r2 = subprocess.run(args, env=env_log, capture_output=True, text=True)
    check(r2.returncode == 0, "run with SHAPEML_LOG succeeds")
    lines = [l for l in r2.stderr.splitlines() if l.strip()]
    check(any("[info] runtime: module created" in l and "module=m-" in l for l in lines), f"SHAPEML_LOG=runtime=info prints the module record: {lines}")
    check(all("] runtime:" in l for l in lines), f"only runtime records at off,runtime=info: {lines}")
    r4 = subprocess.run(args, env=dict(os.environ, SHAPEML_TRACE="/nonexistent-dir/trace.json"), capture_output=True, text=True)
    check(r4.returncode == 2 and "cannot write /nonexistent-dir/trace.json" in r4.stderr,
          f"an unwritable SHAPEML_TRACE is an error: {r4.returncode} {r4.stderr!r}")
    r3 = subprocess.run(args, env=dict(os.environ, SHAPEML_LOG="loud"), capture_output=True, text=True)
    check(r3.returncode == 2 and "unknown log level" in r3.stderr, f"a bad SHAPEML_LOG is a usage error: {r3.returncode} {r3.stderr!r}")

events = doc["traceEvents"]
check(isinstance(events, list) and events, "traceEvents is a non-empty list")
spans = [e for e in events if e.get("ph") == "X"]
for e in spans:
    for k in ("name", "cat", "ts", "dur", "pid", "tid", "args"):
        if k not in e:
            check(False, f"event {e} has no `{k}`")
            break
    else:
        check(e["dur"] >= 0 and e["ts"] >= 0, f"event {e['name']} has non-negative ts/dur")
check(doc.get("otherData", {}).get("dropped_events") == 0, "no events dropped")

by_name = {}
for e in spans:
    by_name.setdefault(e["name"], []).append(e)

required = ["shapemlc", "check_source", "parse", "elaborate", "verify", "jit module", "module create", "call mlp", "specialize",
            "jit compile", "emit mlir", "mlir to llvm", "tensor passes", "bufferization", "conversion to the LLVM dialect",
            "translate to llvm ir", "llvm optimize", "jit machine code", "run compiled code", "alloc", "free"]
for n in required:
    check(n in by_name, f"span `{n}` is in the trace")
check(any(e["cat"] == "mlir pass" for e in spans), "one span per MLIR pass (category `mlir pass`)")
check(any(e["cat"] == "mlir pass" and e["name"] == "one-shot-bufferize" for e in spans), "the one-shot-bufferize pass has a span")
check(len(by_name.get("call mlp", [])) == 2, "two calls of mlp (shapemlc run calls twice)")


def inside(child, parent):
    return child["tid"] == parent["tid"] and parent["ts"] <= child["ts"] and child["ts"] + child["dur"] <= parent["ts"] + parent["dur"] + 0.002


def nested(child_name, parent_name, every=True):
    cs, ps = by_name.get(child_name, []), by_name.get(parent_name, [])
    if not cs or not ps:
        return False
    ok = [any(inside(c, p) for p in ps) for c in cs]
    return all(ok) if every else any(ok)


for child, parent in [("parse", "check_source"), ("elaborate", "check_source"), ("verify", "check_source"), ("check_source", "shapemlc"),
                      ("jit compile", "call mlp"), ("specialize", "call mlp"), ("emit mlir", "jit compile"), ("mlir to llvm", "jit compile"),
                      ("bufferization", "mlir to llvm"), ("run compiled code", "call mlp"),
                      ("call mlp", "shapemlc")]:
    check(nested(child, parent), f"every `{child}` lies inside a `{parent}` on its thread")
check(nested("one-shot-bufferize", "bufferization"), "the bufferize pass lies inside the bufferization stage")
# LLVM optimizes and emits a module whole inside `jit compile`, or in
# partitions, each inside a `jit partition` on a thread of its own, all within
# the compile's `jit parallel compile` (docs/design/cpu-codegen.md).
for child in ("llvm optimize", "jit machine code"):
    check(all(any(inside(c, p) for p in by_name.get("jit compile", []) + by_name.get("jit partition", [])) for c in by_name.get(child, [])),
          f"every `{child}` lies inside a `jit compile` or a `jit partition` on its thread")


def within(child, parent):
    return parent["ts"] <= child["ts"] and child["ts"] + child["dur"] <= parent["ts"] + parent["dur"] + 0.002


check(all(any(within(c, p) for p in by_name.get("jit parallel compile", [])) for c in by_name.get("jit partition", [])),
      "every `jit partition` runs within a `jit parallel compile`")
check(nested("alloc", "call mlp", every=False), "an output allocation lies inside a call")
llvm_passes = [e for e in spans if e["cat"] == "llvm pass"]
check(llvm_passes and all(any(inside(p, o) for o in by_name["llvm optimize"]) for p in llvm_passes),
      "LLVM passes have spans, inside `llvm optimize`")
check(any(e["name"] == "InstCombinePass" for e in llvm_passes), "InstCombinePass has a span")
# Only the first call compiles.
first, second = sorted(by_name["call mlp"], key=lambda e: e["ts"])
check(any(inside(j, first) for j in by_name["jit compile"]) and not any(inside(j, second) for j in by_name["jit compile"]),
      "the first call compiles, the second does not")

# One module ID across the compile and the run.
ids = {e["args"]["module"] for e in spans if "module" in e["args"]}
check(len(ids) == 1, f"one module ID in the whole trace, got {ids}")
mid = next(iter(ids)) if ids else ""
check(mid.startswith("m-") and len(mid) == 18, f"the module ID looks like m-<16 hex>: {mid}")
for n in ["check_source", "parse", "elaborate", "jit compile", "emit mlir", "call mlp", "run compiled code", "module create"]:
    check(all(e["args"].get("module") == mid for e in by_name.get(n, [])), f"every `{n}` span carries the module ID")
check(all(e["args"].get("entry") == "mlp" for e in by_name.get("call mlp", [])), "call spans name the entry")
check(all(e["args"].get("module_name") == "mlp" for e in by_name.get("call mlp", [])), "call spans name the module")

# Every Z3 query is a span with its outcome, inside elaborate or verify.
with tempfile.TemporaryDirectory() as tmp:
    trace_path = os.path.join(tmp, "check.json")
    prog = os.path.join(src, "tests", "lit", "ok", "concat-slice.sml")
    r = subprocess.run([shapemlc, "check", "--stats", prog], env=dict(os.environ, SHAPEML_TRACE=trace_path), capture_output=True, text=True)
    check(r.returncode == 0, f"shapemlc check {prog}: {r.stderr}")
    m = re.search(r"(\d+) Z3 queries", r.stdout)
    with open(trace_path) as f:
        check_spans = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
z3 = [e for e in check_spans if e["name"] == "z3 query"]
check(m and int(m.group(1)) > 0, f"the program needs Z3: {r.stdout}")
check(m and len(z3) >= int(m.group(1)), f"one span per Z3 query: {len(z3)} spans, --stats says {m.group(1) if m else '?'} (plus the verifier's)")
check(all(e["cat"] == "smt" and e["args"].get("answer") in ("sat", "unsat", "unknown") for e in z3), "each Z3 span has its answer")
containers = [e for e in check_spans if e["name"] in ("elaborate", "verify")]
check(all(any(inside(q, c) for c in containers) for q in z3), "each Z3 query lies inside elaborate or verify")
check(len({e["args"].get("module") for e in check_spans if e["name"] != "shapemlc"}) == 1, "the check's spans share one module ID")

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print(f"ok: {len(spans)} spans, module {mid}")
