#!/usr/bin/env bash
# Compares libshapeml.so against the checked-in ABI snapshot with abidiff.
# Usage: scripts/abi-check.sh path/to/libshapeml.so
#
# Policy (docs/design/abi-policy.md): any difference fails, except changes to
# the unstable tier (symbols and types named shapeml_unstable_*), which the
# suppression file hides. A deliberate addition is made by regenerating the
# snapshot with scripts/abi-snapshot.sh in the same reviewed commit.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
lib=${1:?usage: abi-check.sh libshapeml.so}
snapshot="$here/abi/snapshots/$(basename "$lib" | sed -E 's/\.so\.[0-9.]+$/.so/; s/\.so$/.so.0.abi/')"
suppr="$here/abi/unstable.suppr"
command -v abidw >/dev/null || { echo "abi-check: abidw not found (apt-get install abigail-tools)"; exit 1; }
[[ -f $snapshot ]] || { echo "abi-check: no snapshot at $snapshot; run scripts/abi-snapshot.sh"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
abidw --no-corpus-path --no-show-locs --exported-interfaces-only --drop-private-types --drop-undefined-syms --headers-dir "$here/include" --out-file "$tmp/current.abi" "$lib" || { echo "abi-check: abidw failed"; exit 1; }
if ! grep -q "shapeml_memory_statistics" "$tmp/current.abi"; then
  echo "abi-check: the library carries no type information for the public structs: build it with -g"
  exit 1
fi
abidiff --no-corpus-path --suppressions "$suppr" "$snapshot" "$tmp/current.abi" > "$tmp/report.txt"
rc=$?
if [[ $rc -ne 0 ]]; then
  cat "$tmp/report.txt"
  echo "abi-check: FAILED (abidiff exit $rc: bit 4 = change, 8 = incompatible change, 12 = removed symbol)."
  echo "If this change is deliberate and documented, regenerate: scripts/abi-snapshot.sh $lib"
  exit 1
fi
echo "abi-check: $(basename "$lib") matches abi/snapshots/$(basename "$snapshot")"
