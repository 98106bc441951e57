#!/usr/bin/env python3
"""Is cuDNN faster than shapeml's own kernels where it could replace them?
(Issue 9: "cuDNN where it measures faster — write down the measurement".)
The candidates among the language's operations are softmax and log_softmax
over the last axis, which cuDNN's cudnnSoftmaxForward computes
(CUDNN_SOFTMAX_ACCURATE / CUDNN_SOFTMAX_LOG, mode CHANNEL on an [R, C, 1, 1]
NCHW descriptor); matmuls already go to cuBLASLt, and the rest (elementwise,
reductions, layout) cuDNN's legacy API does not cover better.

Measured in one run on the same GPU: shapeml's plan (an AOT module with one
`softmax` / `log_softmax` entry, direct execution, output preallocated),
cudnnSoftmaxForward called through ctypes on PyTorch's buffers, and
torch.softmax / torch.log_softmax. Two figures each, ms per call, median of 5
loops of 50 calls:
  host  a synchronized loop from Python: what a Python caller sees, host
        dispatch included (ctypes marshalling dominates the small shapes)
  gpu   device time per call: the stream is first held by a sleep kernel
        long enough for the host to enqueue the whole loop, and CUDA events
        around the loop time the calls back to back (kernel time alone)
The kernel comparison is the gpu column. Results are checked against each
other (max |diff| <= 1e-5) before timing; --check-only stops there (for
profiling the kernels under Nsight Compute).

  here:   bench/cudnn_softmax_gpu.py build --shapemlc build/default/shapemlc --out DIR
  device: python3 bench/cudnn_softmax_gpu.py run --runtime .../libshapeml_runtime.so --dir DIR [--json OUT]
"""
import argparse
import ctypes as C
import glob
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "sdk-examples", "python"))
SIZES = [(4096, 4096), (16384, 1024), (512, 32000), (65536, 128), (32768, 512), (2048, 12288)]
SRC = """(module softmax_bench
  (func sm (dims R C) (params (x (tensor f32 (R C) (cuda 0)))) (returns (tensor f32 (R C) (cuda 0))) (return (softmax x :axis -1)))
  (func lsm (dims R C) (params (x (tensor f32 (R C) (cuda 0)))) (returns (tensor f32 (R C) (cuda 0))) (return (log_softmax x :axis -1))))
"""


def cmd_build(a):
    os.makedirs(a.out, exist_ok=True)
    src = os.path.join(a.out, "softmax_bench.sml")
    with open(src, "w") as f:
        f.write(SRC)
    cmd = [a.shapemlc, "build", src, "-o", os.path.join(a.out, "softmax_bench.so"), "--target", "x86-64"]
    for e in ("sm", "lsm"):
        for r, c in SIZES:
            cmd += ["--bind", f"{e}:R={r},C={c}"]
    subprocess.run(cmd, check=True)
    return 0


def load_cudnn():
    import torch
    cands = ["libcudnn.so.9"] + sorted(glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "cudnn", "lib", "libcudnn.so.9")))
    for c in cands:
        try:
            return C.CDLL(c)
        except OSError:
            continue
    return None


def timed(fn, sync, iters=50):
    for _ in range(3):
        fn()
    sync()
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        runs.append((time.perf_counter() - t0) / iters * 1e3)
    return sorted(runs)[2]


def gpu_timed(fn, stream, iters=50):
    """Device ms per call of `fn`, which enqueues on `stream` (a torch stream)."""
    import torch
    for _ in range(3):
        fn()
    stream.synchronize()
    runs = []
    for _ in range(5):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(stream):
            torch.cuda._sleep(20_000_000)  # ~10 ms: longer than enqueueing the loop
        e0.record(stream)
        for _ in range(iters):
            fn()
        e1.record(stream)
        stream.synchronize()
        runs.append(e0.elapsed_time(e1) / iters)
    return sorted(runs)[2]


