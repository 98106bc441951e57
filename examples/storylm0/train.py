#!/usr/bin/env python3
"""Trains StoryLM-0 (examples/storylm0.sml) with shapeml on one CPU thread:
40 epochs of full-batch SGD over the three-window corpus in corpus.txt,
the loss printed per epoch; then saves storylm0-checkpoint-v1 and prints the
32-token greedy rollout from the prompt "once".

Usage: train.py [BUILD_DIR] [--checkpoint PATH] [--optimizer sgd|adamw]
                [--write-fixture PATH]
  BUILD_DIR         where libshapeml.so is (default build/default)
  --checkpoint      where to write the checkpoint (default storylm0-checkpoint-v1.npz)
  --optimizer       sgd (default, 40 epochs) or adamw (40 steps)
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
    ap.add_argument("--checkpoint", default="storylm0-checkpoint-v1.npz")
    ap.add_argument("--optimizer", choices=("sgd", "adamw"), default="sgd")
    ap.add_argument("--write-fixture")
    a = ap.parse_args()

    t0 = time.perf_counter()
    module = S.compile_program(S.library(a.build))
    tokens, targets, text = S.corpus_windows()
    print(f"StoryLM-0: V={S.V} D={S.D} H={S.H} Dh={S.DH} F={S.F}; corpus {text!r} as {tokens.shape[0]} windows of T={S.T}")
    w0 = S.init_weights()
    if a.optimizer == "sgd":
        losses, w, step = S.train_sgd(module, w0, tokens, targets, log=print)
        print(f"time per step: {step * 1e3:.2f} ms (the first epoch also compiled the step: "
              f"{time.perf_counter() - t0:.1f} s in all)")
    else:
        losses, w, _, _ = S.train_adamw(module, w0, tokens, targets, S.EPOCHS, log=print)
    S.save_checkpoint(a.checkpoint, w)
    S.load_checkpoint(a.checkpoint)  # the version and every weight check
    print(f"checkpoint: {a.checkpoint} ({S.CHECKPOINT_FORMAT})")
    toks = S.greedy(module, w, PROMPT)
    print(f"rollout: {S.decode(toks)!r}")
    print(f"tokens: {' '.join(map(str, toks))}")
    if a.write_fixture:
        with open(a.write_fixture, "w", encoding="utf-8") as f:
            f.write(f"{S.decode(toks)!r}\n{' '.join(map(str, toks))}\n")
    print(f"storylm0: trained in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
