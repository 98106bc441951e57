#!/usr/bin/env python3
"""Differential test: generated well-shaped programs (tests/generated) run on
the CPU back end here and, placed on `(cuda 0)`, on the GPU there; the
results must agree. (BRIEF: "checker accepts => no run-time shape fault;
CPU = GPU".)

  # here: generate, run each program's `main` on the CPU (JIT) at a binding
  # sampled from its constraints, build the GPU version ahead of time
  /usr/bin/python3 tests/gpu/generated_gpu.py build --shapemlc build/default/shapemlc \
      --sdk build/default/libshapeml.so --out DIR [--count 40] [--seed 7]
  # on the GPU machine
  python3 tests/gpu/generated_gpu.py run --runtime DIR/../lib/libshapeml_runtime.so --dir DIR [--json OUT]

A program is skipped (and counted, with the reason) when it moves data
between devices itself (copy_to_device/copy_to_host), uses bf16 at its
boundary (the binding has no NumPy bf16), the GPU planner refuses it (a
host constant inside the device function), or it is ill-conditioned: its
CPU result moves beyond the agreement tolerance when every floating input is
scaled by 1 + 2^-20 (e.g. cos of a pow with a large exponent). The two back
ends round differently by design (summation orders, libm), so such a
program's results cannot be compared; it says nothing about either. Agreement: integers and bools
exactly; floats with the same NaN and infinity positions and
|gpu - cpu| <= tol * max(1, max |cpu|) with tol 1e-3 (f32: transcendental
functions and summation orders differ by design, docs/design/gpu-kernels.md)
or 1e-9 (f64). Each program is also built with elementwise fusion off
(`NAME.unfused.so`; the default fuses, with kernels generated into the module:
lower/gpu/generate_kernels.h), whose outputs must be the default plan's bit
for bit. The last line is `generated-gpu: N agree, M disagree, K skipped`;
the exit status is 1 when any disagree.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "sdk-examples", "python"))
sys.dont_write_bytecode = True

NP = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "bool": np.bool_}


def inputs_for(func, env, rng, G):
    arrs = []
    for _, tt in func.params:
        shape = tuple(G.deval(d, env) for d in tt.dims)
        if tt.dtype in ("f32", "f64"):
            arrs.append(rng.uniform(-2, 2, shape).astype(NP[tt.dtype]))
        elif tt.dtype in ("i32", "i64"):
            arrs.append(rng.integers(-5, 6, shape).astype(NP[tt.dtype]))
        else:
            arrs.append(rng.integers(0, 2, shape).astype(np.bool_))
    return arrs


def cmd_build(a):
    sys.path.insert(0, os.path.join(ROOT, "tests", "generated"))
    import gen_programs as G
    import shapeml
    os.makedirs(a.out, exist_ok=True)
    lib = shapeml.Library(a.sdk)
    rng = np.random.default_rng(a.seed)
    cases, skipped = [], {}
    i = 0
    while len(cases) < a.count and i < a.count * 6:
        index = i
        i += 1
        try:
            prog, _worlds, models = G.generate_program(a.seed, index, min_lets=6, max_lets=30)
        except RuntimeError as e:
            skipped["generator: %s" % str(e)[:40]] = skipped.get("generator: %s" % str(e)[:40], 0) + 1
            continue
        src = G.print_program(prog)[0]
        main = prog.funcs[-1]
        types = [tt for _, tt in main.params] + list(main.returns)
        if "copy_to_" in src or "(cuda" in src:
            skipped["moves data between devices itself"] = skipped.get("moves data between devices itself", 0) + 1
            continue
        if any(tt.dtype == "bf16" for tt in types):
            skipped["bf16 at the boundary"] = skipped.get("bf16 at the boundary", 0) + 1
            continue
        # One source for both devices: the program generic in its device (spec §3.5), run
        # here with host inputs (Dv = host) and built for the GPU with Dv = cuda0.
        src = G.print_program(prog, device_var="Dv")[0]
        env = models[-1][0]
        ins = inputs_for(main, env, rng, G)
        if not lib.check(src, "gen_%d.sml" % index).passed:
            key = "the device-generic version does not type-check (a host constant next to a device-variable tensor)"
            skipped[key] = skipped.get(key, 0) + 1
            continue
        try:
            cpu = lib.compile(src, "gen_%d.sml" % index).call(main.name, *ins)
        except shapeml.Error as e:
            key = "CPU: %s" % e.name
            skipped[key] = skipped.get(key, 0) + 1
            continue
        nudged = [x * x.dtype.type(1 + 2.0 ** -20) if x.dtype.kind == "f" else x for x in ins]
        cpu2 = lib.compile(src, "gen_%d.sml" % index).call(main.name, *nudged)
        if not all(agree(np.asarray(c2), np.asarray(c))[0] for c2, c in zip(cpu2, cpu)):
            key = "ill-conditioned (a 2^-20 relative change of the inputs moves the CPU result beyond the tolerance)"
            skipped[key] = skipped.get(key, 0) + 1
            continue
        name = "gen_%d_%d" % (a.seed, index)
        sml = os.path.join(a.out, name + ".sml")
        with open(sml, "w") as f:
            f.write(src)
        bind = main.name + ":Dv=cuda0," + ",".join("%s=%d" % (k, v) for k, v in env.items())
        r = subprocess.run([a.shapemlc, "build", sml, "-o", os.path.join(a.out, name + ".so"), "--target", "x86-64", "--entry", main.name,
                            "--bind", bind], capture_output=True, text=True)
        if r.returncode != 0:
            # The generator spells constants without a device (host by
            # default), so some programs no longer type-check once their
            # tensors are on the GPU; others the planner refuses.
            reason = "GPU planner: " + (r.stderr.strip().splitlines()[-1][:80] if r.stderr.strip() else "rc %d" % r.returncode)
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        # The same program with elementwise fusion off (the default fuses, with kernels generated
        # into the module where NVRTC is installed): the GPU run requires the same bits from both.
        rf = subprocess.run([a.shapemlc, "build", sml, "-o", os.path.join(a.out, name + ".unfused.so"), "--target", "x86-64", "--entry",
                             main.name, "--bind", bind, "--gpu-fuse", "off"], capture_output=True, text=True)
        if rf.returncode != 0:
            print("FAIL %s: the unfused build failed where the default one did not: %s" % (name, rf.stderr.strip()[-300:]))
            return 1
        np.savez(os.path.join(a.out, name + ".npz"), *ins, *[np.asarray(c) for c in cpu])
        cases.append({"name": name, "entry": main.name, "inputs": len(ins), "outputs": len(cpu), "binding": bind})
    with open(os.path.join(a.out, "cases.json"), "w") as f:
        json.dump({"cases": cases, "skipped": skipped}, f, indent=1)
    print("generated-gpu build: %d programs with CPU results, skipped %s" % (len(cases), skipped))
    return 0


def agree(g, c):
    if g.shape != c.shape:
        return False, "shape %s vs %s" % (g.shape, c.shape)
    if c.dtype.kind in "biu":
        n = int(np.sum(g != c))
        return n == 0, "exact" if n == 0 else "%d element(s) differ" % n
    gf, cf = g.astype(np.float64), c.astype(np.float64)
    if not np.array_equal(np.isnan(gf), np.isnan(cf)):
        return False, "NaN positions differ"
    fin = np.isfinite(cf)
    if not np.array_equal(gf[~fin & ~np.isnan(cf)], cf[~fin & ~np.isnan(cf)]) or not np.array_equal(np.isfinite(gf), fin):
        return False, "infinities differ"
    tol = 1e-3 if c.dtype == np.float32 else 1e-9
    scale = max(1.0, float(np.max(np.abs(cf[fin]))) if fin.any() else 1.0)
    d = float(np.max(np.abs(gf[fin] - cf[fin]))) if fin.any() else 0.0
    return d <= tol * scale, "max |diff| %.3g (scale %.3g)" % (d, scale)


def cmd_run(a):
    import shapeml
    lib = shapeml.Library(a.runtime)
    dev = shapeml.Device(lib, 0)
    meta = json.load(open(os.path.join(a.dir, "cases.json")))
    results, bad = [], 0
    for c in meta["cases"]:
        z = np.load(os.path.join(a.dir, c["name"] + ".npz"))
        arrs = [z["arr_%d" % k] for k in range(c["inputs"] + c["outputs"])]
        ins, cpu = arrs[:c["inputs"]], arrs[c["inputs"]:]
        try:
            mod = lib.load(os.path.join(a.dir, c["name"] + ".so"))
            dins = [dev.upload(x) for x in ins]
            outs = mod.call_tensors(c["entry"], *dins)
            got = [np.asarray(dev.download(t)) for t in outs]
            fused_same = True
            unfused_so = os.path.join(a.dir, c["name"] + ".unfused.so")
            if os.path.exists(unfused_so):  # elementwise fusion: the unfused plan's bits exactly
                fouts = lib.load(unfused_so).call_tensors(c["entry"], *dins)
                fgot = [np.asarray(dev.download(t)) for t in fouts]
                fused_same = len(fgot) == len(got) and all(f.tobytes() == g.tobytes() for f, g in zip(fgot, got))
                for t in fouts:
                    dev.free(t)
            for t in list(dins) + list(outs):
                dev.free(t)
            checks = [agree(g, x) for g, x in zip(got, cpu)]
            ok = len(got) == len(cpu) and all(k for k, _ in checks) and fused_same
            detail = "; ".join(d for _, d in checks) + ("" if fused_same else "; the unfused plan's bits differ")
        except Exception as e:  # one program's failure is reported, the rest still run
            ok, detail = False, "error: %s" % e
        bad += 0 if ok else 1
        results.append({"case": c["name"], "binding": c["binding"], "agree": ok, "detail": detail})
        print("%-14s %s  %s" % (c["name"], "ok  " if ok else "DIFF", detail))
    print("generated-gpu: %d agree, %d disagree, %d skipped %s" % (len(results) - bad, bad, sum(meta["skipped"].values()), meta["skipped"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"cases": results, "skipped": meta["skipped"], "disagree": bad}, f, indent=1)
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--shapemlc", required=True)
    b.add_argument("--sdk", required=True, help="libshapeml.so (the CPU results)")
    b.add_argument("--out", required=True)
    b.add_argument("--count", type=int, default=40)
    b.add_argument("--seed", type=int, default=7)
    r = sub.add_parser("run")
    r.add_argument("--runtime", required=True)
    r.add_argument("--dir", required=True)
    r.add_argument("--json")
    a = ap.parse_args()
    return cmd_build(a) if a.cmd == "build" else cmd_run(a)


if __name__ == "__main__":
    sys.exit(main())
