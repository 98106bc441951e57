#!/usr/bin/env python3
"""examples/llama.sml (a two-layer LLaMA-style decoder: RoPE, grouped-query
attention, SwiGLU, RMSNorm; the model one bundle, AdamW mapped over its
fields) against the same model written in PyTorch, in float64:

  abi       train_step's parameters are the three model bundles' fields in
            declared order (w.emb, w.l1.g1, w.l1.wq, ...), then the data
  logits    relative Frobenius error <= 1e-5 (float32 against float64)
  loss      relative error <= 1e-5
  adamw     three training steps (weights and moments fed back) against
            torch.optim.AdamW: each step's loss within 1e-5 relative, every
            weight within 1e-5 of the reference, relative to its largest
            element

Sizes: B 2, T 7, V 23, D 16, Hk 2 key/value heads shared by G 2 query heads
each (H 4), head dim 6 (Q 3), F 24: odd where the language allows, and the
heads' width (24) unlike D.

Usage: /usr/bin/python3 tests/golden/test_llama.py BUILD_DIR
Last line: `golden-llama: N passed, M failed`; exit status 1 on any failure.
"""
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "sdk-examples", "python"))
import shapeml  # noqa: E402

B, T, V, D, HK, G, Q, F = 2, 7, 23, 16, 2, 2, 3, 24
H, DH = HK * G, 2 * Q
LAYER = [("g1", (D,)), ("wq", (D, H, DH)), ("wk", (D, HK, DH)), ("wv", (D, HK, DH)), ("wo", (H, DH, D)), ("g2", (D,)),
         ("w_gate", (D, F)), ("w_up", (D, F)), ("w_down", (F, D))]
FIELDS = [("emb", (V, D))] + [(f"l{i}.{n}", s) for i in (1, 2) for n, s in LAYER] + [("g_final", (D,)), ("w_out", (D, V))]


def rms(x, g):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-5) * g


def rope(x):  # x [B T H 2Q]
    freq = 10000.0 ** (-torch.arange(Q, dtype=x.dtype) / Q)
    ang = torch.arange(T, dtype=x.dtype)[:, None] * freq[None, :]
    c = torch.cat([ang.cos(), ang.cos()], -1)[None, :, None, :]
    s = torch.cat([ang.sin(), ang.sin()], -1)[None, :, None, :]
    rot = torch.cat([-x[..., Q:], x[..., :Q]], -1)
    return x * c + rot * s


def layer(x, p):
    xr = x.reshape(B * T, D)
    n1 = rms(xr, p["g1"])
    q = rope((n1 @ p["wq"].reshape(D, H * DH)).reshape(B, T, H, DH)).permute(0, 2, 1, 3)
    k = rope((n1 @ p["wk"].reshape(D, HK * DH)).reshape(B, T, HK, DH)).permute(0, 2, 1, 3).repeat_interleave(G, dim=1)
    v = (n1 @ p["wv"].reshape(D, HK * DH)).reshape(B, T, HK, DH).permute(0, 2, 1, 3).repeat_interleave(G, dim=1)
    sc = (q @ k.transpose(-1, -2)) / DH ** 0.5
    sc = sc.masked_fill(~torch.tril(torch.ones(T, T, dtype=torch.bool)), float("-inf"))
    att = (sc.softmax(-1) @ v).permute(0, 2, 1, 3).reshape(B * T, H * DH)
    h = xr + att @ p["wo"].reshape(H * DH, D)
    n2 = rms(h, p["g2"])
    return (h + (torch.nn.functional.silu(n2 @ p["w_gate"]) * (n2 @ p["w_up"])) @ p["w_down"]).reshape(B, T, D)


def forward(w, tokens):
    x = w["emb"][tokens]
    for i in (1, 2):
        x = layer(x, {n: w[f"l{i}.{n}"] for n, _ in LAYER})
    return (rms(x.reshape(B * T, D), w["g_final"]) @ w["w_out"]).reshape(B, T, V)


