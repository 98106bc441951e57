#!/usr/bin/env python3
"""StoryLM-0 training (examples/storylm0.sml, examples/storylm0/) against an
independent PyTorch replica (tests/golden/storylm0_torch.py):

  gradients   nll_grad's gradient (a Model: 22 tensors) of the whole decoder (the summed NLL)
              against PyTorch autograd in float64, from the same float32
              weights and random tokens: relative Frobenius error of each
              <= 1e-4 (float32 rounding through a 190-binding reverse sweep;
              measured 1e-7..1e-6), the loss <= 1e-5
  sgd curve   40 epochs of full-batch SGD from the same initial weights,
              shapeml (float32) and PyTorch float32 each against PyTorch
              float64: SGD at this rate amplifies rounding (PyTorch's own
              float32 curve ends ~1e-2 from float64's), so shapeml's
              largest loss difference from float64 must be within 2x
              PyTorch float32's, and within 1e-4 over the first 20 epochs
              (before the amplification); the final weights close
  adamw       10 AdamW steps vs torch.optim.AdamW: losses within 1e-4
              relative, weights within 1e-4 relative
  checkpoint  storylm0-checkpoint-v2 round-trips bit for bit; a wrong
              version, a missing weight, a wrong shape and a non-.npz file
              are each a CheckpointError that names the problem
  rollout     the 32-token greedy rollout from the trained weights equals
              the locked fixture tests/golden/fixtures/storylm0_rollout.txt
              token for token; PyTorch's greedy decoding from the same
              weights gives the same tokens (an independent forward)
  bf16        the same source in bf16 (Ty = bf16 from the inputs): the
              logits of the learned weights against PyTorch float64 within
              2x PyTorch bf16's own error
  learned     train.py's recipe (AdamW, ADAMW_STEPS steps on every shifted
              window, decoding with the training window) rolls out the
              corpus itself from "once", and PyTorch decodes the same

Usage: /usr/bin/python3 tests/golden/test_storylm0.py BUILD_DIR
Last line: `golden-storylm0: N passed, M failed`.
"""
import os
import sys
import tempfile
import time

import numpy as np
import torch

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "examples", "storylm0"))
import storylm0 as S  # noqa: E402
import storylm0_torch as R  # noqa: E402

FIXTURE = os.path.join(HERE, "fixtures", "storylm0_rollout.txt")
PROMPT = "once"


