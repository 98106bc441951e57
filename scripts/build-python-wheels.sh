#!/usr/bin/env bash
# The Python wheels, built offline from a built tree with Debian's Python
# tooling (pip, setuptools, wheel; docs/design/python-wheels.md):
#   shapeml-VERSION-py3-none-linux_x86_64.whl
#       the package (ctypes, no extension) with libshapeml_runtime.so.0
#       bundled in shapeml/_native/: load and call AOT modules, tensors,
#       DLPack, with nothing else installed (it needs only libc, libstdc++,
#       libgcc_s and zlib);
#   shapeml_compiler-VERSION-py3-none-linux_x86_64.whl
#       libshapeml.so.0 (checker, JIT, AOT builds) in shapeml_compiler/, which
#       `shapeml.Library()` prefers when installed. It links Debian 12's LLVM
#       19, MLIR 19 and Z3 (libllvm19, libmlir-19, libz3-4), which it does not
#       bundle (about 215 MB).
# The source tree gets nothing written (the package is copied first).
# Usage: scripts/build-python-wheels.sh BUILD_DIR OUT_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: build-python-wheels.sh BUILD_DIR OUT_DIR}" && pwd)
out=${2:?usage: build-python-wheels.sh BUILD_DIR OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INDEX=1 PYTHONDONTWRITEBYTECODE=1
py=/usr/bin/python3
plat=linux_$(uname -m)

# A pure wheel from `src`, retagged py3-none-PLAT (it carries a native
# library, so it is not purelib and not for other platforms).
wheel_for() {  # src dir
  local src=$1 dist=$tmp/dist-$RANDOM
  $py -m pip wheel --quiet --no-build-isolation --no-deps -w "$dist" "$src"
  local whl
  whl=$(ls "$dist"/*-py3-none-any.whl)
  $py -m wheel unpack --dest "$dist/u" "$whl" >/dev/null
  local info
  info=$(ls -d "$dist"/u/*/*.dist-info)
  sed -i -e "s/^Root-Is-Purelib: true/Root-Is-Purelib: false/" -e "s/^Tag: py3-none-any/Tag: py3-none-$plat/" "$info/WHEEL"
  $py -m wheel pack --dest-dir "$out" "$(dirname "$info")" >/dev/null
}

# 1. shapeml with the runtime library.
cp -r "$here/sdk-examples/python" "$tmp/shapeml"
rm -rf "$tmp/shapeml/build" "$tmp/shapeml"/*.egg-info "$tmp/shapeml/tests"
mkdir -p "$tmp/shapeml/shapeml/_native"
cp -L "$build/libshapeml_runtime.so.0" "$tmp/shapeml/shapeml/_native/"
strip --strip-debug "$tmp/shapeml/shapeml/_native/libshapeml_runtime.so.0"
sed -i 's/^shapeml = \["py.typed"\].*/shapeml = ["py.typed", "_native\/*.so.0"]/' "$tmp/shapeml/pyproject.toml"
wheel_for "$tmp/shapeml"

# 2. shapeml_compiler: the compiler library, found by shapeml.Library().
version=$($py -c "import sys; sys.path.insert(0, '$here/sdk-examples/python'); import shapeml; print(shapeml.__version__)")
mkdir -p "$tmp/compiler/shapeml_compiler"
cp -L "$build/libshapeml.so.0" "$tmp/compiler/shapeml_compiler/"
strip --strip-debug "$tmp/compiler/shapeml_compiler/libshapeml.so.0"
cat > "$tmp/compiler/shapeml_compiler/__init__.py" <<EOF
"""libshapeml.so.0 (checker, JIT, ahead-of-time builds) for the shapeml package:
shapeml.Library() uses it when this package is installed."""
import os

__version__ = "$version"
LIBRARY = os.path.join(os.path.dirname(__file__), "libshapeml.so.0")
EOF
cat > "$tmp/compiler/pyproject.toml" <<EOF
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "shapeml_compiler"
version = "$version"
description = "The shapeml compiler library for the shapeml Python package (needs Debian 12's libllvm19, libmlir-19, libz3-4)"
requires-python = ">=3.9"
dependencies = ["shapeml == $version"]

[tool.setuptools]
packages = ["shapeml_compiler"]

[tool.setuptools.package-data]
shapeml_compiler = ["*.so.0"]
EOF
wheel_for "$tmp/compiler"
ls "$out"
