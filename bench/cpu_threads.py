#!/usr/bin/env python3
"""CPU threads benchmark (issue "CPU: every core"; docs/design/cpu-threads.md):
shapeml and PyTorch CPU at the same thread count, 1 and every CPU this
process may use, in the same run, as ratios (shapeml / PyTorch, lower is
better), and shapeml's own scaling from 1 thread.

Each measurement runs in its own child process so that the thread count is
fixed before either library starts: SHAPEML_NUM_THREADS=T for shapeml (the
default of shapeml_call_options.num_threads), OMP_NUM_THREADS=
OPENBLAS_NUM_THREADS=T and torch.set_num_threads(T) for PyTorch (the BLAS
kernel, the one OpenBLAS picks for the CPU, and its thread count are
printed; OpenBLAS's own choice and every OPENBLAS_CORETYPE the CPU's flags
allow are tried, the fastest kept). shapeml: JIT through the Python
binding, inputs created once, best of N calls after two warm-ups; PyTorch
the same.

Workloads: the MLP (B4 S128 D256 F1024, exact GELU), the small transformer
block (B4 S128 D256 H4 F704), the medium one (B1 S512 D1024 H16 F2816) and
f32 matmul 512^3.

  /usr/bin/python3 bench/cpu_threads.py [BUILD_DIR] [--json OUT.json] [--threads 1,2] [--rounds N]
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = "/usr/bin/python3"

WORKLOADS = {
    "mlp": dict(kind="mlp", B=4, S=128, D=256, F=1024, iters=30),
    "block_small": dict(kind="block", B=4, S=128, D=256, H=4, F=704, iters=20),
    "block_medium": dict(kind="block", B=1, S=512, D=1024, H=16, F=2816, iters=5),
    "matmul_512": dict(kind="matmul", M=512, K=512, N=512, iters=30),
}

CHILD = r"""
import json, os, sys, time
import numpy as np
sys.path.insert(0, HERE); sys.path.insert(0, os.path.join(ROOT, "sdk-examples", "python"))
w = json.loads(sys.argv[1]); side = sys.argv[2]; build = sys.argv[3]; T = int(sys.argv[4])
rng = np.random.default_rng(0)
if w["kind"] == "mlp":
    B, S, D, F = w["B"], w["S"], w["D"], w["F"]
    ins = [rng.standard_normal(s).astype(np.float32) * 0.1 for s in [(B, S, D), (D, F), (F,), (F, D), (D,)]]
    src, entry = open(os.path.join(ROOT, "examples", "mlp.sml")).read(), "mlp"
elif w["kind"] == "block":
    from transformer_gpu import make_inputs
    ins = make_inputs(w)
    src, entry = open(os.path.join(ROOT, "examples", "transformer_block.sml")).read(), "block"
else:
    ins = [rng.standard_normal((w["M"], w["K"])).astype(np.float32), rng.standard_normal((w["K"], w["N"])).astype(np.float32)]
    src, entry = open(os.path.join(ROOT, "bench", "matmul.sml")).read(), "matmul"

def best(fn, n):
    fn(); fn()
    b = 1e9
    for _ in range(n):
        t0 = time.perf_counter(); fn(); b = min(b, time.perf_counter() - t0)
    return b * 1e3

out = {}
if side == "shapeml":
    import shapeml
    lib = shapeml.Library(os.path.join(build, "libshapeml.so"))
    mod = lib.compile(src, entry + ".sml")
    # Inputs made into shapeml tensors once, as PyTorch's are (Module.call
    # would copy every array in and the results out on each call).
    handles = [lib.tensor(a) for a in ins]
    def call():
        for o in mod.call_tensors(entry, *handles):
            lib.lib.shapeml_tensor_release(o)
    out["ms"] = best(call, w["iters"])
