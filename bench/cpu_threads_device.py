#!/usr/bin/env python3
"""CPU thread scaling on a machine with many cores and no compiler (the GPU
test machine: 16 cores, no LLVM/MLIR/Z3), against PyTorch CPU at the same
thread count (issue 23: "at all cores").

  build  (here)  AOT modules of the MLP, the small and medium transformer
                 block and a 512^3 matmul for x86-64-v3 and x86-64-v4, and
                 bench/aot_call_bench with libshapeml_runtime.so, into DIR
  run    (there) for each thread count: shapeml (SHAPEML_NUM_THREADS=T,
                 the v4 module where the CPU has AVX-512, else v3) and
                 PyTorch (torch.set_num_threads(T), OMP/MKL/OpenBLAS
                 threads T, each in its own process), best of N; ratios
                 shapeml / PyTorch and each side's scaling from 1 thread

  /usr/bin/python3 bench/cpu_threads_device.py build BUILD_DIR DIR
  python3 bench/cpu_threads_device.py run DIR [--threads 1,2,4,8,16] [--json OUT]
"""
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

WORKLOADS = {
    "mlp": dict(src="examples/mlp.sml", entry="mlp", bind="T=f32,Dv=host,B=4,S=128,D=256,F=1024", iters=30,
                shapes=["4x128x256", "256x1024", "1024", "1024x256", "256"]),
    "block_small": dict(src="examples/transformer_block.sml", entry="block", bind="T=f32,Dv=host,B=4,S=128,D=256,H=4,Dh=64,F=704", iters=20,
                        shapes=["4x128x256", "256", "256x4x64", "256x4x64", "256x4x64", "4x64x256", "256", "256x704", "256x704", "704x256"]),
    "block_medium": dict(src="examples/transformer_block.sml", entry="block", bind="T=f32,Dv=host,B=1,S=512,D=1024,H=16,Dh=64,F=2816", iters=5,
                         shapes=["1x512x1024", "1024", "1024x16x64", "1024x16x64", "1024x16x64", "16x64x1024", "1024", "1024x2816",
                                 "1024x2816", "2816x1024"]),
    "matmul_512": dict(src="bench/matmul.sml", entry="matmul", bind="M=512,K=512,N=512", iters=30, shapes=["512x512", "512x512"]),
}

TORCH = r"""
import json, sys, time, torch
w = json.loads(sys.argv[1]); T = int(sys.argv[2])
torch.set_num_threads(T)
sh = [[int(d) for d in s.split("x")] for s in w["shapes"]]
g = torch.Generator().manual_seed(0)
t = [torch.randn(*s, generator=g) * 0.05 for s in sh]
if w["entry"] == "mlp":
    x, w1, b1, w2, b2 = t
    fn = lambda: torch.nn.functional.gelu(x @ w1 + b1) @ w2 + b2
elif w["entry"] == "matmul":
    a, b = t
    fn = lambda: a @ b
else:
    x, g1, wq, wk, wv, wo, g2, wg, wu, wd = t
    B, S, D = x.shape; H = wq.shape[1]; Dh = D // H
    rms = lambda z, gg: z * torch.rsqrt((z * z).mean(-1, keepdim=True) + 1e-5) * gg
    mask = torch.ones(S, S, dtype=torch.bool).tril()
    def fn():
        n1 = rms(x, g1)
        q = (n1 @ wq.reshape(D, D)).view(B, S, H, Dh).transpose(1, 2)
        k = (n1 @ wk.reshape(D, D)).view(B, S, H, Dh).transpose(1, 2)
        v = (n1 @ wv.reshape(D, D)).view(B, S, H, Dh).transpose(1, 2)
        s = (q @ k.transpose(-1, -2)) / Dh ** 0.5
        a = torch.softmax(s.masked_fill(~mask, float("-inf")), -1) @ v
        h = x + a.transpose(1, 2).reshape(B, S, D) @ wo.reshape(D, D)
        n2 = rms(h, g2)
        return h + (torch.nn.functional.silu(n2 @ wg) * (n2 @ wu)) @ wd
with torch.no_grad():
    fn(); fn()
    best = 1e9
    for _ in range(w["iters"]):
        t0 = time.perf_counter(); fn(); best = min(best, time.perf_counter() - t0)
print(json.dumps({"ms": best * 1e3, "threads": torch.get_num_threads(), "torch": torch.__version__}))
"""


