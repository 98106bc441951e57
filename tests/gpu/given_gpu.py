#!/usr/bin/env python3
"""Device entries with the language forms of issue 25 on the GPU, against
PyTorch in float64 on the same device:

  given    tests/lit/run/Inputs/given-heads-gpu.sml built for H = 4 and
           H = 6 (scripts/gpu-stage.sh): the call gives H in its options
           (dims=), inputs and outputs are CUDA tensors (DLPack, zero copy);
           per-head sums within 1e-5; a missing H and an H the module was
           not built for are refused with their codes
  consts   tests/lit/ok/constants-follow-device.sml `scaled`: the constants
           written without a device run on the device (no host value in the
           plan), q * rsqrt(Dh) / 10000 within 1e-6 relative

Usage: given_gpu.py --runtime LIB --dir MODULES
Last line: `given-gpu: N passed, M failed`.
"""
import argparse
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "sdk-examples", "python"))
import shapeml  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runtime", required=True)
    ap.add_argument("--dir", required=True)
    a = ap.parse_args()
    lib = shapeml.Library(a.runtime)
    passed = failed = 0

    def check(name, ok, detail=""):
        nonlocal passed, failed
        print(f"{name:<44} {detail:<50} {'PASS' if ok else 'FAIL'}", flush=True)
        passed, failed = passed + bool(ok), failed + (not ok)

    e = lib.load(os.path.join(a.dir, "given.so")).entry("head_sums")
    check("given variables introspected", e.given_shape_variables == ["H"], str(e.given_shape_variables))
    x = torch.randn(2, 3, 12, device="cuda", dtype=torch.float32)
    for h in (4, 6):
        (t,) = e(x, dims={"H": h}, tensors=True)
        torch.cuda.synchronize()  # every stream: shapeml's default one included
        y = torch.from_dlpack(t)
        want = x.double().reshape(2, 3, h, 12 // h).sum(3).permute(0, 2, 1)
        err = float((y.double() - want).abs().max())
        check(f"head sums H={h} on {y.device}", y.is_cuda and tuple(y.shape) == (2, h, 3) and err < 1e-5, f"max abs error {err:.1e}")
    for dims, code in (({}, "InvalidArgumentError"), ({"H": 3}, "NotFoundError")):
        try:
            e(x, dims=dims, tensors=True)
            check(f"dims={dims} refused", False, "no error")
        except shapeml.Error as err:
            check(f"dims={dims} refused", type(err).__name__ == code, f"{type(err).__name__}: {str(err)[-40:]}")

    s = lib.load(os.path.join(a.dir, "consts.so")).entry("scaled")
    q = torch.randn(2, 3, 4, device="cuda", dtype=torch.float32)
    t, two = s(q, tensors=True)
    torch.cuda.synchronize()
    t, two = torch.from_dlpack(t), torch.from_dlpack(two)
    want = q.double() * (4 ** -0.5) / 10000.0
    rel = float(((t.double() - want).abs() / want.abs().clamp_min(1e-30)).max())
    check("constants without a device run on it", t.is_cuda and two.is_cuda and float(two) == 2.0 and rel < 1e-6, f"max rel error {rel:.1e}")
    print(f"given-gpu: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
