#!/usr/bin/env python3
"""CPU benchmarks of issue "CPU backend", as ratios against PyTorch measured
in the same run, one thread on both sides (PyTorch runs in a child process
with OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=1 set before it starts, since
torch.set_num_threads does not limit OpenBLAS; the thread counts it then
reports are printed):

  1. the 2-layer MLP (B=4, S=128, D=256, F=1024, exact GELU), AOT-compiled and
     called through libshapeml_runtime.so, vs PyTorch CPU in its best
     OpenBLAS configuration (every OPENBLAS_CORETYPE that runs here is tried;
     the fastest counts);
  2. f32 matmul 512^3: GFLOP/s of shapeml AOT vs OpenBLAS through PyTorch;
  3. compile latency: check + lower + JIT of the MLP, and a cached call.

Usage: bench/cpu_bench.py [BUILD_DIR] [--json OUT.json]
Targets (reported, never asserted): MLP <= 1.2x PyTorch's best; matmul >= 150
GFLOP/s; MLP compile < 300 ms.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/usr/bin/python3"

TORCH_SNIPPET = r"""
import ctypes, json, sys, time, torch
torch.set_num_threads(1)
def best(fn, n):
    fn(); fn()
    b = 1e9
    for _ in range(n):
        t0 = time.perf_counter(); fn(); b = min(b, time.perf_counter() - t0)
    return b * 1e3
g = torch.Generator().manual_seed(0)
x = torch.rand(4, 128, 256, generator=g); w1 = torch.rand(256, 1024, generator=g); b1 = torch.rand(1024, generator=g)
w2 = torch.rand(1024, 256, generator=g); b2 = torch.rand(256, generator=g)
mlp = best(lambda: torch.nn.functional.gelu(x @ w1 + b1) @ w2 + b2, 30)
a = torch.rand(512, 512, generator=g); b = torch.rand(512, 512, generator=g)
mm = best(lambda: a @ b, 30)
core, blas_threads = "unknown", None
for lib in ("libopenblas.so.0", "libopenblasp-r0.3.21.so", "libblas.so.3"):
    try:
        L = ctypes.CDLL(lib); f = L.openblas_get_corename; f.restype = ctypes.c_char_p; core = f().decode()
        blas_threads = L.openblas_get_num_threads(); break
    except Exception:
        pass
print(json.dumps({"mlp_ms": mlp, "matmul_ms": mm, "core": core, "blas_threads": blas_threads,
                  "torch_threads": torch.get_num_threads()}))