def build(build_dir, out):
    os.makedirs(out, exist_ok=True)
    shapemlc = os.path.join(build_dir, "shapemlc")
    for name, w in WORKLOADS.items():
        for target in ("x86-64-v3", "x86-64-v4"):
            subprocess.run([shapemlc, "build", os.path.join(ROOT, w["src"]), "--entry", w["entry"], "-o",
                            os.path.join(out, f"{name}.{target}.so"), "--bind", w["bind"], "--target", target], check=True)
    shutil.copy(os.path.join(build_dir, "bench", "aot_call_bench"), out)
    shutil.copy(os.path.realpath(os.path.join(build_dir, "libshapeml_runtime.so")), os.path.join(out, "libshapeml_runtime.so.0"))


def has_avx512():
    try:
        return " avx512f " in " " + open("/proc/cpuinfo").read().replace("\n", " ") + " "
    except OSError:
        return False


def run(d, counts, json_out):
    target = "x86-64-v4" if has_avx512() else "x86-64-v3"
    cpus = len(os.sched_getaffinity(0))
    counts = [c for c in counts if c <= cpus]
    res = {"cpus": cpus, "target": target, "counts": counts, "workloads": {}}
    print(f"{cpus} CPUs, shapeml modules for {target}; ms per call (best of N); ratio = shapeml / PyTorch at the same count")
    for name, w in WORKLOADS.items():
        r = res["workloads"][name] = {}
        for T in counts:
            env = dict(os.environ, SHAPEML_NUM_THREADS=str(T), OMP_NUM_THREADS=str(T), MKL_NUM_THREADS=str(T), OPENBLAS_NUM_THREADS=str(T),
                       LD_LIBRARY_PATH=d + ":" + os.environ.get("LD_LIBRARY_PATH", ""))
            out = subprocess.run([os.path.join(d, "aot_call_bench"), os.path.join(d, f"{name}.{target}.so"), w["entry"], str(w["iters"])] +
                                 w["shapes"], env=env, capture_output=True, text=True, check=True).stdout
            s_ms = float(re.search(r"best_ms=([0-9.]+)", out).group(1))
            p = subprocess.run([sys.executable, "-c", TORCH, json.dumps(w), str(T)], env=env, capture_output=True, text=True, check=True)
            t = json.loads(p.stdout.strip().splitlines()[-1])
            r[str(T)] = {"shapeml_ms": s_ms, "torch_ms": t["ms"], "ratio": s_ms / t["ms"], "torch_threads": t["threads"], "torch": t["torch"]}
            print(f"  {name:<13} {T:>2} threads: shapeml {s_ms:8.2f}  PyTorch {t['ms']:8.2f}  ratio {s_ms / t['ms']:.2f}x", flush=True)
        lo, hi = str(counts[0]), str(counts[-1])
        r["shapeml_scaling"] = r[lo]["shapeml_ms"] / r[hi]["shapeml_ms"]
        r["torch_scaling"] = r[lo]["torch_ms"] / r[hi]["torch_ms"]
        print(f"  {name:<13} scaling {lo} -> {hi}: shapeml {r['shapeml_scaling']:.2f}x, PyTorch {r['torch_scaling']:.2f}x", flush=True)
    if json_out:
        with open(json_out, "w") as f:
            json.dump(res, f, indent=2)


def main():
    a = sys.argv[1:]
    opt = lambda k, dflt=None: a[a.index(k) + 1] if k in a else dflt
    if a and a[0] == "build":
        build(os.path.abspath(a[1]), os.path.abspath(a[2]))
    elif a and a[0] == "run":
        run(os.path.abspath(a[1]), [int(c) for c in opt("--threads", "1,2,4,8,16").split(",")], opt("--json"))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
