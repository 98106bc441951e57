#!/usr/bin/env python3
"""The cost of observability (issue 11; docs/design/observability.md).

Times entry-point calls of the MLP and the transformer block, ahead-of-time
compiled, through libshapeml_runtime.so of two builds:
  on   the default build (instrumentation compiled in), in two modes:
         default  tracing off, no log sink (what every user gets)
         trace    tracing on (spans recorded; the recorder is emptied every
                  512 calls, outside the timed region)
       and on the GPU also gpu-timing (CUDA events per operation)
  off  a build configured with -DSHAPEML_INSTRUMENTATION=OFF
Each round runs every mode once in a rotated order (off twice, to measure the
noise floor); the ratios are medians over rounds of per-round median call
times. Reports ratios, never asserts on time.

  obs_overhead.py build --shapemlc build/default/shapemlc --out DIR [--gpu]
  obs_overhead.py run --on build/default --off build/noinstr --modules DIR [--gpu] [--rounds 7] [--json OUT]

`--on`/`--off` are build folders (or staged copies) holding
bench/obs_overhead_bench (or bin/obs_overhead_bench) and libshapeml_runtime.so
(and libshapeml_cuda.so for --gpu). On the GPU machine
scripts/gpu-device-run.sh runs `run --gpu` from what scripts/gpu-stage.sh
staged.
"""
import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

MLP_DIMS = ("B", "S", "D", "F")
BLOCK_DIMS = ("B", "S", "D", "H", "Dh", "F")


def mlp_shapes(b):
    B, S, D, F = (b[k] for k in MLP_DIMS)
    return [f"{B}x{S}x{D}", f"{D}x{F}", f"{F}", f"{F}x{D}", f"{D}"]


def block_shapes(b):
    B, S, D, H, Dh, F = (b[k] for k in BLOCK_DIMS)
    return [f"{B}x{S}x{D}", f"{D}", f"{D}x{H}x{Dh}", f"{D}x{H}x{Dh}", f"{D}x{H}x{Dh}", f"{H}x{Dh}x{D}", f"{D}", f"{D}x{F}", f"{D}x{F}",
            f"{F}x{D}"]


def cases(gpu):
    """(name, source, entry, binding, input shapes, iterations)."""
    if gpu:
        mlp = dict(B=4, S=128, D=256, F=1024)
        blk = dict(B=4, S=128, D=256, H=4, Dh=64, F=704)
        return [("mlp_gpu", "mlp_gpu.sml", "mlp", mlp, mlp_shapes(mlp), 2000),
                ("block_gpu", "transformer_block_gpu.sml", "block", blk, block_shapes(blk), 1000)]
    small = dict(B=1, S=4, D=32, F=64)
    mlp = dict(B=4, S=128, D=256, F=1024)
    bsmall = dict(B=1, S=8, D=64, H=2, Dh=32, F=128)
    blk = dict(B=1, S=64, D=256, H=4, Dh=64, F=704)
    return [("mlp_small", "mlp.sml", "mlp", small, mlp_shapes(small), 20000),
            ("mlp", "mlp.sml", "mlp", mlp, mlp_shapes(mlp), 100),
            ("block_small", "transformer_block.sml", "block", bsmall, block_shapes(bsmall), 5000),
            ("block", "transformer_block.sml", "block", blk, block_shapes(blk), 100)]


def build(a):
    os.makedirs(a.out, exist_ok=True)
    for name, src, entry, binding, _, _ in cases(a.gpu):
        # The block is generic in its dtype T and device Dv (spec §3.5): one source, bound per case.
        # (The *_gpu.sml names are the same sources bound to (cuda 0).)
        path = os.path.join(ROOT, "examples", {"transformer_block_gpu.sml": "transformer_block.sml", "mlp_gpu.sml": "mlp.sml"}.get(src, src))
        types = {"transformer_block_gpu.sml": "T=f32,Dv=cuda0,", "transformer_block.sml": "T=f32,Dv=host,", "mlp_gpu.sml": "T=f32,Dv=cuda0,",
                 "mlp.sml": "T=f32,Dv=host,"}.get(src, "")
        bind = types + ",".join(f"{k}={v}" for k, v in binding.items())
        out = os.path.join(a.out, name + ".so")
        subprocess.run([a.shapemlc, "build", path, "--entry", entry, "--bind", bind, "-o", out, "--target", "x86-64"], check=True)
        print("built", out)


def find(folder, *names):
    for n in names:
        p = os.path.join(folder, n)
        if os.path.exists(p):
            return p
    sys.exit(f"obs_overhead: none of {names} in {folder}")


