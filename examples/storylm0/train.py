#!/usr/bin/env python3
"""Trains StoryLM-0 (examples/storylm0.sml) with shapeml on one CPU thread:
by default 400 full-batch AdamW steps over every 16-character window of the
corpus in corpus.txt (the loss printed every 20 steps), which learns it: the
32-token greedy rollout from the prompt "once", decoded with the same
16-token window, is the corpus itself. Then saves storylm0-checkpoint-v2 and
prints that rollout.

Usage: train.py [BUILD_DIR] [--checkpoint PATH] [--optimizer adamw|sgd]
                [--write-fixture PATH]
  BUILD_DIR         where libshapeml.so is (default build/default)
  --checkpoint      where to write the checkpoint (default storylm0-checkpoint-v2.npz)
  --optimizer       adamw (default: 400 steps, every window) or sgd (the
                    earlier recipe: 40 epochs over three consecutive windows,
                    decoded with the whole context; it does not learn the
                    corpus)
  --write-fixture   also write the rollout as the test fixture format
"""
import argparse
import os
import sys
import time

# One thread, set before NumPy is imported (OpenBLAS sizes its pool then).
for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(v, "1")

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import storylm0 as S  # noqa: E402

PROMPT = "once"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", nargs="?", default="build/default")
    ap.add_argument("--checkpoint", default="storylm0-checkpoint-v2.npz")
    ap.add_argument("--optimizer", choices=("adamw", "sgd"), default="adamw")
    ap.add_argument("--write-fixture")
    a = ap.parse_args()

    t0 = time.perf_counter()
    module = S.compile_program(S.library(a.build))
    tokens, targets, text = S.corpus_windows() if a.optimizer == "sgd" else S.shifted_windows()
    print(f"StoryLM-0: V={S.V} D={S.D} H={S.H} Dh={S.DH} F={S.F}; corpus {text!r} as {tokens.shape[0]} windows of T={S.T}")
    w0 = S.init_weights()
    window = None
    if a.optimizer == "sgd":
        losses, w, step = S.train_sgd(module, w0, tokens, targets, log=print)
        print(f"time per step: {step * 1e3:.2f} ms (the first epoch also compiled the step: "
              f"{time.perf_counter() - t0:.1f} s in all)")
    else:
        def every_20(line):  # "step N  loss L"
            if int(line.split()[1]) % 20 == 0:
                print(line)
        losses, w, _, _ = S.train_adamw(module, w0, tokens, targets, S.ADAMW_STEPS, log=every_20)
        window = S.T
    S.save_checkpoint(a.checkpoint, w)
    S.load_checkpoint(a.checkpoint)  # the version and every weight check
    print(f"checkpoint: {a.checkpoint} ({S.CHECKPOINT_FORMAT})")
    toks = S.greedy(module, w, PROMPT, window=window)
    print(f"rollout: {S.decode(toks)!r}")
    print(f"tokens: {' '.join(map(str, toks))}")
    if a.write_fixture:
        with open(a.write_fixture, "w", encoding="utf-8") as f:
            f.write(f"{S.decode(toks)!r}\n{' '.join(map(str, toks))}\n")
    print(f"storylm0: trained in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
