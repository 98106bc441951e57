#!/usr/bin/env bash
# The Python package as a user installs it: a wheel built offline from a copy
# of sdk-examples/python (so the source tree gets no build/ or *.egg-info),
# installed with pip into a fresh virtual environment (NumPy and PyTorch
# from the system), then used from a directory outside the tree: compile,
# call on NumPy arrays against NumPy's own result, DLPack both ways with
# NumPy and PyTorch (CPU), the version, the PEP 561 marker; and with the
# runtime library alone (no compiler), an AOT module built by shapemlc.
#
# Both wheels come from scripts/build-python-wheels.sh: the package with the
# runtime library bundled, then the compiler wheel beside it.
# Usage: test_wheel_venv.sh BUILD_DIR   (the directory with libshapeml.so.0)
# Last line: `python-wheel: ok` on success; exit status 1 on any failure.
set -euo pipefail
build=$(cd "${1:?usage: test_wheel_venv.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INDEX=1 PYTHONDONTWRITEBYTECODE=1

bash "$src/../../scripts/build-python-wheels.sh" "$build" "$tmp/dist" >/dev/null
wheel=$(ls "$tmp"/dist/shapeml-*-py3-none-linux_*.whl)
compiler_wheel=$(ls "$tmp"/dist/shapeml_compiler-*-py3-none-linux_*.whl)
/usr/bin/python3 -m venv --system-site-packages "$tmp/venv"
"$tmp/venv/bin/python" -m pip install --quiet --no-deps "$wheel"

cat > "$tmp/matvec.sml" <<'EOF'
(module mv (func f (dims N K) (params (a (tensor f32 (N K) host)) (x (tensor f32 (K) host)))
  (returns (tensor f32 (N) host)) (return (reduce_sum (mul a x) :axes (1)))))
EOF
"$build/shapemlc" build "$tmp/matvec.sml" -o "$tmp/matvec.so" --bind N=4,K=6 --target x86-64 >/dev/null

cd "$tmp"
SHAPEML_TEST_LIB="$build/libshapeml.so.0" SHAPEML_TEST_RUNTIME="$build/libshapeml_runtime.so.0" SHAPEML_TEST_AOT="$tmp/matvec.so" \
  SHAPEML_TEST_VENV="$tmp/venv" "$tmp/venv/bin/python" - <<'EOF'
import os
import numpy as np
import shapeml

venv = os.environ["SHAPEML_TEST_VENV"]
assert shapeml.__file__.startswith(venv), shapeml.__file__  # the installed copy, not the tree's
assert os.path.isfile(os.path.join(os.path.dirname(shapeml.__file__), "py.typed"))
from importlib.metadata import version
assert version("shapeml") == shapeml.__version__, (version("shapeml"), shapeml.__version__)

lib = shapeml.Library(os.environ["SHAPEML_TEST_LIB"])
src = """(module m (func f (dims N K M) (params (a (tensor f32 (N K) host)) (b (tensor f32 (K M) host)))
  (returns (tensor f32 (N M) host)) (return (tanh (matmul a b)))))"""
f = lib.compile(src, name="m.sml").entry("f")
rng = np.random.default_rng(3)
a = rng.standard_normal((5, 7)).astype(np.float32)
b = rng.standard_normal((7, 3)).astype(np.float32)
(y,) = f(a, b)
want = np.tanh(a.astype(np.float64) @ b.astype(np.float64))
assert y.shape == (5, 3) and np.max(np.abs(y - want)) < 1e-5, np.max(np.abs(y - want))
(t,) = f(a, b, tensors=True)  # a shapeml.Tensor
assert t.dtype == "f32" and t.shape == (5, 3) and t.device == "host", repr(t)
back = np.from_dlpack(t)       # shapeml -> NumPy, zero copy
assert np.array_equal(back, y)
(y2,) = f(lib.from_dlpack(a), b)  # NumPy -> shapeml through DLPack
assert np.array_equal(y2, y)

import torch
(tt,) = f(torch.from_numpy(a), torch.from_numpy(b), tensors=True)  # torch tensors in, zero copy
assert torch.equal(torch.from_dlpack(tt), torch.tensor(y))         # shapeml -> torch, zero copy

# The runtime library alone: no compiler, an AOT module.
rt = shapeml.Library(os.environ["SHAPEML_TEST_RUNTIME"])
assert not rt.has_compiler
mv = rt.load(os.environ["SHAPEML_TEST_AOT"]).entry("f")
m = rng.standard_normal((4, 6)).astype(np.float32)
v = rng.standard_normal(6).astype(np.float32)
(r,) = mv(m, v)
assert np.max(np.abs(r - m.astype(np.float64) @ v.astype(np.float64))) < 1e-5
EOF
# The runtime wheel alone, in a fresh process (one that has loaded a library
# by path would find it again by its SONAME): Library() with no path opens
# the bundled runtime library, which loads and calls the AOT module.
SHAPEML_TEST_AOT="$tmp/matvec.so" "$tmp/venv/bin/python" - <<'EOF'
import os
import numpy as np
import shapeml
own = shapeml.Library()
assert not own.has_compiler and own.path.endswith(os.path.join("_native", "libshapeml_runtime.so.0")), own.path
m = np.arange(24, dtype=np.float32).reshape(4, 6) / 7
v = np.linspace(-1, 1, 6, dtype=np.float32)
(r,) = own.load(os.environ["SHAPEML_TEST_AOT"]).entry("f")(m, v)
assert np.max(np.abs(r - m.astype(np.float64) @ v.astype(np.float64))) < 1e-5
EOF
# The compiler wheel next to it: Library() now opens libshapeml.so.0 from it.
"$tmp/venv/bin/python" -m pip install --quiet --no-deps "$compiler_wheel"
"$tmp/venv/bin/python" - <<'EOF'
import numpy as np
import shapeml
lib = shapeml.Library()
assert lib.has_compiler and "shapeml_compiler" in lib.path, lib.path
f = lib.compile("(module s (func f (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)) (return (exp x))))").entry("f")
x = np.linspace(-2, 2, 9, dtype=np.float32)
(y,) = f(x)
assert np.max(np.abs(y - np.exp(x.astype(np.float64)))) < 1e-6
EOF
echo "python-wheel: ok"
