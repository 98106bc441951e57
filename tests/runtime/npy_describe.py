#!/usr/bin/python3
"""Prints what NumPy reads from each .npy/.npz argument, one line per array:
NAME DTYPE SHAPE C_CONTIGUOUS VALUES (values as a Python list). Used by
npy_test.cpp to check that files the runtime writes read back in NumPy."""
import sys

import numpy as np


def line(name, a):
    return "%s %s %s %s" % (name, a.dtype.str, list(a.shape), a.tolist())


for p in sys.argv[1:]:
    r = np.load(p, allow_pickle=False)
    if isinstance(r, np.ndarray):
        print(line("-", r))
    else:
        for k in r.files:
            print(line(k, r[k]))
