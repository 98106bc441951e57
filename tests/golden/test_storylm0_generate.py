#!/usr/bin/env python3
"""StoryLM-0 generation (issue 14) from the locked checkpoint
tests/golden/fixtures/storylm0-checkpoint-v2.npz:

  fixture       greedy and Gumbel-max (seeds 1 and 2) rollouts, prefill ->
                32 tokens with the KV cache padded to T_max = 36, equal the
                locked tokens (fixtures/storylm0_generate.txt) exactly — JIT
                (libshapeml.so) and AOT (a shared object run by
                libshapeml_runtime.so)
  padding       the padded cache and a cache that grows by one position per
                token give identical tokens (greedy and sampled)
  full forward  KV-cache greedy decoding equals greedy decoding by the full
                static T = 36 forward (no cache) — the cache changes nothing
  PyTorch       a PyTorch replica with its own KV cache (torch.cat, no
                padding), picking with the same argmax / SplitMix64 Gumbel-max,
                gives the same tokens
  generator     SplitMix64's first outputs for seed 1234567 equal the
                published reference values (Vigna's splitmix64.c)
  checkpoint    a wrong format version is refused with a message naming it
  speed         decode ms/token and tokens/s: shapeml (padded, one
                specialization) vs the growing cache (a specialization per
                token) vs PyTorch's KV cache, reported, not asserted

Usage: /usr/bin/python3 tests/golden/test_storylm0_generate.py BUILD_DIR
Last line: `golden-storylm0-generate: N passed, M failed`.
"""
import os
import sys
import tempfile

import numpy as np
import torch

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "examples", "storylm0"))
import generate as G  # noqa: E402
import storylm0 as S  # noqa: E402
import storylm0_torch as R  # noqa: E402

FIX = os.path.join(HERE, "fixtures")


def fixture():
    out = {}
    with open(os.path.join(FIX, "storylm0_generate.txt"), encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                mode, *toks = line.split()
                out[None if mode == "greedy" else int(mode.split("=")[1])] = [int(t) for t in toks]
    return out


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build/default"
    torch.set_num_threads(1)
    passed = failed = 0

    def check(name, ok, detail=""):
        nonlocal passed, failed
        print(f"{name:<44} {detail:<56} {'PASS' if ok else 'FAIL'}", flush=True)
        passed, failed = passed + ok, failed + (not ok)

    # SplitMix64 against Vigna's reference (splitmix64.c, seed 1234567)
    r = S.SplitMix64(1234567)
    want = [6457827717110365317, 3203168211198807973, 9817491932198370423, 4593380528125082431, 16408922859458223821]
    got = [r.next() for _ in want]
    check("splitmix64 reference outputs", got == want, f"{got[0]} ...")

    w = S.load_checkpoint(os.path.join(FIX, "storylm0-checkpoint-v2.npz"))
    fx = fixture()
    jit = S.compile_program(S.library(build))
    aot = G.aot_module(build, len(S.encode("once")))
    tg = []  # the growing cache's first run: each token compiles a new specialization
    for seed, want in fx.items():
        mode = "greedy" if seed is None else f"seed={seed}"
        a = S.generate(jit, w, "once", sample_seed=seed)
        check(f"JIT {mode} = fixture", a == want, repr(S.decode(a)))
        b = S.generate(aot, w, "once", sample_seed=seed)
        check(f"AOT {mode} = fixture", b == want)
        c = S.generate(jit, w, "once", sample_seed=seed, padded=False, timings=tg if not tg else None)
        check(f"growing cache {mode} = padded", c == a)
        pick = S.argmax if seed is None else (lambda z, rr=S.SplitMix64(seed): S.gumbel_max(z, rr))
        t = R.generate_kv(w, S.encode("once"), 32, pick)
        check(f"PyTorch KV cache {mode} = shapeml", t == a, repr(S.decode(t)))
    check("KV cache greedy = full T=36 forward", S.greedy(jit, w, "once") == fx[None])

    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "v1.npz")
        np.savez(p, format_version=np.array([1], np.int64), **w)
        try:
            S.load_checkpoint(p)
            check("checkpoint version 1 refused", False, "loaded")
        except S.CheckpointError as ex:
            check("checkpoint version 1 refused", "format_version [1]" in str(ex) and "reads version 2" in str(ex), str(ex)[-56:])

    # decode speed (reported)
    tp, tt = [], []
    S.generate(jit, w, "once", timings=tp)
    R.generate_kv(w, S.encode("once"), 32, S.argmax, times=tt)
    pad = float(np.median(tp[1][1:])) * 1e3
    grow = float(np.median(tg[1])) * 1e3
    ref = float(np.median(tt)) * 1e3
    print(f"# decode per token: shapeml padded {pad:.3f} ms ({1e3 / pad:.0f} tokens/s), growing cache {grow:.1f} ms "
          f"(first run: a new specialization compiled for each token), PyTorch KV cache {ref:.3f} ms ({1e3 / ref:.0f} tokens/s); "
          f"shapeml / PyTorch = {pad / ref:.2f}")
    print(f"golden-storylm0-generate: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
