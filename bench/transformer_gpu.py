#!/usr/bin/env python3
"""The transformer block of examples/transformer_block.sml on the GPU (issue
10): correctness against PyTorch, CPU/GPU agreement, and speed against
PyTorch eager (manual attention and SDPA), torch.compile and JAX jit, all
measured in this one run.

  # here (compiler available): the GPU source, the AOT modules (fp32,
  # --gpu-tf32, and fp32 with --gpu-fuse on) and the CPU results of the
  # small size
  /usr/bin/python3 bench/transformer_gpu.py build --shapemlc build/default/shapemlc \
      --runtime build/default/libshapeml.so --out DIR
  # on the GPU machine
  python3 bench/transformer_gpu.py run --runtime DIR/libshapeml_runtime.so --dir DIR [--json OUT] [--quick]

The GPU program is the example itself with every `host` placed on
`(cuda 0)` (the same source; nothing else changes). Sizes: small B4 S128 D256
H4 F704 (and its grouped-query variant with 2 key/value heads), large B4 S512
D2048 H16 F5632.

Correctness (the exit status; never a timing): against PyTorch on the same
GPU, float64 reference; fp32 (TF32 off both sides): relative Frobenius error
at most 2x PyTorch fp32's own + 1e-6, and the plan's bar, max |err| / max
|ref| <= 1e-3; TF32 on (both sides): at most 2x PyTorch TF32's own error + 1e-4
and max |err| / max |ref| <= 1e-2. CPU vs GPU (small, fp32): relative
Frobenius difference <= 1e-5. Fused vs unfused plans (fp32): identical bits.
Speed: median of CUDA-synchronized loops,
reported as ratios shapeml / anchor (below 1: shapeml faster).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "sdk-examples", "python"))

SIZES = {
    "small": dict(B=4, S=128, D=256, H=4, F=704),
    "large": dict(B=4, S=512, D=2048, H=16, F=5632),
}
GQA = dict(B=4, S=128, D=256, H=4, Hkv=2, F=704)
EPS = 1e-5


def gpu_source():
    src = open(os.path.join(ROOT, "examples", "transformer_block.sml")).read()
    return re.sub(r"\bhost\b", "(cuda 0)", src)


def binding(name, s):
    b = dict(B=s["B"], S=s["S"], D=s["D"], H=s["H"], Dh=s["D"] // s["H"], F=s["F"])
    if "Hkv" in s:
        b.update(Hkv=s["Hkv"], G=s["H"] // s["Hkv"])
    return name + ":" + ",".join(f"{k}={v}" for k, v in b.items())


def make_inputs(s, seed=0):
    """x and the weights, float32, fixed seed (identical here and there)."""
    rng = np.random.default_rng(seed)
    B, S, D, H, F = s["B"], s["S"], s["D"], s["H"], s["F"]
    Dh = D // H
    Hkv = s.get("Hkv", H)
    r = lambda *shape: (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)
    x = rng.standard_normal((B, S, D)).astype(np.float32)
    g1 = (1 + 0.1 * rng.standard_normal(D)).astype(np.float32)
    wq, wk, wv = r(D, H, Dh), r(D, Hkv, Dh), r(D, Hkv, Dh)
    wo = (rng.standard_normal((H, Dh, D)) / np.sqrt(D)).astype(np.float32)
    g2 = (1 + 0.1 * rng.standard_normal(D)).astype(np.float32)
    return [x, g1, wq, wk, wv, wo, g2, r(D, F), r(D, F), r(F, D)]


def cmd_build(a):
    import shapeml
    os.makedirs(a.out, exist_ok=True)
    src_path = os.path.join(a.out, "transformer_gpu.sml")
    with open(src_path, "w") as f:
        f.write(gpu_source())
    binds = [binding("block", SIZES["small"]), binding("block", SIZES["large"]), binding("block_gqa", GQA)]
    # fp32_fused: elementwise fusion on (docs/design/gpu-fusion.md; off by
    # default), to compare its bits and its speed with the default plans.
    for mode, extra in (("fp32", []), ("tf32", ["--gpu-tf32"]), ("fp32_fused", ["--gpu-fuse", "on"])):
        cmd = [a.shapemlc, "build", src_path, "-o", os.path.join(a.out, f"transformer_{mode}.so"), "--target", "x86-64"] + extra
        for b in binds:
            cmd += ["--bind", b]
        subprocess.run(cmd, check=True)
    # The CPU back end on the same inputs (small sizes): the GPU run compares.
    lib = shapeml.Library(a.runtime)
    mod = lib.compile(open(os.path.join(ROOT, "examples", "transformer_block.sml")).read(), "transformer_block.sml")
    t0 = time.perf_counter()
    (y_small,) = mod.call("block", *make_inputs(SIZES["small"]))
    (y_gqa,) = mod.call("block_gqa", *make_inputs(GQA))
    np.savez(os.path.join(a.out, "cpu_small.npz"), block=y_small, block_gqa=y_gqa)
    print(f"built {a.out}: transformer_fp32.so, transformer_tf32.so, transformer_fp32_fused.so, cpu_small.npz (CPU: {time.perf_counter() - t0:.1f} s)")
    return 0


# ---- PyTorch reference (the same program, written in PyTorch) ------------------

def torch_block(t, H, Hkv, sdpa=False):
    import torch
    import torch.nn.functional as F
    x, g1, wq, wk, wv, wo, g2, wg, wu, wd = t
    B, S, D = x.shape
    Dh = D // H

    def rms(z, g):
        return z * torch.rsqrt((z * z).mean(-1, keepdim=True) + EPS) * g

    n1 = rms(x, g1)
    q = (n1 @ wq.reshape(D, D)).view(B, S, H, Dh).transpose(1, 2)
    k = (n1 @ wk.reshape(D, Hkv * Dh)).view(B, S, Hkv, Dh).transpose(1, 2)
    v = (n1 @ wv.reshape(D, Hkv * Dh)).view(B, S, Hkv, Dh).transpose(1, 2)
    if Hkv != H:
        k, v = k.repeat_interleave(H // Hkv, dim=1), v.repeat_interleave(H // Hkv, dim=1)
    if sdpa:
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    else:
        sc = (q @ k.transpose(-1, -2)) * (Dh ** -0.5)
        mask = torch.ones(S, S, device=x.device, dtype=torch.bool).triu(1)
        a = torch.softmax(sc.masked_fill(mask, float("-inf")), dim=-1) @ v
    h = x + a.transpose(1, 2).reshape(B, S, D) @ wo.reshape(D, D)
    n2 = rms(h, g2)
    return h + (F.silu(n2 @ wg) * (n2 @ wu)) @ wd


def rel_fro(y, ref):
    return float(np.linalg.norm(y.astype(np.float64) - ref) / np.linalg.norm(ref))


def max_rel(y, ref):
    return float(np.max(np.abs(y.astype(np.float64) - ref)) / np.max(np.abs(ref)))


def cmd_run(a):
    import torch
    import shapeml
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cuda = torch.device("cuda:0")
    lib = shapeml.Library(a.runtime)
    dev = shapeml.Device(lib, 0)
    mods = {m: lib.load(os.path.join(a.dir, f"transformer_{m}.so")) for m in ("fp32", "tf32")}
    fused_so = os.path.join(a.dir, "transformer_fp32_fused.so")
    if os.path.exists(fused_so):  # staged before fusion existed: no comparison
        mods["fp32_fused"] = lib.load(fused_so)
    cpu = np.load(os.path.join(a.dir, "cpu_small.npz"))
    res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "checks": [], "ms": {}, "ratios": {}}
    ok = True

    def check(name, passed, **vals):
        nonlocal ok
        ok &= bool(passed)
        res["checks"].append(dict(name=name, passed=bool(passed), **vals))
        print(f"  {'PASS' if passed else 'FAIL'} {name}: " + ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in vals.items()))

    # graph: None as the plan says; False direct execution; True CUDA graph replay
    def run_shapeml(mode, entry, ins, out, graph=None):
        kw = {} if graph is None or not a.has_graph else {"graph": 1 if graph else 2}
        mods[mode].call_into(entry, ins, [out], **kw)

    a.has_fused = "fp32_fused" in mods
    cases = [("block", "small", SIZES["small"]), ("block", "large", SIZES["large"]), ("block_gqa", "small", GQA)]
    for entry, size, s in cases:
        H, Hkv = s["H"], s.get("Hkv", s["H"])
        host = make_inputs(s)
        ins = [dev.upload(t) for t in host]
        out = dev.upload(np.full((s["B"], s["S"], s["D"]), np.nan, np.float32))
        t32 = [torch.from_numpy(t).to(cuda) for t in host]
        ref64 = torch_block([t.double() for t in t32], H, Hkv).cpu().numpy()
        for mode in ("fp32", "tf32"):
            torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
            ref_t = torch_block(t32, H, Hkv).cpu().numpy()
            run_shapeml(mode, entry, ins, out, graph=False)
            dev.sync()
            y = dev.download(out)
            e, et, mr = rel_fro(y, ref64), rel_fro(ref_t, ref64), max_rel(y, ref64)
            gate, bar = (2 * et + 1e-6, 1e-3) if mode == "fp32" else (2 * et + 1e-4, 1e-2)
            check(f"{entry} {size} {mode} vs PyTorch fp64", e <= gate and mr <= bar and np.isfinite(y).all(),
                  rel_err=e, torch_rel_err=et, gate=gate, max_rel=mr, max_rel_bar=bar)
            if mode == "fp32" and "fp32_fused" in mods:
                # Elementwise fusion is bit-identical: the fused plan's output equals the default (unfused) one's.
                out_u = dev.upload(np.full((s["B"], s["S"], s["D"]), np.nan, np.float32))
                run_shapeml("fp32_fused", entry, ins, out_u, graph=False)
                dev.sync()
                yu = dev.download(out_u)
                dev.free(out_u)
                check(f"{entry} {size} fused == unfused (bit for bit)", np.array_equal(y.view(np.uint32), yu.view(np.uint32)),
                      max_abs_diff=float(np.nanmax(np.abs(y.astype(np.float64) - yu))))
            if size == "small" and mode == "fp32":
                d = rel_fro(y, cpu[entry].astype(np.float64))
                check(f"{entry} {size} GPU vs CPU back end", d <= 1e-5, rel_diff=d)
            # Graph replay (capture, then replay) gives the same bits as direct execution.
            if a.has_graph:
                for _ in range(2):
                    run_shapeml(mode, entry, ins, out, graph=True)
                dev.sync()
                yg = dev.download(out)
                check(f"{entry} {size} {mode} graph replay == direct", np.array_equal(yg, y))
        if entry == "block" and not a.check_only:
            bench_size(a, res, size, s, t32, ins, out, run_shapeml, dev)
        for t in ins + [out]:
            dev.free(t)
    torch.backends.cuda.matmul.allow_tf32 = False
    if not a.check_only:
        bench_jax(a, res)
        print_table(res)
    res["passed"] = ok
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)
    print(f"transformer on GPU: {'PASS' if ok else 'FAIL'} ({sum(c['passed'] for c in res['checks'])}/{len(res['checks'])} checks)")
    return 0 if ok else 1


def timed(fn, sync, iters):
    for _ in range(3):
        fn()
    sync()
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        runs.append((time.perf_counter() - t0) / iters * 1e3)
    return sorted(runs)[len(runs) // 2]


def bench_size(a, res, size, s, t32, ins, out, run_shapeml, dev):
    import torch
    iters = 20 if size == "large" else 200
    H = s["H"]
    for mode in ("fp32", "tf32"):
        torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
        key = f"{size}_{mode}"
        ms = {}
        ms["shapeml_direct"] = timed(lambda: run_shapeml(mode, "block", ins, out, graph=False), dev.sync, iters)
        if a.has_graph:
            ms["shapeml_graph"] = timed(lambda: run_shapeml(mode, "block", ins, out, graph=True), dev.sync, iters)
        if mode == "fp32" and a.has_fused:
            ms["shapeml_fused_direct"] = timed(lambda: run_shapeml("fp32_fused", "block", ins, out, graph=False), dev.sync, iters)
            if a.has_graph:
                ms["shapeml_fused_graph"] = timed(lambda: run_shapeml("fp32_fused", "block", ins, out, graph=True), dev.sync, iters)
        sync = torch.cuda.synchronize
        with torch.no_grad():
            ms["torch_eager"] = timed(lambda: torch_block(t32, H, H), sync, iters)
            ms["torch_eager_sdpa"] = timed(lambda: torch_block(t32, H, H, sdpa=True), sync, iters)
            if not a.no_compile:
                try:
                    torch._dynamo.reset()
                    cf = torch.compile(lambda *t: torch_block(list(t), H, H))
                    cf(*t32)
                    ms["torch_compile"] = timed(lambda: cf(*t32), sync, iters)
                except Exception as e:
                    print(f"torch.compile failed: {e}", file=sys.stderr)
        res["ms"][key] = ms
        print(f"  {key}: " + ", ".join(f"{k} {v:.4f} ms" for k, v in ms.items()))
    torch.backends.cuda.matmul.allow_tf32 = False


def bench_jax(a, res):
    """JAX jit of the same block (run last: it has its own allocator)."""
    if a.no_jax:
        return
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        import jax
        import jax.numpy as jnp
    except Exception as e:
        print(f"JAX not available: {e}", file=sys.stderr)
        return

    def block(x, p, H):
        B, S, D = x.shape
        Dh = D // H

        def rms(z, g):
            return z * jax.lax.rsqrt(jnp.mean(z * z, axis=-1, keepdims=True) + EPS) * g

        n1 = rms(x, p[0])
        q = (n1 @ p[1]).reshape(B, S, H, Dh).transpose(0, 2, 1, 3)
        k = (n1 @ p[2]).reshape(B, S, H, Dh).transpose(0, 2, 1, 3)
        v = (n1 @ p[3]).reshape(B, S, H, Dh).transpose(0, 2, 1, 3)
        sc = (q @ k.transpose(0, 1, 3, 2)) * (Dh ** -0.5)
        sc = jnp.where(jnp.tril(jnp.ones((S, S), bool)), sc, -jnp.inf)
        h = x + (jax.nn.softmax(sc, axis=-1) @ v).transpose(0, 2, 1, 3).reshape(B, S, D) @ p[4]
        n2 = rms(h, p[5])
        return h + (jax.nn.silu(n2 @ p[6]) * (n2 @ p[7])) @ p[8]

    for size, s in SIZES.items():
        x, g1, wq, wk, wv, wo, g2, wg, wu, wd = make_inputs(s)
        D = s["D"]
        p = [jnp.asarray(t) for t in (g1, wq.reshape(D, D), wk.reshape(D, D), wv.reshape(D, D), wo.reshape(D, D), g2, wg, wu, wd)]
        xj = jnp.asarray(x)
        for mode, prec in (("fp32", "highest"), ("tf32", "default")):
            with jax.default_matmul_precision(prec):
                f = jax.jit(lambda x, p: block(x, p, s["H"]))
                f(xj, p).block_until_ready()
                ms = timed(lambda: f(xj, p), lambda: f(xj, p).block_until_ready(), 20 if size == "large" else 200)
            res["ms"].setdefault(f"{size}_{mode}", {})["jax_jit"] = ms
            print(f"  {size}_{mode}: jax_jit {ms:.4f} ms")


def print_table(res):
    print("\nshapeml / anchor (below 1: shapeml faster)")
    for key, ms in res["ms"].items():
        for ours in ("shapeml_direct", "shapeml_graph", "shapeml_fused_direct", "shapeml_fused_graph"):
            if ours not in ms:
                continue
            r = {k: ms[ours] / v for k, v in ms.items() if not k.startswith("shapeml")}
            res["ratios"][f"{key}_{ours}"] = r
            print(f"  {key:11s} {ours:15s} {ms[ours]:8.4f} ms  " + "  ".join(f"/{k} {v:.2f}" for k, v in r.items()))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--shapemlc", required=True)
    b.add_argument("--runtime", required=True, help="libshapeml.so (the CPU results are computed with it)")
    b.add_argument("--out", required=True)
    r = sub.add_parser("run")
    r.add_argument("--runtime", required=True)
    r.add_argument("--dir", required=True)
    r.add_argument("--json")
    r.add_argument("--check-only", action="store_true")
    r.add_argument("--no-compile", action="store_true")
    r.add_argument("--no-jax", action="store_true")
    a = ap.parse_args()
    if a.cmd == "build":
        return cmd_build(a)
    import shapeml
    a.has_graph = "graph" in shapeml.Module.call_into.__code__.co_varnames
    return cmd_run(a)


if __name__ == "__main__":
    sys.exit(main())
