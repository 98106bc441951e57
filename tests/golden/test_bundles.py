#!/usr/bin/env python3
"""Parameter bundles (spec §4.32) end to end, against PyTorch in float64:
examples/mlp_bundles.sml's `step` (a two-layer MLP as one bundle, its
gradient as a bundle, one SGD function over the whole model) called through
the C ABI:

  abi       the parameters are the bundle's fields in declared order under
            their dotted names (m.l1.w, m.l1.b, m.l2.w, m.l2.b), then x, y, lr
  loss      the summed squared error within 1e-5 relative
  update    every updated weight equals w - lr * dL/dw from autograd within
            1e-5 (float32 through a reverse sweep)
  loop      20 steps lower the loss (the bundle returned feeds the next step)

Usage: /usr/bin/python3 tests/golden/test_bundles.py BUILD_DIR
Last line: `golden-bundles: N passed, M failed`; exit status 1 on any failure.
"""
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "sdk-examples", "python"))
import shapeml  # noqa: E402


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "default")
    lib = shapeml.Library(os.path.join(build, "libshapeml.so.0"))
    src = open(os.path.join(ROOT, "examples", "mlp_bundles.sml")).read()
    step = lib.compile(src, "mlp_bundles.sml").entry("step")
    passed = failed = 0

    def check(name, ok, detail=""):
        nonlocal passed, failed
        print(f"{name:<34} {detail:<56} {'PASS' if ok else 'FAIL'}", flush=True)
        passed, failed = passed + bool(ok), failed + (not ok)

    names = [p.name for p in step.params]
    check("abi: fields in declared order", names == ["m.l1.w", "m.l1.b", "m.l2.w", "m.l2.b", "x", "y", "lr"], " ".join(names))
    rng = np.random.default_rng(7)
    N, D, F = 6, 5, 8
    w = [(rng.standard_normal(s) * 0.5).astype(np.float32) for s in ((D, F), (F,), (F, D), (D,))]
    x = rng.standard_normal((N, D)).astype(np.float32)
    y = rng.standard_normal((N, D)).astype(np.float32)
    lr = np.array(0.05, np.float32)
    out = step(*w, x, y, lr)
    t = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in w]
    h = torch.tanh(torch.tensor(x, dtype=torch.float64) @ t[0] + t[1])
    d = h @ t[2] + t[3] - torch.tensor(y, dtype=torch.float64)
    loss = (d * d).sum()
    loss.backward()
    rel = abs(float(out[0]) - float(loss)) / float(loss)
    check("loss", rel <= 1e-5, f"relative error {rel:.1e}")
    worst = max(float(np.abs(got - (p - 0.05 * p.grad).detach().numpy()).max()) for got, p in zip(out[1:], t))
    check("update of every weight", len(out) == 5 and worst <= 1e-5, f"max abs error {worst:.1e}")
    losses, ws = [], list(out[1:])
    for _ in range(20):
        res = step(*ws, x, y, lr)
        losses.append(float(res[0]))
        ws = list(res[1:])
    check("20 steps lower the loss", losses[-1] < 0.5 * float(out[0]), f"{float(out[0]):.3f} -> {losses[-1]:.3f}")
    print(f"golden-bundles: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
