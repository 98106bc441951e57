#!/usr/bin/env python3
"""Parameter bundles (spec §4.32) and map_fields (§4.33) end to end, against
PyTorch in float64: examples/mlp_bundles.sml's `step` (a two-layer MLP as one
bundle, its gradient as a bundle, one SGD function over the whole model) and
`step_adamw` (AdamW written once for a tensor of any shape, mapped over the
model's fields) called through the C ABI:

  abi       the parameters are the bundle's fields in declared order under
            their dotted names (m.l1.w, m.l1.b, m.l2.w, m.l2.b), then x, y, lr
  loss      the summed squared error within 1e-5 relative
  update    every updated weight equals w - lr * dL/dw from autograd within
            1e-5 (float32 through a reverse sweep)
  loop      20 steps lower the loss (the bundle returned feeds the next step)
  adamw     three steps of step_adamw (weights and both moments fed back)
            against torch.optim.AdamW on the float64 model, every weight
            within 1e-5, each moment within 1e-5 of its largest element

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

    adam = lib.compile(src, "mlp_bundles.sml").entry("step_adamw")
    names = [p.name for p in adam.params]
    want = [f"{b}.{l}.{f}" for b in ("p", "m", "v") for l in ("l1", "l2") for f in ("w", "b")] + ["x", "y", "lr", "b1", "b2", "eps", "wd", "t"]
    check("abi: three bundles, then the rest", names == want, " ".join(names[:4]) + " ...")
    # float32 hyperparameters, as the program gets them (0.999 in f32 makes 1 - b2 differ from 0.001 by 1.3e-5)
    hp = {k: float(np.float32(v)) for k, v in dict(lr=0.01, b1=0.9, b2=0.999, eps=1e-8, wd=0.01).items()}
    tw = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in w]
    opt = torch.optim.AdamW(tw, lr=hp["lr"], betas=(hp["b1"], hp["b2"]), eps=hp["eps"], weight_decay=hp["wd"])
    pw, mw, vw = list(w), [np.zeros_like(a) for a in w], [np.zeros_like(a) for a in w]
    worst_w = worst_m = 0.0
    for t_step in range(1, 4):
        scal = [np.array(hp[k], np.float32) for k in ("lr", "b1", "b2", "eps", "wd")] + [np.array(t_step, np.float32)]
        res = adam(*pw, *mw, *vw, x, y, *scal)
        pw, mw, vw = list(res[1:5]), list(res[5:9]), list(res[9:13])
        opt.zero_grad()
        hh = torch.tanh(torch.tensor(x, dtype=torch.float64) @ tw[0] + tw[1])
        dd = hh @ tw[2] + tw[3] - torch.tensor(y, dtype=torch.float64)
        (dd * dd).sum().backward()
        opt.step()
        for k in range(4):
            st = opt.state[tw[k]]
            worst_w = max(worst_w, float(np.abs(pw[k] - tw[k].detach().numpy()).max()))
            for got, ref in ((mw[k], st["exp_avg"]), (vw[k], st["exp_avg_sq"])):
                r = ref.numpy()
                worst_m = max(worst_m, float(np.abs(got - r).max() / np.abs(r).max()))
    check("adamw: 3 steps vs torch.optim.AdamW", len(res) == 13 and worst_w <= 1e-5 and worst_m <= 1e-5,
          f"weights max abs {worst_w:.1e}, moments {worst_m:.1e}")
    print(f"golden-bundles: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