class Results:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, name, ok, detail):
        print(f"{name:<40} {detail:<60} {'PASS' if ok else 'FAIL'}", flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build/default"
    torch.set_num_threads(1)
    res = Results()
    t0 = time.perf_counter()
    m = S.compile_program(S.library(build))
    tokens, targets, _ = S.corpus_windows()
    w0 = S.init_weights()

    # gradients of the whole decoder, at random tokens and perturbed weights
    rng = np.random.default_rng(7)
    for B, T in [(2, 5), (3, 16)]:
        toks = rng.integers(0, S.V, (B, T)).astype(np.int64)
        tgts = rng.integers(0, S.V, (B, T)).astype(np.int64)
        w = {k: (v + 0.1 * rng.standard_normal(v.shape)).astype(np.float32) for k, v in w0.items()}
        out = m.call("nll_grad", toks, tgts, *[w[k] for k in S.NAMES])
        p = R.params(w, torch.float64)
        loss = R.nll_sum(torch.from_numpy(toks), torch.from_numpy(tgts), p)
        loss.backward()
        e_loss = abs(float(out[0].reshape(())) - loss.item()) / abs(loss.item())
        errs = {k: rel(g, p[k].grad.numpy()) for k, g in zip(S.NAMES, out[1:])}
        worst = max(errs, key=errs.get)
        res.check(f"gradients B={B} T={T}", e_loss <= 1e-5 and errs[worst] <= 1e-4,
                  f"loss {e_loss:.1e}, worst grad {worst} {errs[worst]:.1e}")

    # the SGD loss curve
    losses, w_sgd, step_s = S.train_sgd(m, w0, tokens, targets)
    t1 = time.perf_counter()
    ref_losses, ref_w = R.train_sgd(w0, tokens, targets, S.EPOCHS, S.LR)
    torch_s = (time.perf_counter() - t1) / S.EPOCHS
    f64_losses, f64_w = R.train_sgd(w0, tokens, targets, S.EPOCHS, S.LR, dtype=torch.float64)
    diff = [abs(a - b) for a, b in zip(losses, f64_losses)]
    ref_diff = [abs(a - b) for a, b in zip(ref_losses, f64_losses)]
    res.check("sgd loss curve (40 epochs)", len(losses) == S.EPOCHS and max(diff) <= 2 * max(ref_diff) + 1e-5 and max(diff[:20]) <= 1e-4,
              f"vs float64: max |diff| {max(diff):.1e} (PyTorch f32 {max(ref_diff):.1e}), first 20 {max(diff[:20]):.1e}")
    res.check("sgd learns", losses[-1] < 0.25 * losses[0], f"loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    # Forty steps at this rate amplify rounding: two float32 implementations may
    # end apart by more than either is from float64 (how far depends on the
    # CPU's kernels). The weights must be close to PyTorch float32's (1e-2), or
    # within 2x PyTorch float32's own distance from float64, as the loss curve.
    we = max(rel(w_sgd[k], f64_w[k]) for k in S.NAMES)
    wr = max(rel(ref_w[k], f64_w[k]) for k in S.NAMES)
    wt = max(rel(w_sgd[k], ref_w[k]) for k in S.NAMES)
    res.check("sgd final weights", wt <= 1e-2 or we <= 2 * wr + 1e-5,
              f"vs PyTorch f32 {wt:.1e}; vs float64 {we:.1e} (PyTorch f32 {wr:.1e})")
    print(f"# time per SGD step: shapeml {step_s * 1e3:.2f} ms, PyTorch {torch_s * 1e3:.2f} ms (eager, 1 thread)")

    # AdamW
    a_losses, a_w, _, _ = S.train_adamw(m, w0, tokens, targets, 10)
    r_losses, r_w = R.train_adamw(w0, tokens, targets, 10, S.ADAMW)
    el = max(abs(a - b) / abs(b) for a, b in zip(a_losses, r_losses))
    ew = max(rel(a_w[k], r_w[k]) for k in S.NAMES)
    res.check("adamw 10 steps", el <= 1e-4 and ew <= 1e-4, f"loss {el:.1e}, weights {ew:.1e}")

    # checkpoint
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "ckpt.npz")
        S.save_checkpoint(path, w_sgd)
        back = S.load_checkpoint(path)
        same = all(back[k].dtype == np.float32 and np.array_equal(back[k].view(np.uint32), w_sgd[k].view(np.uint32)) for k in S.NAMES)
        res.check("checkpoint round trip", same, "bitwise equal, float32")

        def bad(name, arrays, expect):
            p2 = os.path.join(d, name + ".npz")
            np.savez(p2, **arrays)
            try:
                S.load_checkpoint(p2)
            except S.CheckpointError as ex:
                res.check(f"checkpoint rejects {name}", expect in str(ex), str(ex)[-60:])
                return
            res.check(f"checkpoint rejects {name}", False, "loaded")
        good = {k: w_sgd[k] for k in S.NAMES}
        v2 = np.array([2], np.int64)
        bad("version-1", dict(good, format_version=np.array([1], np.int64)), "format_version [1]")  # the one-block model's
        bad("version-3", dict(good, format_version=np.array([3], np.int64)), "format_version [3]")
        bad("no-version", good, "no `format_version`")
        bad("missing-weight", {k: v for k, v in dict(good, format_version=v2).items() if k != "b2.wq"}, "weight `b2.wq` is missing")
        bad("wrong-shape", dict(good, format_version=v2, **{"b1.g1": np.ones(5, np.float32)}), "float32[32]")
        junk = os.path.join(d, "junk.npz")
        with open(junk, "w") as f:
            f.write("not a zip")
        try:
            S.load_checkpoint(junk)
            res.check("checkpoint rejects junk", False, "loaded")
        except S.CheckpointError as ex:
            res.check("checkpoint rejects junk", "not a readable .npz" in str(ex), str(ex)[-60:])

    # the locked rollout
    toks = S.greedy(m, w_sgd, PROMPT)
    text = S.decode(toks)
    with open(FIXTURE, encoding="utf-8") as f:
        lines = f.read().splitlines()
    want = [int(t) for t in lines[1].split()]
    res.check("rollout = fixture", toks == want, repr(text))
    ref = R.greedy(w_sgd, S.encode(PROMPT), 32)
    res.check("rollout = PyTorch greedy", ref == toks, repr(S.decode(ref)))

    # The recipe that learns the corpus (train.py's default): AdamW on every
    # shifted window, decoded with the training window. The golden value is
    # the corpus itself; PyTorch's greedy decoding of the same weights with
    # the same window agrees token for token.
    xs, ys, text = S.shifted_windows()
    _, w_learned, _, _ = S.train_adamw(m, w0, xs, ys, S.ADAMW_STEPS)
    toks = S.greedy(m, w_learned, PROMPT, window=S.T)
    res.check(f"adamw {S.ADAMW_STEPS} steps reproduce the corpus", S.decode(toks) == text[:len(toks)], repr(S.decode(toks)))
    ref = R.greedy(w_learned, S.encode(PROMPT), 32, window=S.T)
    res.check("learned rollout = PyTorch greedy", ref == toks, repr(S.decode(ref)))

    # The same source in bf16: one program for f32 and bf16 (spec §3.5).
    xb = xs[:4]
    zb = np.asarray(m.call("logits", xb, *[S.shapeml.bf16(w_learned[k]) for k in S.NAMES])[0], np.float64)
    z64 = R.logits(torch.from_numpy(xb), {k: torch.tensor(w_learned[k], dtype=torch.float64) for k in S.NAMES}).numpy()
    zt = R.logits(torch.from_numpy(xb), {k: torch.tensor(w_learned[k]).to(torch.bfloat16) for k in S.NAMES}).float().numpy()
    e_bf, e_torch = rel(zb, z64), rel(zt, z64)
    res.check("bf16 logits vs float64", np.isfinite(zb).all() and e_bf <= 2 * e_torch, f"{e_bf:.1e} (PyTorch bf16 {e_torch:.1e})")
    print(f"# golden-storylm0: {time.perf_counter() - t0:.1f} s")
    print(f"golden-storylm0: {res.passed} passed, {res.failed} failed")
    return 0 if res.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
