#!/usr/bin/env python3
"""The transformer block on the CPU at the issue's large size (B4 S512 D2048
H16 F5632) against PyTorch in float64 (and PyTorch fp32's own error), the
same gate as the GPU check: relative Frobenius error <= 2x PyTorch fp32's +
1e-6, max|err|/max|ref| <= 1e-3. Not in CI (a ~210 GFLOP call on one core).

  /usr/bin/python3 bench/transformer_cpu_large.py [BUILD_DIR]
"""
import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "sdk-examples", "python"))
import shapeml  # noqa: E402
from transformer_gpu import SIZES, make_inputs, max_rel, rel_fro, torch_block  # noqa: E402

build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build", "default")
s = SIZES["large"]
lib = shapeml.Library(os.path.join(build, "libshapeml.so"))
mod = lib.compile(open(os.path.join(HERE, "..", "examples", "transformer_block.sml")).read(), "transformer_block.sml")
ins = make_inputs(s)
t0 = time.perf_counter()
(y,) = mod.call("block", *ins)
t_call = time.perf_counter() - t0
t = [torch.from_numpy(a) for a in ins]
ref64 = torch_block([a.double() for a in t], s["H"], s["H"]).numpy()
ref32 = torch_block(t, s["H"], s["H"]).numpy()
e, et, mr = rel_fro(y, ref64), rel_fro(ref32, ref64), max_rel(y, ref64)
ok = e <= 2 * et + 1e-6 and mr <= 1e-3
print(f"CPU block large: rel_err {e:.3g} (PyTorch fp32 {et:.3g}), max_rel {mr:.3g}, JIT + call {t_call:.1f} s: {'PASS' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)
