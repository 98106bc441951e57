#!/usr/bin/env bash
# conda-build's build script: configure and build once; each output then
# installs its CMake component (install-component.sh). Also runnable by hand:
#   SRC_DIR=. PREFIX=/tmp/prefix bash packaging/conda/build.sh
# SHAPEML_BUILD_DIR names the build folder (default $SRC_DIR/build-conda); one
# that is already configured is reused as it is (the CTest
# `conda_build_script` reuses build/default instead of compiling twice).
set -euo pipefail
: "${SRC_DIR:?}" "${PREFIX:?}"
build=${SHAPEML_BUILD_DIR:-$SRC_DIR/build-conda}
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S "$SRC_DIR" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$PREFIX" \
    -DCMAKE_INSTALL_LIBDIR=lib -DSHAPEML_TESTS=OFF -DSHAPEML_INSTALL_DEBIAN_FILES=OFF \
    -DMLIR_DIR="${MLIR_DIR:-$PREFIX/lib/cmake/mlir}" ${CMAKE_ARGS:-}
fi
# Only what the outputs hold (no tests, no benchmarks); the plugin when
# configured. A tree that is already built makes this a no-op.
targets=(shapeml shapeml_runtime shapemlc)
cmake --build "$build" --target help | grep -q '^shapeml_cuda:' && targets+=(shapeml_cuda)
cmake --build "$build" --target help | grep -q '^shapeml_doc_html:' && targets+=(shapeml_doc_html)
cmake --build "$build" --target "${targets[@]}"
# Without conda-build's per-output scripts (by hand, or the test), install
# every component now.
if [[ -z ${PKG_NAME:-} || $PKG_NAME == shapeml-split ]]; then
  for c in runtime runtime_dev sdk dev tools cuda doc; do
    SHAPEML_BUILD_DIR=$build bash "$(dirname "$0")/install-component.sh" "$c"
  done
fi
