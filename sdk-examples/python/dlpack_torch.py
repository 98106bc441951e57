#!/usr/bin/env python3
"""DLPack between shapeml and PyTorch on the GPU, zero copy, both ways:

  1. a shapeml device tensor is exported (DLManagedTensor) and PyTorch wraps
     it with torch.from_dlpack: the same device pointer, no copy;
  2. PyTorch computes on it; its result is exported with to_dlpack and
     imported into shapeml (shapeml_tensor_import_dlpack): the same pointer;
  3. shapeml uses the imported tensor as an input of a compiled program
     (the MLP of examples/mlp.sml) and the result is checked against
     PyTorch;
  4. every deleter runs exactly once: the shapeml tensor's memory comes from
     a statistics adaptor, whose bytes_in_use returns to zero only when both
     owners (shapeml's reference and PyTorch's) are gone, and whose
     deallocation count equals its allocation count.

Streams: with the bare C export (steps 1-4, the legacy struct carries no
stream) the handshake is done by hand: before PyTorch reads a shapeml tensor
the producer's stream is synchronized (Device.sync), and before shapeml reads
a PyTorch result, PyTorch's current stream is. Step 5 uses the protocol
instead: torch.from_dlpack(shapeml.Tensor) passes PyTorch's stream to
`__dlpack__`, which makes it wait on the GPU for the work computing the
tensor (shapeml_unstable_stream_wait_tensor) — no host synchronization, and
checked with shapeml's stream held back by a sleep kernel so that a missing
wait would read an unfinished result (a raw capsule read at that point,
without the wait, differs from the finished result: measured on the H200).

  python3 sdk-examples/python/dlpack_torch.py --runtime DIR/libshapeml_runtime.so --module DIR/mlp_gpu.so [--json OUT]
"""
import argparse
import ctypes as C
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shapeml  # noqa: E402

PyCapsule_New = C.pythonapi.PyCapsule_New
PyCapsule_New.restype, PyCapsule_New.argtypes = C.py_object, [C.c_void_p, C.c_char_p, C.c_void_p]
PyCapsule_GetPointer = C.pythonapi.PyCapsule_GetPointer
PyCapsule_GetPointer.restype, PyCapsule_GetPointer.argtypes = C.c_void_p, [C.py_object, C.c_char_p]
PyCapsule_SetName = C.pythonapi.PyCapsule_SetName
PyCapsule_SetName.restype, PyCapsule_SetName.argtypes = C.c_int, [C.py_object, C.c_char_p]


