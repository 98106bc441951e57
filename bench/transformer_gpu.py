#!/usr/bin/env python3
"""The transformer block of examples/transformer_block.sml on the GPU (issues
10, 21): correctness against PyTorch, CPU/GPU agreement, and speed in fp32,
TF32 and bf16 against what a careful user would pick, all measured in this
one run: PyTorch eager (manual attention and SDPA), the eager SDPA block
captured in a CUDA graph, torch.compile (default, mode="reduce-overhead",
mode="max-autotune-no-cudagraphs" for the large bf16 block; fullgraph, static shapes) and
JAX jit (timed on the result of the timed call itself).

  # here (compiler available): the GPU source, the AOT modules (fp32,
  # --gpu-tf32, and fp32 with --gpu-fuse on) and the CPU results of the
  # small size
  /usr/bin/python3 bench/transformer_gpu.py build --shapemlc build/default/shapemlc \
      --runtime build/default/libshapeml.so --out DIR
  # on the GPU machine
  python3 bench/transformer_gpu.py run --runtime DIR/libshapeml_runtime.so --dir DIR [--json OUT] [--quick]

The GPU program is the example itself with every `host` placed on
`(cuda 0)` (the same source; nothing else changes). Sizes: small B4 S128 D256
H4 F704 (and its grouped-query variant with 2 key/value heads, timed as
`gqa` against PyTorch's block with the same heads), large B4 S512 D2048 H16
F5632.

Correctness (the exit status; never a timing): against PyTorch on the same
GPU, float64 reference; fp32 (TF32 off both sides): relative Frobenius error
at most 2x PyTorch fp32's own + 1e-6, and the plan's bar, max |err| / max
|ref| <= 1e-3; TF32 on (both sides): at most 2x PyTorch TF32's own error + 1e-4
and max |err| / max |ref| <= 1e-2. CPU vs GPU (small, fp32): relative
Frobenius difference <= 1e-5. Fused vs unfused plans (fp32): identical bits.
bf16 (every f32 of the source made bf16): at most 2x PyTorch bf16's own
error against fp64 + 1e-3. The default plans fuse RMSNorm, the causal
softmax and SwiGLU (fuse_patterns.h); fp32_nopat is the same program with
--gpu-fuse-patterns off, compared for accuracy and speed; bf16_noattn is
the bf16 program with --gpu-fuse-attention off (the scores GEMM, the causal
softmax and the PV GEMM instead of one attention launch), timed beside it,
as tf32_noattn is beside the TF32 plan (whose attention runs on the TF32
tensor cores) and fp32_noattn beside the fp32 plan (FP32 cores,
register-tiled beyond 256 keys); *_chain are the plans with --gpu-graph-branches off (the
graph one chain in plan order), which must give the same bits as the
default plans (whose graphs run independent launches side by side);
bf16_nogroup with --gpu-group-matmuls off (one GEMM per projection of one activation);
bf16_owna with --gpu-cudnn-attention off (the attention on shapeml's own kernel, not cuDNN's);
*_nomerge are built with --gpu-merge-projections off (one GEMM per small
projection instead of copied weights and one wider GEMM), timed beside them.
fp32_nopat_fused and fp32_nopat_interp fuse fp32_nopat's elementwise
launches (--gpu-fuse on), with kernels generated into the module (the
default) or interpreted (--gpu-fuse-codegen off): both must give fp32_nopat's
bits, and are timed beside it; fp32_unfused is the default plan with
--gpu-fuse off (which the default plan's bits must equal), and
fp32_fused_interp the default plan interpreted. fp32_3xtf32 is the fp32
program with --gpu-fp32-matmul 3xtf32 (its large f32 GEMMs on TF32 tensor
cores over split operands, docs/design/fp32-tensor-core-matmul.md): a
precision between TF32 and fp32, held to relative Frobenius error <= 1e-4
(a third of TF32's), and timed beside the fp32 plan.
Speed: every candidate of a (size, dtype) is timed in ROUNDS interleaved
rounds (a round times each once, a CUDA-synchronized loop); the median of
the rounds and their spread (max - min) / median are reported, and ratios
shapeml / anchor (below 1: shapeml faster).
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


# One source for the CPU and the GPU, f32 and bf16: the block is generic in
# its dtype T and device Dv (spec §3.5), which a build binds like its shapes.
SOURCE = os.path.join(ROOT, "examples", "transformer_block.sml")


def binding(name, s, dtype="f32"):
    b = dict(T=dtype, Dv="cuda0", B=s["B"], S=s["S"], D=s["D"], H=s["H"], Dh=s["D"] // s["H"], F=s["F"])
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
    # fp32_unfused: elementwise fusion off (docs/design/gpu-generated-kernels.md; on by
    # default), to compare its bits and its speed with the default plans.
    # *_chain: graph branches off (one chain in plan order; docs/design/cuda-graphs.md),
    # tf32_noattn: the TF32 plan without the fused TF32 attention launch.
    chain = ["--gpu-graph-branches", "off"]
    for mode, extra in (("fp32", []), ("tf32", ["--gpu-tf32"]), ("fp32_unfused", ["--gpu-fuse", "off"]),
                        ("fp32_nopat", ["--gpu-fuse-patterns", "off", "--gpu-fuse", "off"]), ("bf16", []), ("bf16_noattn", ["--gpu-fuse-attention", "off"]),
                        ("fp32_chain", chain), ("tf32_chain", ["--gpu-tf32"] + chain), ("bf16_chain", chain),
                        ("tf32_noattn", ["--gpu-tf32", "--gpu-fuse-attention", "off"]), ("fp32_noattn", ["--gpu-fuse-attention", "off"]),
                        ("fp32_nomerge", ["--gpu-merge-projections", "off"]), ("tf32_nomerge", ["--gpu-tf32", "--gpu-merge-projections", "off"]),
                        ("bf16_nomerge", ["--gpu-merge-projections", "off"]), ("bf16_nogroup", ["--gpu-group-matmuls", "off"]),
                        ("bf16_owna", ["--gpu-cudnn-attention", "off"]),
                        ("fp32_3xtf32", ["--gpu-fp32-matmul", "3xtf32"]),
                        # Elementwise fusion over the planner's own launches (patterns off), its kernels
                        # generated (the default) or interpreted; fp32_fused_interp: the default plan interpreted.
                        ("fp32_nopat_fused", ["--gpu-fuse-patterns", "off", "--gpu-fuse", "on"]),
                        ("fp32_nopat_interp", ["--gpu-fuse-patterns", "off", "--gpu-fuse", "on", "--gpu-fuse-codegen", "off"]),
                        ("fp32_fused_interp", ["--gpu-fuse", "on", "--gpu-fuse-codegen", "off"])):
        dtype = "bf16" if mode.startswith("bf16") else "f32"
        cmd = [a.shapemlc, "build", SOURCE, "-o", os.path.join(a.out, f"transformer_{mode}.so"), "--target", "x86-64"] + extra
        for b in (binding("block", SIZES["small"], dtype), binding("block", SIZES["large"], dtype), binding("block_gqa", GQA, dtype)):
            cmd += ["--bind", b]
        subprocess.run(cmd, check=True)
    # The CPU back end on the same inputs (small sizes): the GPU run compares.
    lib = shapeml.Library(a.runtime)
    mod = lib.compile(open(os.path.join(ROOT, "examples", "transformer_block.sml")).read(), "transformer_block.sml")
    t0 = time.perf_counter()
    (y_small,) = mod.call("block", *make_inputs(SIZES["small"]))
    (y_gqa,) = mod.call("block_gqa", *make_inputs(GQA))
    np.savez(os.path.join(a.out, "cpu_small.npz"), block=y_small, block_gqa=y_gqa)
    print(f"built {a.out}: transformer_{{fp32,tf32,fp32_unfused,fp32_nopat,bf16,bf16_noattn,*_chain,tf32_noattn,*_nomerge,fp32_3xtf32}}.so, cpu_small.npz (CPU: {time.perf_counter() - t0:.1f} s)")
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
    for m in ("fp32_unfused", "fp32_nopat", "bf16", "bf16_noattn", "fp32_chain", "tf32_chain", "bf16_chain", "tf32_noattn",
              "fp32_nomerge", "tf32_nomerge", "bf16_nomerge", "bf16_nogroup", "bf16_owna", "fp32_noattn", "fp32_nopat_fused", "fp32_nopat_interp", "fp32_fused_interp",
              "fp32_3xtf32"):  # absent when staged by an older build
        so = os.path.join(a.dir, f"transformer_{m}.so")
        if os.path.exists(so):
            mods[m] = lib.load(so)
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

    a.has_unfused = "fp32_unfused" in mods
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
            def direct_output(m):  # module m's output on these inputs, one direct call, into a fresh buffer
                buf = dev.upload(np.full((s["B"], s["S"], s["D"]), np.nan, np.float32))
                run_shapeml(m, entry, ins, buf, graph=False)
                dev.sync()
                got = dev.download(buf)
                dev.free(buf)
                return got

            if mode == "fp32" and "fp32_unfused" in mods:
                # Elementwise fusion is bit-identical: the default (fused) plan's output equals the unfused one's.
                yu = direct_output("fp32_unfused")
                check(f"{entry} {size} fused == unfused (bit for bit)", np.array_equal(y.view(np.uint32), yu.view(np.uint32)),
                      max_abs_diff=float(np.nanmax(np.abs(y.astype(np.float64) - yu))))
            if mode == "fp32" and "fp32_3xtf32" in mods:
                yx = direct_output("fp32_3xtf32")
                ex, mx = rel_fro(yx, ref64), max_rel(yx, ref64)
                # Its own bar: a third of TF32's error (~3e-4 here), not fp32's (docs/design/fp32-tensor-core-matmul.md).
                check(f"{entry} {size} fp32 3xTF32 vs PyTorch fp64 (bar 1e-4)", ex <= 1e-4 and mx <= 1e-3 and np.isfinite(yx).all(), rel_err=ex,
                      torch_fp32_rel_err=et, max_rel=mx, fp32_plan_rel_err=e)
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
        torch.backends.cuda.matmul.allow_tf32 = False
        if "fp32_nopat" in mods:
            # The unfused launches of RMSNorm, the causal softmax and SwiGLU: the same accuracy.
            run_shapeml("fp32_nopat", entry, ins, out, graph=False)
            dev.sync()
            y_nopat = dev.download(out)
            e, et = rel_fro(y_nopat, ref64), rel_fro(torch_block(t32, H, Hkv).cpu().numpy(), ref64)
            check(f"{entry} {size} fp32, patterns unfused, vs PyTorch fp64", e <= 2 * et + 1e-6, rel_err=e, torch_rel_err=et)
            for m in ("fp32_nopat_fused", "fp32_nopat_interp"):
                if m in mods:  # elementwise fusion, generated or interpreted: the same bits as unfused
                    run_shapeml(m, entry, ins, out, graph=False)
                    dev.sync()
                    check(f"{entry} {size} {m} == fp32_nopat (bit for bit)", np.array_equal(dev.download(out).view(np.uint32), y_nopat.view(np.uint32)))
        ins_bf = out_bf = None
        if "bf16" in mods:
            import shapeml as sm
            ins_bf = [dev.upload(sm.bf16(t)) for t in host]
            out_bf = dev.upload(sm.bf16(np.full((s["B"], s["S"], s["D"]), np.nan, np.float32)))
            run_shapeml("bf16", entry, ins_bf, out_bf, graph=False)
            dev.sync()
            y = np.asarray(dev.download(out_bf), np.float64)
            ref_b = torch_block([t.to(torch.bfloat16) for t in t32], H, Hkv).double().cpu().numpy()
            e, et = rel_fro(y, ref64), rel_fro(ref_b, ref64)
            check(f"{entry} {size} bf16 vs PyTorch fp64", e <= 2 * et + 1e-3 and np.isfinite(y).all(), rel_err=e, torch_rel_err=et,
                  gate=2 * et + 1e-3)
            if a.has_graph:
                for _ in range(2):
                    run_shapeml("bf16", entry, ins_bf, out_bf, graph=True)
                dev.sync()
                yg = np.asarray(dev.download(out_bf), np.float64)
                check(f"{entry} {size} bf16 graph replay == direct", np.array_equal(yg, y))
        timed = size if entry == "block" else "gqa"
        if not a.check_only and timed in a.sizes.split(","):
            bench_size(a, res, size, s, t32, ins, out, ins_bf, out_bf, run_shapeml, dev, mods, entry)
        for t in ins + [out] + (ins_bf or []) + ([out_bf] if out_bf is not None else []):
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
    return 0 if ok and getattr(a, "bits_ok", True) else 1


def rounds(cands, iters, nrounds):
    """Times every candidate {name: (fn, sync)} in `nrounds` interleaved
    rounds (each round: every candidate once, a synchronized loop of
    `iters` calls after 3 warm-up calls); {name: (median ms, spread)} with
    spread = (max - min) / median over the rounds."""
    runs = {k: [] for k in cands}
    for fn, sync in cands.values():
        for _ in range(3):
            fn()
        sync()
    for _ in range(nrounds):
        for k, (fn, sync) in cands.items():
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            sync()
            runs[k].append((time.perf_counter() - t0) / iters * 1e3)
    out = {}
    for k, r in runs.items():
        r.sort()
        med = r[len(r) // 2]
        out[k] = (med, (r[-1] - r[0]) / med)
    return out


def timed(fn, sync, iters):
    return rounds({"x": (fn, sync)}, iters, 5)["x"][0]


def torch_candidates(a, s, tt, key):
    """The PyTorch anchors of one (size, dtype): eager, eager SDPA, the eager
    SDPA block captured in a CUDA graph, torch.compile in three modes."""
    import torch
    H, Hkv = s["H"], s.get("Hkv", s["H"])
    sync = torch.cuda.synchronize
    c = {"torch_eager": (lambda: torch_block(tt, H, Hkv), sync), "torch_eager_sdpa": (lambda: torch_block(tt, H, Hkv, sdpa=True), sync)}
    try:
        st = torch.cuda.Stream()
        st.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(st):
            for _ in range(3):
                torch_block(tt, H, Hkv, sdpa=True)
        torch.cuda.current_stream().wait_stream(st)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            torch_block(tt, H, Hkv, sdpa=True)
        c["torch_sdpa_cudagraph"] = (g.replay, sync)
    except Exception as e:  # noqa: BLE001
        print(f"CUDA graph capture of the SDPA block failed ({key}): {e}", file=sys.stderr)
    if not a.no_compile:
        modes = ["default", "reduce-overhead"]
        if key == "large_bf16" and not a.no_autotune:  # minutes of autotuning: where it is the best peer
            modes.append("max-autotune-no-cudagraphs")
        for cm in modes:
            try:
                torch._dynamo.reset()
                cf = torch.compile(lambda *t: torch_block(list(t), H, Hkv, sdpa=True), mode=None if cm == "default" else cm, fullgraph=True,
                                   dynamic=False)
                for _ in range(3):
                    cf(*tt)
                c[f"compile_{cm}"] = (lambda cf=cf: cf(*tt), sync)
            except Exception as e:  # noqa: BLE001
                print(f"torch.compile {cm} failed ({key}): {e}", file=sys.stderr)
    return c


def bench_size(a, res, size, s, t32, ins, out, ins_bf, out_bf, run_shapeml, dev, mods, entry="block"):
    import torch
    iters = 20 if size == "large" else 200
    for mode in ("fp32", "tf32", "bf16"):
        if mode == "bf16" and ins_bf is None:
            continue
        torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
        torch.backends.cudnn.allow_tf32 = mode == "tf32"
        key = f"{size}_{mode}" if entry == "block" else f"gqa_{mode}"
        mi, mo = (ins_bf, out_bf) if mode == "bf16" else (ins, out)
        c = {"shapeml_direct": (lambda: run_shapeml(mode, entry, mi, mo, graph=False), dev.sync)}
        if a.has_graph:
            c["shapeml_graph"] = (lambda: run_shapeml(mode, entry, mi, mo, graph=True), dev.sync)
            if mode == "fp32":
                for m in ("fp32_nopat", "fp32_nopat_fused", "fp32_nopat_interp", "fp32_fused_interp"):
                    if m in mods:
                        c[f"shapeml_{m[5:]}_graph"] = (lambda m=m: run_shapeml(m, entry, mi, mo, graph=True), dev.sync)
            if mode == "fp32" and "fp32_3xtf32" in mods:
                c["shapeml_3xtf32_graph"] = (lambda: run_shapeml("fp32_3xtf32", entry, mi, mo, graph=True), dev.sync)
            if f"{mode}_noattn" in mods:
                c["shapeml_noattn_graph"] = (lambda: run_shapeml(f"{mode}_noattn", entry, mi, mo, graph=True), dev.sync)
            if f"{mode}_nomerge" in mods:
                c["shapeml_nomerge_graph"] = (lambda: run_shapeml(f"{mode}_nomerge", entry, mi, mo, graph=True), dev.sync)
            if f"{mode}_owna" in mods:  # the attention on shapeml's own kernel instead of cuDNN's
                c["shapeml_ownattn_graph"] = (lambda: run_shapeml(f"{mode}_owna", entry, mi, mo, graph=True), dev.sync)
            if f"{mode}_nogroup" in mods:
                c["shapeml_nogroup_graph"] = (lambda: run_shapeml(f"{mode}_nogroup", entry, mi, mo, graph=True), dev.sync)
            if f"{mode}_chain" in mods:
                # One chain against branches: the same launches, so the same bits.
                run_shapeml(mode, entry, mi, mo, graph=True)
                dev.sync()
                y_branches = dev.download(mo)
                run_shapeml(f"{mode}_chain", entry, mi, mo, graph=True)
                dev.sync()
                y_chain = dev.download(mo)
                same = y_branches.tobytes() == y_chain.tobytes()
                res["checks"].append(dict(name=f"{key} graph branches bit-identical to one chain", passed=same))
                print(f"  {'PASS' if same else 'FAIL'} {key} graph branches bit-identical to one chain")
                a.bits_ok = getattr(a, "bits_ok", True) and same
                c["shapeml_chain_graph"] = (lambda: run_shapeml(f"{mode}_chain", entry, mi, mo, graph=True), dev.sync)
        if mode == "fp32" and a.has_unfused:
            c["shapeml_unfused_graph" if a.has_graph else "shapeml_unfused_direct"] = (
                lambda: run_shapeml("fp32_unfused", entry, mi, mo, graph=True if a.has_graph else False), dev.sync)
        tt = [t.to(torch.bfloat16) for t in t32] if mode == "bf16" else t32
        with torch.no_grad():
            c.update(torch_candidates(a, s, tt, key))
            got = rounds(c, iters, a.rounds)
        res["ms"][key] = {k: v[0] for k, v in got.items()}
        res.setdefault("spread", {})[key] = {k: v[1] for k, v in got.items()}
        print(f"  {key}: " + ", ".join(f"{k} {v[0]:.4f} ms (±{100 * v[1]:.0f}%)" for k, v in got.items()), flush=True)
        if a.json:  # as it goes: a run stopped at its time limit keeps what it measured
            with open(a.json, "w") as f:
                json.dump(res, f, indent=2)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


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
        if size not in a.sizes.split(","):
            continue
        x, g1, wq, wk, wv, wo, g2, wg, wu, wd = make_inputs(s)
        D = s["D"]
        for mode, prec, dt in (("fp32", "highest", jnp.float32), ("tf32", "default", jnp.float32), ("bf16", "default", jnp.bfloat16)):
            p = [jnp.asarray(t, dt) for t in (g1, wq.reshape(D, D), wk.reshape(D, D), wv.reshape(D, D), wo.reshape(D, D), g2, wg, wu, wd)]
            xj = jnp.asarray(x, dt)
            with jax.default_matmul_precision(prec):
                f = jax.jit(lambda x, p: block(x, p, s["H"]))
                box = [f(xj, p)]
                box[0].block_until_ready()

                def call():
                    box[0] = f(xj, p)

                # Awaits the result of the last timed call itself (no extra forward).
                med, spread = rounds({"jax": (call, lambda: box[0].block_until_ready())}, 20 if size == "large" else 200, a.rounds)["jax"]
            key = f"{size}_{mode}"
            res["ms"].setdefault(key, {})["jax_jit"] = med
            res.setdefault("spread", {}).setdefault(key, {})["jax_jit"] = spread
            print(f"  {key}: jax_jit {med:.4f} ms (±{100 * spread:.0f}%)")


def print_table(res):
    print("\nshapeml / anchor (below 1: shapeml faster)")
    for key, ms in res["ms"].items():
        for ours in ("shapeml_direct", "shapeml_graph", "shapeml_nopat_graph", "shapeml_noattn_graph", "shapeml_fused_direct", "shapeml_fused_graph",
                     "shapeml_3xtf32_graph"):
            if ours not in ms:
                continue
            r = {k: ms[ours] / v for k, v in ms.items() if not k.startswith("shapeml")}
            res["ratios"][f"{key}_{ours}"] = r
            print(f"  {key:11s} {ours:19s} {ms[ours]:8.4f} ms  " + "  ".join(f"/{k} {v:.2f}" for k, v in r.items()))
        peers = {k: v for k, v in ms.items() if k in ("jax_jit", "torch_sdpa_cudagraph") or k.startswith("compile_")}
        if peers and "shapeml_graph" in ms:
            best = min(peers, key=peers.get)
            res.setdefault("best_peer", {})[key] = dict(peer=best, ms=peers[best], shapeml_graph=ms["shapeml_graph"],
                                                        ratio=ms["shapeml_graph"] / peers[best])
            print(f"  {key:11s} best peer {best} {peers[best]:.4f} ms: shapeml graph / best = {ms['shapeml_graph'] / peers[best]:.2f}")
            if "shapeml_3xtf32_graph" in ms:
                res["best_peer"][key]["shapeml_3xtf32_graph"] = ms["shapeml_3xtf32_graph"]
                res["best_peer"][key]["ratio_3xtf32"] = ms["shapeml_3xtf32_graph"] / peers[best]


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
    r.add_argument("--no-autotune", action="store_true", help="skip torch.compile max-autotune-no-cudagraphs (minutes of compiling)")
    r.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds per (size, dtype)")
    r.add_argument("--sizes", default="small,large,gqa", help="the block sizes to time (every size is checked; gqa: the small grouped-query block)")
    a = ap.parse_args()
    if a.cmd == "build":
        return cmd_build(a)
    import shapeml
    a.has_graph = "graph" in shapeml.Module.call_into.__code__.co_varnames
    return cmd_run(a)


if __name__ == "__main__":
    sys.exit(main())
