#!/usr/bin/env python3
"""Generates text with StoryLM-0 from a storylm0-checkpoint-v2: prefill the
prompt, then decode one token at a time with the KV cache padded to a static
T_max = 36 (every step runs the same compiled specialization). Greedy by
default; --seed N samples by Gumbel-max with SplitMix64(N) uniforms (the
same seed gives the same tokens on every machine).

Usage: generate.py [BUILD_DIR] [--checkpoint PATH] [--prompt TEXT] [--tokens N]
                   [--seed N] [--aot]
  --checkpoint  default: the locked one, tests/golden/fixtures/storylm0-checkpoint-v2.npz
  --aot         build prefill/decode ahead of time into a shared object and run it
                with libshapeml_runtime.so (no compiler in the process)
"""
import argparse
import os
import sys
import tempfile
import time

for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(v, "1")
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import storylm0 as S  # noqa: E402

DEFAULT_CHECKPOINT = os.path.join(S.ROOT, "tests", "golden", "fixtures", "storylm0-checkpoint-v2.npz")


def aot_module(build, prompt_len, t_max=S.T_MAX):
    """prefill (at the prompt's length) and decode (at T_max) in a shared
    object, loaded by the runtime library alone."""
    lib = S.library(build)
    with open(S.SOURCE, encoding="utf-8") as f:
        src = f.read()
    # The program is generic in its dtype Ty and device Dv (spec §3.5): an AOT build binds them.
    dims = f"Ty=f32,Dv=host,V={S.V},D={S.D},H={S.H},Dh={S.DH},F={S.F}"
    out = os.path.join(tempfile.mkdtemp(prefix="storylm0-"), "storylm0.so")
    lib.build(src, [f"prefill:T={prompt_len},{dims}", f"decode:Tm={t_max},{dims}"], out, name="storylm0.sml",
              target=S.shapeml.TARGET_X86_64)
    return S.shapeml.Library(os.path.join(build, "libshapeml_runtime.so")).load(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", nargs="?", default="build/default")
    ap.add_argument("--checkpoint", default=DEFAULT_CHECKPOINT)
    ap.add_argument("--prompt", default="once")
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--aot", action="store_true")
    a = ap.parse_args()
    try:
        w = S.load_checkpoint(a.checkpoint)
    except S.CheckpointError as ex:
        print(f"error: {ex}", file=sys.stderr)
        return 1
    t0 = time.perf_counter()
    module = aot_module(a.build, len(S.encode(a.prompt))) if a.aot else S.compile_program(S.library(a.build))
    timings = []
    toks = S.generate(module, w, a.prompt, a.tokens, sample_seed=a.seed, timings=timings)
    steps = timings[1][1:] or timings[1]  # the first decode step compiles (JIT)
    print(f"{'greedy' if a.seed is None else f'Gumbel-max, seed {a.seed}'}: {S.decode(toks)!r}")
    print(f"tokens: {' '.join(map(str, toks))}")
    print(f"decode: {1e3 * sum(steps) / len(steps):.3f} ms per token ({len(steps) / sum(steps):.0f} tokens/s), "
          f"{time.perf_counter() - t0:.1f} s in all ({'AOT' if a.aot else 'JIT'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
