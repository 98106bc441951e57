#!/usr/bin/env bash
# Regenerates the ABI snapshot from a -g build of libshapeml.so. Changing the
# snapshot is a reviewed act: commit it together with the documented change.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$here/abi/snapshots"
libs=("$@")
[[ ${#libs[@]} -gt 0 ]] || libs=("$here/build/default/libshapeml.so" "$here/build/default/libshapeml_runtime.so")
for lib in "${libs[@]}"; do
  name=$(basename "$lib" | sed -E 's/\.so\.[0-9.]+$/.so/; s/\.so$/.so.0.abi/')
  abidw --no-corpus-path --no-show-locs --exported-interfaces-only --drop-private-types --drop-undefined-syms --headers-dir "$here/include" --out-file "$here/abi/snapshots/$name" "$lib"
  echo "wrote abi/snapshots/$name from $lib"
done