def loss_of(w, tokens, targets):
    lp = forward(w, tokens).log_softmax(-1)
    return -lp.gather(-1, targets[..., None]).mean()


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "default")
    lib = shapeml.Library(os.path.join(build, "libshapeml.so.0"))
    mod = lib.compile(open(os.path.join(ROOT, "examples", "llama.sml")).read(), "llama.sml")
    passed = failed = 0

    def check(name, ok, detail=""):
        nonlocal passed, failed
        print(f"{name:<30} {detail:<60} {'PASS' if ok else 'FAIL'}", flush=True)
        passed, failed = passed + bool(ok), failed + (not ok)

    step = mod.entry("train_step")
    names = [p.name for p in step.params]
    want = [f"{b}.{n}" for b in ("w", "m", "v") for n, _ in FIELDS] + ["tokens", "targets", "lr", "b1", "b2", "eps", "wd", "t"]
    check("abi: bundles' fields, then data", names == want, f"{len(names)} parameters, {names[1]} {names[2]} ...")

    rng = np.random.default_rng(11)
    w = {}
    for n, s in FIELDS:
        w[n] = (1 + 0.1 * rng.standard_normal(s) if n.endswith(("g1", "g2", "g_final")) else rng.standard_normal(s) / np.sqrt(s[0])).astype(np.float32)
    tokens = rng.integers(0, V, (B, T)).astype(np.int64)
    targets = rng.integers(0, V, (B, T)).astype(np.int64)
    tw = {n: torch.tensor(a, dtype=torch.float64, requires_grad=True) for n, a in w.items()}
    tt, tg = torch.tensor(tokens), torch.tensor(targets)

    (z,) = mod.call("logits", tokens, *[w[n] for n, _ in FIELDS])
    with torch.no_grad():
        z_ref = forward(tw, tt).numpy()
        l_ref = float(loss_of(tw, tt, tg))
    e = rel(z, z_ref)
    check("logits vs PyTorch float64", e <= 1e-5, f"relative error {e:.1e}")
    (l,) = mod.call("loss", tokens, targets, *[w[n] for n, _ in FIELDS])
    e = abs(float(l) - l_ref) / abs(l_ref)
    check("loss vs PyTorch float64", e <= 1e-5, f"{float(l):.6f} vs {l_ref:.6f}, relative {e:.1e}")

    hp = {k: float(np.float32(x)) for k, x in dict(lr=0.01, b1=0.9, b2=0.999, eps=1e-8, wd=0.01).items()}
    opt = torch.optim.AdamW([tw[n] for n, _ in FIELDS], lr=hp["lr"], betas=(hp["b1"], hp["b2"]), eps=hp["eps"], weight_decay=hp["wd"])
    cur = [w[n] for n, _ in FIELDS]
    mom = [np.zeros_like(a) for a in cur]
    vel = [np.zeros_like(a) for a in cur]
    k = len(FIELDS)
    worst_l = worst_w = 0.0
    for t in range(1, 4):
        scal = [np.array(hp[x], np.float32) for x in ("lr", "b1", "b2", "eps", "wd")] + [np.array(t, np.float32)]
        out = step(*cur, *mom, *vel, tokens, targets, *scal)
        cur, mom, vel = list(out[1:1 + k]), list(out[1 + k:1 + 2 * k]), list(out[1 + 2 * k:1 + 3 * k])
        opt.zero_grad()
        lt = loss_of(tw, tt, tg)
        lt.backward()
        opt.step()
        worst_l = max(worst_l, abs(float(out[0]) - float(lt)) / abs(float(lt)))
        for (n, _), a in zip(FIELDS, cur):
            r = tw[n].detach().numpy()
            worst_w = max(worst_w, float(np.abs(a - r).max() / np.abs(r).max()))
    check("adamw: 3 steps vs torch.optim.AdamW", len(out) == 1 + 3 * k and worst_l <= 1e-5 and worst_w <= 1e-5,
          f"losses {worst_l:.1e}, weights {worst_w:.1e}")
    print(f"golden-llama: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