"""


def torch_runs():
    runs = []
    for coretype in (None, "Haswell", "Zen", "SkylakeX", "Sandybridge"):
        env = dict(os.environ)
        env.pop("OPENBLAS_CORETYPE", None)
        env.pop("OPENBLAS_L2_SIZE", None)
        env["OMP_NUM_THREADS"] = env["OPENBLAS_NUM_THREADS"] = "1"
        if coretype:
            env["OPENBLAS_CORETYPE"] = coretype
        p = subprocess.run([PY, "-c", TORCH_SNIPPET], env=env, capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            runs.append({"coretype": coretype or "default", "error": (p.stderr.strip().splitlines() or ["crashed"])[-1]})
            continue
        r = json.loads(p.stdout.strip().splitlines()[-1])
        r["coretype"] = coretype or "default"
        runs.append(r)
    return runs


def aot_time(build, so, entry, shapes, iters):
    out = subprocess.run([os.path.join(build, "bench", "aot_call_bench"), so, entry, str(iters)] + shapes,
                         capture_output=True, text=True, check=True,
                         env=dict(os.environ, LD_LIBRARY_PATH=build)).stdout
    return float(re.search(r"best_ms=([0-9.]+)", out).group(1))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    build = os.path.abspath(args[0] if args else os.path.join(root, "build", "default"))
    json_out = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
    shapemlc = os.path.join(build, "shapemlc")
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        mlp_so, mm_so = os.path.join(tmp, "libmlp.so"), os.path.join(tmp, "libmm.so")
        subprocess.run([shapemlc, "build", os.path.join(root, "examples", "mlp.sml"), "-o", mlp_so, "--bind", "T=f32,Dv=host,B=4,S=128,D=256,F=1024"],
                       check=True, capture_output=True)
        subprocess.run([shapemlc, "build", os.path.join(root, "bench", "matmul.sml"), "-o", mm_so, "--bind", "M=512,K=512,N=512"],
                       check=True, capture_output=True)
        res["shapeml_mlp_ms"] = aot_time(build, mlp_so, "mlp", ["4x128x256", "256x1024", "1024", "1024x256", "256"], 30)
        res["shapeml_matmul_ms"] = aot_time(build, mm_so, "matmul", ["512x512", "512x512"], 30)
        mlir = subprocess.run([shapemlc, "--emit=mlir", os.path.join(root, "bench", "matmul.sml"), "--bind", "M=512,K=512,N=512"],
                              capture_output=True, text=True).stdout
        strat = re.findall(r"// matmul strategy: ([^\n]*)", mlir)
        res["shapeml_matmul_strategy"] = strat[0].strip() if strat else "see --emit=mlir"
    # Compile latency: check + lower + JIT of the MLP (first call), then a cached call.
    run = subprocess.run([shapemlc, "run", os.path.join(root, "examples", "mlp.sml"), "--bind", "T=f32,Dv=host,B=4,S=128,D=256,F=1024"] +
                         sum([["--random", f"{p}={i}"] for i, p in enumerate(["x", "w1", "b1", "w2", "b2"])], []),
                         capture_output=True, text=True, check=True).stdout
    m = re.search(r"first call ([0-9.]+) ms \(includes JIT\), second call ([0-9.]+) ms", run)
    res["jit_first_call_ms"], res["cached_call_ms"] = float(m.group(1)), float(m.group(2))
    t0 = time.perf_counter()
    subprocess.run([shapemlc, "check", os.path.join(root, "examples", "mlp.sml")], check=True)
    res["check_process_ms"] = (time.perf_counter() - t0) * 1e3

    runs = torch_runs()
    ok = [r for r in runs if "error" not in r]
    best_mlp = min(ok, key=lambda r: r["mlp_ms"])
    best_mm = min(ok, key=lambda r: r["matmul_ms"])
    res["torch_runs"] = runs
    flops = 2 * 512 ** 3
    print("PyTorch CPU, one thread, per OPENBLAS_CORETYPE:")
    for r in runs:
        if "error" in r:
            print(f"  {r['coretype']:>10}: not usable here ({r['error']})")
        else:
            print(f"  {r['coretype']:>10}: kernel {r['core']:<12} MLP {r['mlp_ms']:7.2f} ms   matmul 512^3 {r['matmul_ms']:6.2f} ms "
                  f"({flops / r['matmul_ms'] / 1e6:6.1f} GFLOP/s)   threads: torch {r.get('torch_threads')}, "
                  f"OpenBLAS {r.get('blas_threads')} (measured)")
    res["mlp_ratio_vs_torch_best"] = res["shapeml_mlp_ms"] / best_mlp["mlp_ms"]
    res["shapeml_matmul_gflops"] = flops / res["shapeml_matmul_ms"] / 1e6
    res["torch_best_matmul_gflops"] = flops / best_mm["matmul_ms"] / 1e6
    print(f"shapeml AOT MLP: {res['shapeml_mlp_ms']:.2f} ms  -> ratio vs PyTorch best ({best_mlp['coretype']}, kernel {best_mlp['core']}): "
          f"{res['mlp_ratio_vs_torch_best']:.2f}x (target <= 1.2x)")
    print(f"shapeml AOT matmul 512^3: {res['shapeml_matmul_gflops']:.1f} GFLOP/s vs OpenBLAS {res['torch_best_matmul_gflops']:.1f} "
          f"(target >= 150); strategy: {res['shapeml_matmul_strategy']}")
    print(f"MLP JIT: first call (check+lower+JIT+run) {res['jit_first_call_ms']:.0f} ms (target < 300), cached call "
          f"{res['cached_call_ms']:.2f} ms")
    if json_out:
        with open(json_out, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