else:
    import ctypes, torch
    torch.set_num_threads(T)
    t = [torch.from_numpy(a) for a in ins]
    if w["kind"] == "mlp":
        x, w1, b1, w2, b2 = t
        fn = lambda: torch.nn.functional.gelu(x @ w1 + b1) @ w2 + b2
    elif w["kind"] == "block":
        from transformer_gpu import torch_block
        fn = lambda: torch_block(t, w["H"], w["H"])
    else:
        a, b = t
        fn = lambda: a @ b
    with torch.no_grad():
        out["ms"] = best(fn, w["iters"])
    out["torch_threads"] = torch.get_num_threads()
    for name in ("libopenblas.so.0", "libblas.so.3"):
        try:
            L = ctypes.CDLL(name); f = L.openblas_get_corename; f.restype = ctypes.c_char_p
            out["blas"] = f().decode(); out["blas_threads"] = L.openblas_get_num_threads(); break
        except Exception:
            pass
print(json.dumps(out))
"""


def coretypes():
    """OpenBLAS kernels to try for PyTorch: its own choice, and the ones this
    CPU's flags allow. In these VMs OpenBLAS's detection may fall back to
    `Prescott` (SSE3) on an AVX-512 CPU, several times slower; a careful user
    sets OPENBLAS_CORETYPE, so the PyTorch figure is the fastest of these."""
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    out = [None]
    if "avx512_bf16" in flags:
        out.append("Cooperlake")
    if "avx512f" in flags:
        out.append("SkylakeX")
    if "avx2" in flags:
        out.append("Haswell")
    return out


def measure(name, w, side, build, threads, coretype=None):
    env = dict(os.environ, SHAPEML_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    code = f"HERE = {HERE!r}; ROOT = {ROOT!r}\n" + CHILD
    p = subprocess.run([PY, "-c", code, json.dumps(w), side, build, str(threads)], env=env, capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        raise SystemExit(f"{name} {side} {threads} threads failed:\n{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def measure_torch(name, w, build, threads):
    """PyTorch with the fastest OpenBLAS kernel of coretypes()."""
    runs = [measure(name, w, "torch", build, threads, c) for c in coretypes()]
    return min(runs, key=lambda r: r["ms"])


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    opt = lambda k: sys.argv[sys.argv.index(k) + 1] if k in sys.argv else None
    args = [a for a in args if a not in (opt("--json"), opt("--threads"), opt("--rounds"))]
    # Rounds: every measurement repeated, interleaved, the best kept (the
    # development VMs vary by 30% from minute to minute).
    rounds = int(opt("--rounds") or 1)
    build = os.path.abspath(args[0] if args else os.path.join(ROOT, "build", "default"))
    cpus = len(os.sched_getaffinity(0))
    counts = [int(c) for c in opt("--threads").split(",")] if opt("--threads") else sorted({1, cpus})
    res = {"cpus": cpus, "counts": counts, "rounds": rounds, "workloads": {}}
    print(f"{cpus} CPUs; thread counts {counts}; ms per call (best of N), ratio = shapeml / PyTorch at the same count")
    for name, w in WORKLOADS.items():
        r = res["workloads"][name] = {}
        for T in counts:
            s, t = None, None
            for _ in range(rounds):
                s1, t1 = measure(name, w, "shapeml", build, T), measure_torch(name, w, build, T)
                s = s1 if s is None or s1["ms"] < s["ms"] else s
                t = t1 if t is None or t1["ms"] < t["ms"] else t
            r[str(T)] = {"shapeml_ms": s["ms"], "torch_ms": t["ms"], "ratio": s["ms"] / t["ms"], "torch": t}
            print(f"  {name:<13} {T:>2} threads: shapeml {s['ms']:8.2f}  PyTorch {t['ms']:8.2f}  ratio {s['ms'] / t['ms']:.2f}x"
                  f"   (PyTorch {t.get('torch_threads')} threads, BLAS {t.get('blas', '?')} x{t.get('blas_threads', '?')})")
        if len(counts) > 1:
            lo, hi = str(counts[0]), str(counts[-1])
            r["shapeml_scaling"] = r[lo]["shapeml_ms"] / r[hi]["shapeml_ms"]
            r["torch_scaling"] = r[lo]["torch_ms"] / r[hi]["torch_ms"]
            print(f"  {name:<13} scaling {lo} -> {hi} threads: shapeml {r['shapeml_scaling']:.2f}x, PyTorch {r['torch_scaling']:.2f}x")
    if opt("--json"):
        with open(opt("--json"), "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
