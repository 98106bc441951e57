#!/usr/bin/env python3
"""Time per StoryLM-0 training step (examples/storylm0.sml's sgd_step:
forward, the reverse sweep of `(grad nll_grad nll)`, SGD update) against an
independent PyTorch replica (eager: forward, autograd, torch.optim.SGD) in
the same run, both on one CPU thread, full batch B=3 x T=16.

Reported: the median over 40 steps (the first, which compiles, left out) and
the ratio shapeml / PyTorch (lower is better). No assertion on time.
Usage: /usr/bin/python3 bench/storylm0_train.py [BUILD_DIR] [--json PATH]
"""
import json
import os
import sys

for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(v, "1")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "examples", "storylm0"))
sys.path.insert(0, os.path.join(ROOT, "tests", "golden"))
import numpy as np  # noqa: E402
import torch  # noqa: E402

import storylm0 as S  # noqa: E402
import storylm0_torch as R  # noqa: E402


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    build = args[0] if args else "build/default"
    torch.set_num_threads(1)
    m = S.compile_program(S.library(build))
    tokens, targets, _ = S.corpus_windows()
    w0 = S.init_weights()
    losses, _, shapeml_s = S.train_sgd(m, w0, tokens, targets)
    times = []
    R.train_sgd(w0, tokens, targets, S.EPOCHS, S.LR, times=times)
    torch_s = float(np.median(times[1:]))
    res = {"shapeml_ms": shapeml_s * 1e3, "pytorch_eager_ms": torch_s * 1e3, "ratio": shapeml_s / torch_s, "final_loss": losses[-1]}
    print(f"storylm0 SGD step (B=3, T=16, 1 thread): shapeml {res['shapeml_ms']:.3f} ms, PyTorch eager {res['pytorch_eager_ms']:.3f} ms, "
          f"ratio {res['ratio']:.2f}")
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