def cmd_run(a):
    import numpy as np
    import torch
    import shapeml
    lib = shapeml.Library(a.runtime)
    dev = shapeml.Device(lib)
    mod = lib.load(os.path.join(a.dir, "softmax_bench.so"))
    cd = load_cudnn()
    if cd is None:
        print("cuDNN not found: nothing to compare")
        return 1
    vp = C.c_void_p
    handle = vp()
    assert cd.cudnnCreate(C.byref(handle)) == 0
    cd.cudnnGetVersion.restype = C.c_size_t
    print(f"cuDNN {cd.cudnnGetVersion()}, torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
    torch_stream = torch.cuda.current_stream()
    assert cd.cudnnSetStream(handle, vp(torch_stream.cuda_stream)) == 0
    shapeml_stream = torch.cuda.ExternalStream(dev.stream.value)  # the runtime's stream for cuda:0
    rows, ok = [], True
    for r, c in SIZES:
        x = np.random.default_rng(0).standard_normal((r, c)).astype(np.float32)
        xt = torch.from_numpy(x).cuda()
        yt = torch.empty_like(xt)
        desc = vp()
        assert cd.cudnnCreateTensorDescriptor(C.byref(desc)) == 0
        assert cd.cudnnSetTensor4dDescriptor(desc, 0, 0, r, c, 1, 1) == 0  # NCHW, float
        one, zero = C.c_float(1.0), C.c_float(0.0)
        xs = dev.upload(x)
        ys = dev.upload(np.zeros_like(x))
        for entry, algo, tfn in (("sm", 1, torch.softmax), ("lsm", 2, torch.log_softmax)):
            def cudnn():
                st = cd.cudnnSoftmaxForward(handle, algo, 1, C.byref(one), desc, vp(xt.data_ptr()), C.byref(zero), desc, vp(yt.data_ptr()))
                assert st == 0, st
            cudnn()
            torch.cuda.synchronize()
            mod.call_into(entry, [xs], [ys])
            ys_np = dev.download(ys)
            ref = tfn(xt, -1)
            d1 = float((yt - ref).abs().max())
            d2 = float(np.max(np.abs(ys_np - ref.cpu().numpy())))
            agree = d1 <= 1e-5 and d2 <= 1e-5
            ok &= agree
            name = "softmax" if entry == "sm" else "log_softmax"
            if a.check_only:
                print(f"{name:<12} [{r:>6} {c:>6}]  max |diff| cuDNN {d1:.2e} shapeml {d2:.2e}  {'agree' if agree else 'DISAGREE'}")
                continue
            t_cudnn = timed(cudnn, torch.cuda.synchronize)
            t_torch = timed(lambda: tfn(xt, -1), torch.cuda.synchronize)
            t_shapeml = timed(lambda: mod.call_into(entry, [xs], [ys]), dev.sync)
            g_cudnn = gpu_timed(cudnn, torch_stream)
            g_torch = gpu_timed(lambda: tfn(xt, -1), torch_stream)
            g_shapeml = gpu_timed(lambda: mod.call_into(entry, [xs], [ys]), shapeml_stream)
            row = {"op": name, "R": r, "C": c, "shapeml_ms": t_shapeml, "cudnn_ms": t_cudnn, "torch_ms": t_torch,
                   "shapeml_gpu_ms": g_shapeml, "cudnn_gpu_ms": g_cudnn, "torch_gpu_ms": g_torch,
                   "agree": agree, "max_diff_cudnn": d1, "max_diff_shapeml": d2}
            rows.append(row)
            print(f"{name:<12} [{r:>6} {c:>6}]  gpu: shapeml {g_shapeml:.4f} cuDNN {g_cudnn:.4f} torch {g_torch:.4f} ms "
                  f"(shapeml/cuDNN {g_shapeml / g_cudnn:.2f}, /torch {g_shapeml / g_torch:.2f})  "
                  f"host loop: shapeml {t_shapeml:.4f} cuDNN {t_cudnn:.4f} torch {t_torch:.4f} ms  {'agree' if agree else 'DISAGREE'}")
        dev.free(xs)
        dev.free(ys)
        cd.cudnnDestroyTensorDescriptor(desc)
    cd.cudnnDestroy(handle)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    print(f"cudnn-softmax: {'PASS' if ok else 'FAIL'} (results agree: {ok})")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--shapemlc", required=True)
    b.add_argument("--out", required=True)
    r = sub.add_parser("run")
    r.add_argument("--runtime", required=True)
    r.add_argument("--dir", required=True)
    r.add_argument("--json")
    r.add_argument("--check-only", action="store_true", help="compare the results, time nothing")
    a = ap.parse_args()
    return cmd_build(a) if a.cmd == "build" else cmd_run(a)


if __name__ == "__main__":
    sys.exit(main())
