#!/usr/bin/env bash
# Installs one CMake component of the tree build.sh built into $PREFIX. The
# component is the argument, or follows from conda-build's $PKG_NAME.
set -euo pipefail
: "${PREFIX:?}"
build=${SHAPEML_BUILD_DIR:-$SRC_DIR/build-conda}
component=${1:-}
if [[ -z $component ]]; then
  case ${PKG_NAME:?} in
    libshapeml-runtime) component=runtime ;;
    libshapeml) component=sdk ;;
    libshapeml-runtime-dev) component=runtime_dev ;;
    libshapeml-dev) component=dev ;;
    shapeml-tools) component=tools ;;
    libshapeml-cuda) component=cuda ;;
    shapeml-doc) component=doc ;;
    *) echo "install-component.sh: unknown output $PKG_NAME" >&2; exit 1 ;;
  esac
fi
cmake --install "$build" --component "$component" --prefix "$PREFIX" --strip
