#!/usr/bin/env bash
# Tests the conda recipe without conda-build (not installable here): runs
# build.sh into a fresh prefix, reusing an already built tree, and checks the
# tree against what meta.yaml promises for each output: files, the split (the
# runtime loads no LLVM/MLIR/Z3), the CMake package and pkg-config files
# relocated to the prefix.
# Usage: packaging/conda/test-build-script.sh BUILD_DIR WORK_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: test-build-script.sh BUILD_DIR WORK_DIR}" && pwd)
work=${2:?}
rm -rf "$work"
mkdir -p "$work"
prefix="$work/prefix"
fail() { echo "conda test: FAILED: $*"; exit 1; }
SRC_DIR=$here PREFIX=$prefix SHAPEML_BUILD_DIR=$build bash "$here/packaging/conda/build.sh" > "$work/build.log" 2>&1 ||
  { cat "$work/build.log"; fail "build.sh"; }
# The recipe's build uses lib/; a reused Debian-configured tree has lib/<multiarch>/.
libdir=$(dirname "$(find "$prefix" -name 'libshapeml_runtime.so.0' | head -1)")
[[ -d $libdir ]] || fail "no libshapeml_runtime.so.0 in the prefix"
# What meta.yaml's outputs test for:
for f in "$libdir/libshapeml_runtime.so.0" "$libdir/libshapeml.so.0" "$prefix/include/shapeml.h" \
         "$libdir/cmake/shapeml/shapemlConfig.cmake" "$libdir/pkgconfig/shapeml.pc" "$libdir/pkgconfig/shapeml-runtime.pc" \
         "$prefix/bin/shapemlc" "$prefix/share/doc/shapeml-doc/guide/README.md" "$prefix/share/doc/shapeml-doc/spec/language.md"; do
  [[ -e $f ]] || fail "missing ${f#$prefix/}"
done
if ldd "$libdir/libshapeml_runtime.so.0" | grep -Ei 'llvm|mlir|z3'; then fail "the runtime loads LLVM, MLIR or Z3"; fi
"$prefix/bin/shapemlc" --version
# pkg-config and the CMake package point into the prefix, wherever it is.
inc=$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --cflags shapeml-runtime | tr -d " ")
[[ $(cd "${inc#-I}" && pwd) == "$(cd "$prefix/include" && pwd)" ]] || fail "pkg-config's include dir is $inc"
cat > "$work/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(probe C)
find_package(shapeml 0.3 CONFIG REQUIRED COMPONENTS sdk tools)
get_target_property(loc shapeml::runtime LOCATION)
message(STATUS "probe: runtime at ${loc}")
CM
cmake -S "$work" -B "$work/probe" -DCMAKE_PREFIX_PATH="$prefix" > "$work/probe.log" 2>&1 || { cat "$work/probe.log"; fail "find_package"; }
grep -q "probe: runtime at $prefix" "$work/probe.log" || fail "find_package found another shapeml: $(grep probe: "$work/probe.log")"
# The split: the runtime output alone is the runtime library and nothing else.
SRC_DIR=$here PREFIX=$work/runtime-only SHAPEML_BUILD_DIR=$build bash "$here/packaging/conda/install-component.sh" runtime >/dev/null
only=$(cd "$work/runtime-only" && find . -type f -o -type l | grep -v '^./share/' | sed 's|.*/||' | sort | tr '\n' ' ')
[[ $only =~ ^libshapeml_runtime\.so\.0\ libshapeml_runtime\.so\.0\.[0-9]+\.[0-9]+\ $ ]] || fail "the runtime output holds: $only"
# ... and with libshapeml-runtime-dev, what building against it takes, without the compiler library.
SRC_DIR=$here PREFIX=$work/runtime-only SHAPEML_BUILD_DIR=$build bash "$here/packaging/conda/install-component.sh" runtime_dev >/dev/null
for f in shapeml.h shapemlConfig.cmake shapemlRuntimeTargets.cmake shapeml-runtime.pc libshapeml_runtime.so; do
  [[ -n $(find "$work/runtime-only" -name "$f") ]] || fail "libshapeml-runtime-dev lacks $f"
done
[[ -z $(cd "$work/runtime-only" && find . -name 'libshapeml.so*' -o -name shapeml.pc -o -name shapemlTargets.cmake) ]] ||
  fail "libshapeml-runtime-dev holds the compiler library's files"
echo "files in the prefix:"
(cd "$prefix" && find . -type f -o -type l | sort | grep -v '^./share/\(doc\|lintian\)' | sed 's/^/  /')
echo "conda test: PASS (build.sh and the output split; conda-build itself not run)"
