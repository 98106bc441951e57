#!/usr/bin/env python3
"""Causal attention alone on the GPU (issue 22 item 1): shapeml's fused
`attention` launch (bench/attention_gpu.sml: the block's attention reading
q, k, v as a projection leaves them, [B S H Dh], and writing the context as
the output projection reads it), run by cuDNN's fused attention (`shapeml`,
the default plan) and by shapeml's own kernel (`shapeml_own`, built with
--gpu-cudnn-attention off), beside PyTorch's scaled_dot_product_attention
back ends on the same strided views: cuDNN, FlashAttention-2,
memory-efficient attention.

  # here: the module, one specialization per shape
  /usr/bin/python3 bench/attention_gpu.py build --shapemlc build/default/shapemlc --out DIR
  # on the GPU machine
  python3 bench/attention_gpu.py run --runtime LIB --dir DIR [--json OUT]

Every candidate is a CUDA graph replay (shapeml's plan graph; PyTorch's SDPA
call captured with torch.cuda.graph), timed in interleaved rounds (the
median of the rounds). Accuracy: relative Frobenius error against float64
attention on the same bf16 inputs; shapeml must stay within 2x the best
PyTorch back end's error (the exit status; never a timing).
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "sdk-examples", "python"))
sys.path.insert(0, HERE)
import transformer_gpu as tg  # noqa: E402  (its interleaved timing rounds)

SOURCE = os.path.join(HERE, "attention_gpu.sml")

# (B, S, H, Dh): the large and small transformer blocks' attention, then longer
# sequences and the other common head dimension.
SHAPES = [(4, 512, 16, 128), (4, 128, 4, 64), (8, 1024, 16, 64), (2, 2048, 16, 128), (1, 4096, 32, 64), (1, 4096, 16, 128)]


def key(s):
    return "B{}_S{}_H{}_Dh{}".format(*s)


def cmd_build(a):
    os.makedirs(a.out, exist_ok=True)
    # The default plan (its attention on cuDNN where the plugin finds it) and the own kernel's.
    for name, extra in (("attention_bf16.so", []), ("attention_bf16_own.so", ["--gpu-cudnn-attention", "off"])):
        cmd = [a.shapemlc, "build", SOURCE, "-o", os.path.join(a.out, name), "--target", "x86-64"] + extra
        for b, s, h, dh in SHAPES:
            cmd += ["--bind", f"attn:T=bf16,Dv=cuda0,B={b},S={s},H={h},Dh={dh}"]
        subprocess.run(cmd, check=True)
    print(f"built {a.out}/attention_bf16{{,_own}}.so ({len(SHAPES)} shapes)")
    return 0


def cmd_run(a):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import shapeml
    lib = shapeml.Library(a.runtime)
    dev = shapeml.Device(lib, 0)
    mods = {"shapeml": lib.load(os.path.join(a.dir, "attention_bf16.so"))}
    if os.path.exists(os.path.join(a.dir, "attention_bf16_own.so")):
        mods["shapeml_own"] = lib.load(os.path.join(a.dir, "attention_bf16_own.so"))
    cuda = torch.device("cuda:0")
    backends = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION}
    res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
           "ms": {}, "rel_err": {}, "checks": []}
    ok = True
    rng = np.random.default_rng(0)
    for shape in SHAPES:
        B, S, H, Dh = shape
        k = key(shape)
        host = [rng.standard_normal((B, S, H, Dh)).astype(np.float32) for _ in range(3)]
        t = [torch.from_numpy(x).to(cuda).to(torch.bfloat16) for x in host]  # [B S H Dh], the projection's layout
        ins = [dev.upload(shapeml.bf16(x)) for x in host]
        out = dev.upload(shapeml.bf16(np.zeros((B, S, H, Dh), np.float32)))
        q, kk, v = (x.transpose(1, 2) for x in t)  # [B H S Dh] views, no copies
        ref = F.scaled_dot_product_attention(q.double(), kk.double(), v.double(), is_causal=True).transpose(1, 2)
        refn = torch.linalg.vector_norm(ref).item()

        def err(y):
            return (torch.linalg.vector_norm(y.double() - ref) / refn).item()

        cands, errs = {}, {}
        for mname, mod in mods.items():
            mod.call_into("attn", ins, [out], graph=1)
            dev.sync()
            y = torch.from_numpy(np.asarray(dev.download(out), np.float32)).to(cuda)
            errs[mname] = err(y)
            cands[mname] = lambda mod=mod: mod.call_into("attn", ins, [out], graph=1)
        for name, be in backends.items():
            try:
                with sdpa_kernel([be]):
                    o = F.scaled_dot_product_attention(q, kk, v, is_causal=True)
                    errs[name] = err(o.transpose(1, 2))
                    st = torch.cuda.Stream()
                    st.wait_stream(torch.cuda.current_stream())
                    with torch.cuda.stream(st):
                        for _ in range(3):
                            F.scaled_dot_product_attention(q, kk, v, is_causal=True)
                    torch.cuda.current_stream().wait_stream(st)
                    g = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(g):
                        F.scaled_dot_product_attention(q, kk, v, is_causal=True)
                cands[name] = g.replay
            except Exception as e:  # noqa: BLE001  (a back end may not take a shape)
                print(f"  {k}: PyTorch {name} unavailable: {str(e).splitlines()[0][:160]}", file=sys.stderr)

        def sync():
            torch.cuda.synchronize()
            dev.sync()

        got = tg.rounds({n: (fn, sync) for n, fn in cands.items()}, 200 if S <= 512 else 50, a.rounds)
        ms = {n: v[0] for n, v in got.items()}
        res["ms"][k], res["rel_err"][k] = ms, errs
        best_err = min((e for n, e in errs.items() if not n.startswith("shapeml")), default=float("nan"))
        passed = True
        for mname in mods:
            p = bool(np.isfinite(errs[mname]) and errs[mname] <= 2 * best_err + 1e-4)
            res["checks"].append(dict(name=f"{k} {mname} vs float64 within 2x PyTorch's best", passed=p, rel_err=errs[mname], torch_best=best_err))
            passed &= p
        ok &= passed
        print(f"  {'PASS' if passed else 'FAIL'} {k}: " + ", ".join(f"{n} {ms[n]:.4f} ms (err {errs[n]:.2e})" for n in ms), flush=True)
        for x in ins + [out]:
            dev.free(x)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(res, f, indent=2)
    res["passed"] = ok
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)
    print(f"attention on GPU: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--shapemlc", required=True)
    b.add_argument("--out", required=True)
    r = sub.add_parser("run")
    r.add_argument("--runtime", required=True)
    r.add_argument("--dir", required=True)
    r.add_argument("--rounds", type=int, default=5)
    r.add_argument("--json")
    a = ap.parse_args()
    return cmd_build(a) if a.cmd == "build" else cmd_run(a)


if __name__ == "__main__":
    sys.exit(main())
