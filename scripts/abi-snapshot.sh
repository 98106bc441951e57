#!/usr/bin/env bash
# Regenerates the ABI snapshot from a -g build of libshapeml.so. Changing the
# snapshot is a reviewed act: commit it together with the documented change.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
lib=${1:-$here/build/default/libshapeml.so}
mkdir -p "$here/abi/snapshots"
abidw --no-corpus-path --no-show-locs --exported-interfaces-only --drop-private-types --drop-undefined-syms --headers-dir "$here/include" --out-file "$here/abi/snapshots/libshapeml.so.0.abi" "$lib"
echo "wrote abi/snapshots/libshapeml.so.0.abi from $lib"
