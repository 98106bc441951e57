#!/usr/bin/env python3
"""First-call latency on the CPU (issue 23 item 4): the small transformer
block (B4 S128 D256 H4 F704) and the MLP (B4 S128 D256 F1024), each measured
in fresh processes, through the Python binding:

  cold   SHAPEML_JIT_CACHE=off: check + specialize (MLIR -> LLVM -> machine
         code) + the call
  warm   the same source and binding again with the on-disk JIT cache filled
         by a previous process (docs/design/jit-cache.md)
  steady the median of later calls, for scale

and, as the anchor a PyTorch user meets, torch.compile's first call of the
same block in a fresh process (inductor's default mode; its own on-disk
caches are pointed at an empty directory for the cold number, and kept for
the warm one).

  /usr/bin/python3 bench/first_call.py [--build build/default] [--runs 3] [--json OUT] [--no-torch]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r'''
import sys, time, json, statistics
sys.path.insert(0, sys.argv[1] + "/sdk-examples/python")
import numpy as np
import shapeml
lib = shapeml.Library(sys.argv[2] + "/libshapeml.so")
r = np.random.default_rng(0)
def f(*s): return r.standard_normal(s).astype(np.float32)
which = sys.argv[3]
if which == "block":
    B, S, D, H, F = 4, 128, 256, 4, 704; Dh = D // H
    path, entry = "examples/transformer_block.sml", "block"
    ins = [f(B, S, D), f(D), f(D, H, Dh), f(D, H, Dh), f(D, H, Dh), f(H, Dh, D), f(D), f(D, F), f(D, F), f(F, D)]
else:
    path, entry = "examples/mlp.sml", "mlp"
    ins = [f(4, 128, 256), f(256, 1024), f(1024), f(1024, 256), f(256)]
src = open(sys.argv[1] + "/" + path).read()
t0 = time.perf_counter()
m = lib.compile(src, path.split("/")[-1])
m.call(entry, *ins)
t1 = time.perf_counter()
ts = []
for _ in range(20):
    a = time.perf_counter(); m.call(entry, *ins); ts.append(time.perf_counter() - a)
print(json.dumps({"first_ms": 1e3 * (t1 - t0), "steady_ms": 1e3 * statistics.median(ts)}))
'''

TORCH_CHILD = r'''
import time, json, torch
t0 = time.perf_counter()
B, S, D, H, F = 4, 128, 256, 4, 704; Dh = D // H
g = torch.Generator().manual_seed(0)
def f(*s): return torch.randn(*s, generator=g)
x, g1, wq, wk, wv, wo, g2, wg, wu, wd = f(B, S, D), f(D), f(D, D), f(D, D), f(D, D), f(D, D), f(D), f(D, F), f(D, F), f(F, D)
def rms(t, w): return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-5) * w
def block(x):
    n = rms(x, g1)
    q, k, v = [(n @ w).view(B, S, H, Dh).transpose(1, 2) for w in (wq, wk, wv)]
    a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, S, D)
    h = x + a @ wo
    n2 = rms(h, g2)
    return h + (torch.nn.functional.silu(n2 @ wg) * (n2 @ wu)) @ wd
c = torch.compile(block)
t1 = time.perf_counter(); c(x); t2 = time.perf_counter()
print(json.dumps({"first_ms": 1e3 * (t2 - t1)}))
'''


def child(code, args, env):
    r = subprocess.run([sys.executable, "-c", code] + args, env=env, capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "default"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json")
    ap.add_argument("--no-torch", action="store_true")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    base = {k: v for k, v in os.environ.items() if not k.startswith("SHAPEML_")}
    out = {"runs": a.runs, "cases": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for which in ("block", "mlp"):
            cold = [child(CHILD, [ROOT, build, which], dict(base, SHAPEML_JIT_CACHE="off")) for _ in range(a.runs)]
            cache = dict(base, SHAPEML_JIT_CACHE_DIR=os.path.join(tmp, "jit-" + which))
            child(CHILD, [ROOT, build, which], cache)  # fills the cache
            warm = [child(CHILD, [ROOT, build, which], cache) for _ in range(a.runs)]
            row = {"cold_first_ms": statistics.median(c["first_ms"] for c in cold),
                   "warm_first_ms": statistics.median(w["first_ms"] for w in warm),
                   "steady_ms": statistics.median(w["steady_ms"] for w in warm + cold)}
            out["cases"][which] = row
            print(f"{which:6s} cold first call {row['cold_first_ms']:8.1f} ms   warm {row['warm_first_ms']:6.1f} ms   "
                  f"steady {row['steady_ms']:.2f} ms")
        if not a.no_torch:
            try:
                tenv = dict(base, TORCHINDUCTOR_CACHE_DIR=os.path.join(tmp, "inductor"), OMP_NUM_THREADS=str(os.cpu_count()))
                tenv.pop("OPENBLAS_CORETYPE", None)
                tc = child(TORCH_CHILD, [], tenv)["first_ms"]
                tw = child(TORCH_CHILD, [], tenv)["first_ms"]
                out["torch_compile_block"] = {"cold_first_ms": tc, "warm_first_ms": tw}
                b = out["cases"]["block"]
                print(f"torch.compile block: cold first call {tc:.0f} ms, warm {tw:.0f} ms; "
                      f"shapeml/torch.compile: cold {b['cold_first_ms'] / tc:.2f}x, warm {b['warm_first_ms'] / tw:.3f}x")
            except Exception as e:  # noqa: BLE001 - the anchor is optional
                print("torch.compile anchor failed:", str(e).splitlines()[-1] if str(e) else e)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