def env_for(folder, gpu):
    env = dict(os.environ)
    env.pop("SHAPEML_LOG", None)
    libdir = os.path.dirname(find(folder, "libshapeml_runtime.so", "lib/libshapeml_runtime.so"))
    env["LD_LIBRARY_PATH"] = libdir + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    if gpu:
        env["SHAPEML_CUDA_PLUGIN"] = find(folder, "libshapeml_cuda.so", "lib/libshapeml_cuda.so")
    for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[v] = "1"
    return env


def one(binary, env, module, entry, iters, shapes, flags):
    r = subprocess.run([binary, module, entry, str(iters)] + flags + shapes, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"obs_overhead: {binary} {module} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    kv = dict(x.split("=", 1) for x in r.stdout.split())
    return kv


def run(a):
    on_bin = find(a.on, "bench/obs_overhead_bench", "bin/obs_overhead_bench")
    off_bin = find(a.off, "bench/obs_overhead_bench", "bin/obs_overhead_bench")
    on_env, off_env = env_for(a.on, a.gpu), env_for(a.off, a.gpu)
    modes = [("off", off_bin, off_env, []), ("default", on_bin, on_env, []), ("off2", off_bin, off_env, []),
             ("trace", on_bin, on_env, ["--trace"])]
    variants = [("", [])]
    if a.gpu:
        modes.append(("gpu-timing", on_bin, on_env, ["--gpu-timing"]))
        variants = [("", ["--cuda"]), ("/graph-off", ["--cuda", "--graph-off"])]
    results, ratios = [], {}
    for name, _, entry, _, shapes, iters in cases(a.gpu):
        iters = max(1, int(iters * a.scale))
        module = os.path.join(a.modules, name + ".so")
        for vname, vflags in variants:
            key = name + vname
            per = {m[0]: [] for m in modes}
            best = {m[0]: [] for m in modes}
            for r in range(a.rounds):
                order = modes[r % len(modes):] + modes[: r % len(modes)]
                for mname, binary, env, flags in order:
                    kv = one(binary, env, module, entry, iters, shapes, vflags + flags)
                    want = "0" if mname.startswith("off") else "1"
                    if kv["instrumented"] != want:
                        sys.exit(f"obs_overhead: the {mname} binary reports instrumented={kv['instrumented']} (wrong library loaded?)")
                    per[mname].append(float(kv["median_ms"]))
                    best[mname].append(float(kv["best_ms"]))
            off = [statistics.mean(p) for p in zip(per["off"], per["off2"])]
            off_best = [min(p) for p in zip(best["off"], best["off2"])]
            row = {"off_ms": statistics.median(off)}
            for mname in per:
                if not mname.startswith("off"):
                    row[f"{mname}_ms"] = statistics.median(per[mname])
                    row[f"{mname}_vs_off"] = statistics.median(x / o for x, o in zip(per[mname], off))
                    # Best call of each run: less sensitive to other load on the machine.
                    row[f"{mname}_best_vs_off"] = min(best[mname]) / min(off_best)
            row["noise"] = statistics.median(abs(b / c - 1) for b, c in zip(per["off"], per["off2"]))
            ratios[key] = row
            for mname in per:
                results.append({"name": f"{key}/{mname}", "ms": statistics.median(per[mname]), "count": iters})
            print(f"{key:<18} off {row['off_ms']:.4f} ms  " + "  ".join(
                f"{m} {row[m + '_ms']:.4f} ms (x{row[m + '_vs_off']:.4f}, best x{row[m + '_best_vs_off']:.4f})" for m in per
                if not m.startswith("off")) +
                f"  noise {row['noise'] * 100:.2f}%", flush=True)
    doc = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": platform.node(), "cpu": platform.processor() or platform.machine(),
           "gpu": a.gpu, "rounds": a.rounds, "results": results, "ratios": ratios,
           "limits": {"default_vs_off": "< 1.05 (target < 1.02)", "off": "instrumentation compiled out (SHAPEML_INSTRUMENTATION=OFF)"}}
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
        print("wrote", a.json)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--shapemlc", required=True)
    b.add_argument("--out", required=True)
    b.add_argument("--gpu", action="store_true")
    r = sub.add_parser("run")
    r.add_argument("--on", required=True)
    r.add_argument("--off", required=True)
    r.add_argument("--modules", required=True)
    r.add_argument("--gpu", action="store_true")
    r.add_argument("--rounds", type=int, default=7)
    r.add_argument("--scale", type=float, default=1.0, help="multiply the iteration counts")
    r.add_argument("--json")
    a = ap.parse_args()
    build(a) if a.cmd == "build" else run(a)


if __name__ == "__main__":
    main()
