#!/usr/bin/python3
"""Writes the .npy/.npz files that tests/runtime/npy_test.cpp reads: valid
ones made by NumPy itself, and malformed or unsupported ones derived from
them. Usage: make_npy_golden.py OUTDIR"""
import io
import os
import struct
import sys
import zipfile

import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def path(name):
    return os.path.join(out, name)


def save(name, arr, version=None):
    with open(path(name), "wb") as f:
        if version is None:
            np.save(f, arr)
        else:
            np.lib.format.write_array(f, arr, version=version)


def raw(name, data):
    with open(path(name), "wb") as f:
        f.write(data)


def npy_bytes(arr):
    b = io.BytesIO()
    np.save(b, arr)
    return b.getvalue()


def handmade(header, data=b"", major=1):
    """A .npy with a literal header text (padded like numpy does)."""
    h = header.encode("latin1")
    pre = 10 if major == 1 else 12
    pad = (64 - (pre + len(h) + 1) % 64) % 64
    h = h + b" " * pad + b"\n"
    size = struct.pack("<H", len(h)) if major == 1 else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes([major, 0]) + size + h + data


f32 = (np.arange(6, dtype="<f4").reshape(2, 3) * 0.5).astype("<f4")
f64 = np.array([[1.5, -2.25], [3.0, 1e300]], dtype="<f8")
i32 = np.arange(-3, 5, dtype="<i4").reshape(2, 2, 2)
i64 = np.array([2**40, -1, 7], dtype="<i8")
b1 = np.array([True, False, True, True])

# Valid files.
save("f32.npy", f32)
save("f64.npy", f64)
save("i32.npy", i32)
save("i64.npy", i64)
save("bool.npy", b1)
save("scalar.npy", np.array(3.5, dtype="<f4"))
save("empty.npy", np.zeros((0, 3), dtype="<f4"))
save("v2.npy", f32, version=(2, 0))
save("v3.npy", i64, version=(3, 0))
big = np.arange(100000, dtype="<f8").reshape(100, 1000)
save("big.npy", big)
np.savez(path("savez.npz"), a=f32, b=i64, c=b1, big=big)
np.savez_compressed(path("savez_compressed.npz"), a=f32, b=i64, c=b1, big=big)
np.savez(path("positional.npz"), f32, i32)  # arr_0, arr_1

# Valid NumPy files this runtime does not read.
save("fortran.npy", np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3)))
save("bigendian.npy", f32.astype(">f4"))
save("f16.npy", f32.astype("<f2"))
save("u8.npy", np.arange(4, dtype="u1"))
save("structured.npy", np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")]))
with zipfile.ZipFile(path("bzip2.npz"), "w", compression=zipfile.ZIP_BZIP2) as z:
    z.writestr("a.npy", npy_bytes(f32))

# Malformed files.
good = npy_bytes(f32)
raw("truncated_data.npy", good[:-5])
raw("truncated_header.npy", good[:20])
raw("truncated_preamble.npy", good[:7])
raw("empty_file.npy", b"")
raw("bad_magic.npy", b"\x93NUMPX" + good[6:])
raw("bad_version.npy", good[:6] + bytes([9, 0]) + good[8:])
raw("bad_header.npy", handmade("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), "))
raw("bad_shape.npy", handmade("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 3), }"))
raw("missing_key.npy", handmade("{'descr': '<f4', 'shape': (2, 3), }", b"\0" * 24))
raw("extra_key.npy", handmade("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1, }", b"\0" * 8))
raw("overflow_shape.npy", handmade("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }"))
raw("huge_header.npy", b"\x93NUMPY\x02\x00" + struct.pack("<I", 0xFFFFFFF0) + b"{")
raw("bad_descr.npy", handmade("{'descr': 'hello', 'fortran_order': False, 'shape': (2,), }", b"\0" * 8))

z = open(path("savez.npz"), "rb").read()
raw("truncated.npz", z[: len(z) // 2])
raw("truncated_tail.npz", z[:-10])
raw("not_a_zip.npz", b"this is not a zip archive at all" * 4)
# Flip one byte of the first entry's array data: the CRC-32 must catch it.
corrupt = bytearray(z)
at = z.index(b"\x93NUMPY") + 128 + 4
corrupt[at] ^= 0xFF
raw("bad_crc.npz", bytes(corrupt))
with zipfile.ZipFile(path("non_npy_entry.npz"), "w") as zf:
    zf.writestr("a.npy", npy_bytes(f32))
    zf.writestr("readme.txt", b"hello")
with zipfile.ZipFile(path("bad_entry.npz"), "w") as zf:
    zf.writestr("a.npy", good[:-5])
print("wrote golden files to", out)
