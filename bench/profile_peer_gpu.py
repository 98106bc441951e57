#!/usr/bin/env python3
"""Where the best peer's time goes: PyTorch's transformer block
(bench/transformer_gpu.py's torch_block with SDPA, the project's inputs)
under torch.compile (default mode) or eager, one call profiled by
torch.profiler (CUPTI kernel durations), printed as a table of kernels, to
set beside Nsight Compute's table of shapeml's plan (bench/profile_block_gpu.py).

  python3 bench/profile_peer_gpu.py --dtype fp32 --size large [--eager]
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import transformer_gpu as tg  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtype", default="fp32", choices=["fp32", "tf32", "bf16"])
    ap.add_argument("--size", default="large", choices=list(tg.SIZES))
    ap.add_argument("--eager", action="store_true", help="eager SDPA instead of torch.compile")
    a = ap.parse_args()
    import torch
    from torch.profiler import ProfilerActivity, profile
    torch.backends.cuda.matmul.allow_tf32 = a.dtype == "tf32"
    torch.backends.cudnn.allow_tf32 = a.dtype == "tf32"
    s = tg.SIZES[a.size]
    tt = [torch.from_numpy(x).cuda() for x in tg.make_inputs(s)]
    if a.dtype == "bf16":
        tt = [x.to(torch.bfloat16) for x in tt]
    H = s["H"]
    fn = (lambda *t: tg.torch_block(list(t), H, H, sdpa=True))
    if not a.eager:
        fn = torch.compile(fn, fullgraph=True, dynamic=False)
    with torch.no_grad():
        for _ in range(3):
            fn(*tt)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn(*tt)
            torch.cuda.synchronize()
    total = 0.0
    rows = []
    for e in prof.key_averages():
        us = getattr(e, "device_time_total", None)
        if us is None:
            us = e.cuda_time_total
        if us > 0 and e.key and not e.key.startswith("cuda") and e.count > 0:
            rows.append((us, e.count, e.key))
    rows.sort(reverse=True)
    print(f"{'compile' if not a.eager else 'eager'} {a.size} {a.dtype} on {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    for us, n, name in rows:
        total += us
        print(f"{us:10.1f} us  x{n:<3d} {name[:150]}")
    print(f"{total:10.1f} us  total of kernels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