class Stats(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("bytes_in_use", C.c_uint64), ("peak_bytes_in_use", C.c_uint64),
                ("allocation_count", C.c_uint64), ("deallocation_count", C.c_uint64), ("bytes_allocated_total", C.c_uint64),
                ("failed_allocation_count", C.c_uint64), ("bytes_reserved", C.c_uint64)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runtime", required=True)
    ap.add_argument("--module", required=True)
    ap.add_argument("--json")
    a = ap.parse_args()
    import torch
    import torch.nn.functional as F
    torch.backends.cuda.matmul.allow_tf32 = False

    lib = shapeml.Library(a.runtime)
    L = lib.lib
    dev = shapeml.Device(lib, 0)
    vp = C.c_void_p
    for name, args in {"shapeml_memory_create_statistics_adaptor": [vp, C.POINTER(vp)],
                       "shapeml_memory_get_statistics": [vp, C.POINTER(Stats)],
                       "shapeml_tensor_export_dlpack": [vp, C.POINTER(vp)],
                       "shapeml_tensor_import_dlpack": [vp, C.POINTER(vp)]}.items():
        f = getattr(L, name)
        f.restype, f.argtypes = vp, args
    counted = vp()
    lib._check(L.shapeml_memory_create_statistics_adaptor(dev.memory, C.byref(counted)))

    def stats():
        s = Stats(C.sizeof(Stats))
        lib._check(L.shapeml_memory_get_statistics(counted, C.byref(s)))
        return s

    B, S, D, Fh = 4, 128, 256, 1024
    rng = np.random.default_rng(1)
    x = rng.standard_normal((B, S, D)).astype(np.float32)
    res = {}

    # 1. shapeml -> PyTorch. The tensor's bytes come from the counted resource.
    host = lib.tensor(x)
    xs = vp()
    lib._check(L.shapeml_tensor_copy_to_device(host, counted, dev.stream, C.byref(xs)))
    L.shapeml_tensor_release(host)
    managed = vp()
    lib._check(L.shapeml_tensor_export_dlpack(xs, C.byref(managed)))
    dev.sync()  # handshake: the copy on shapeml's stream is done before torch reads
    xt = torch.from_dlpack(PyCapsule_New(managed, b"dltensor", None))
    res["export_same_pointer"] = xt.data_ptr() == L.shapeml_tensor_data(xs)
    res["export_values_equal"] = bool(torch.equal(xt.cpu(), torch.from_numpy(x)))

    # 2. PyTorch computes; its result goes back to shapeml without a copy.
    yt = torch.relu(xt) * 0.5 - 0.25
    cap = torch.utils.dlpack.to_dlpack(yt)
    ptr = PyCapsule_GetPointer(cap, b"dltensor")
    ys = vp()
    lib._check(L.shapeml_tensor_import_dlpack(ptr, C.byref(ys)))
    PyCapsule_SetName(cap, b"used_dltensor")  # shapeml owns it now: the capsule must not delete it
    res["import_same_pointer"] = L.shapeml_tensor_data(ys) == yt.data_ptr()
    torch.cuda.current_stream().synchronize()  # handshake: torch's result is ready before shapeml reads it

    # 3. The imported tensor as an input of a compiled program.
    mod = lib.load(a.module)
    w1 = (rng.standard_normal((D, Fh)) / np.sqrt(D)).astype(np.float32)
    b1 = (0.1 * rng.standard_normal(Fh)).astype(np.float32)
    w2 = (rng.standard_normal((Fh, D)) / np.sqrt(Fh)).astype(np.float32)
    b2 = (0.1 * rng.standard_normal(D)).astype(np.float32)
    ws = [dev.upload(t) for t in (w1, b1, w2, b2)]
    (out,) = mod.call_tensors("mlp", ys, *ws)
    got = dev.download(out)
    t64 = [t.double() for t in (yt, *(torch.from_numpy(v).cuda() for v in (w1, b1, w2, b2)))]
    ref = (torch.matmul(F.gelu(torch.matmul(t64[0], t64[1]) + t64[2]), t64[3]) + t64[4]).cpu().numpy()
    res["program_rel_err_vs_fp64"] = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
    for t in ws + [out]:
        dev.free(t)

    # 5. The protocol's handshake, no host sync: hold shapeml's stream back,
    # compute, and let PyTorch read the result at once through __dlpack__.
    # Doubled second layer: the result (2x step 3's) differs from whatever
    # an earlier result left in the memory the output may reuse.
    ws = [dev.upload(t) for t in (w1, b1, 2 * w2, 2 * b2)]
    (out,) = mod.call_tensors("mlp", ys, *ws)  # warm: plan and graph made outside the held-back call
    dev.free(out)
    (torch.ones(8, device="cuda") * 1.0).cpu()  # PyTorch's kernels loaded: lazy loading would synchronize the device
    dev.sync()
    with torch.cuda.stream(torch.cuda.ExternalStream(dev.stream.value)):
        torch.cuda._sleep(50_000_000)  # ~25 ms on shapeml's stream: the call below runs after it
    (out,) = mod.call_tensors("mlp", ys, *ws)
    out_t = torch.from_dlpack(shapeml.Tensor(lib, out))  # PyTorch's stream now waits for shapeml's
    got5 = (out_t * 1.0).cpu().numpy()  # a PyTorch kernel on its own stream, then a copy
    res["handshake_rel_err_vs_fp64"] = float(np.linalg.norm(got5 - 2 * ref) / np.linalg.norm(2 * ref))
    del out_t
    for t in ws:
        dev.free(t)
    torch.cuda.synchronize()

    # 4. Deleters: once both owners let go, the counted bytes are back.
    before = stats()
    res["bytes_in_use_while_shared"] = int(before.bytes_in_use)
    L.shapeml_tensor_release(xs)  # shapeml's reference; torch still holds the exported one
    mid = stats()
    res["bytes_in_use_after_shapeml_release"] = int(mid.bytes_in_use)
    del xt  # torch's reference: the DLPack deleter runs now
    torch.cuda.synchronize()
    after = stats()
    res["bytes_in_use_after_both"] = int(after.bytes_in_use)
    res["allocations"], res["deallocations"] = int(after.allocation_count), int(after.deallocation_count)
    L.shapeml_tensor_release(ys)  # the imported PyTorch tensor: torch's deleter runs (it owns those bytes)
    del yt
    torch.cuda.synchronize()
    ok = (res["export_same_pointer"] and res["export_values_equal"] and res["import_same_pointer"]
          and res["program_rel_err_vs_fp64"] <= 1e-5 and res["handshake_rel_err_vs_fp64"] <= 1e-5
          and res["bytes_in_use_while_shared"] > 0
          and res["bytes_in_use_after_shapeml_release"] == res["bytes_in_use_while_shared"]
          and res["bytes_in_use_after_both"] == 0 and res["allocations"] == res["deallocations"] == 1)
    res["passed"] = bool(ok)
    for k, v in res.items():
        print(f"  {k}: {v}")
    print("DLPack shapeml <-> PyTorch on the GPU:", "PASS" if ok else "FAIL")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)
    L.shapeml_memory_release(counted)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
