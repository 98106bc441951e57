#!/usr/bin/env bash
# Checks a library against the snapshot of every released minor version
# (abi/snapshots/<version>/, each the snapshot as it was at the last commit of
# that version): nothing removed or changed since; added functions and
# members appended to structs are allowed (scripts/abi_released_report.py
# judges abidiff's report; docs/design/abi-policy.md). The snapshot of the version being developed is
# checked exactly by scripts/abi-check.sh.
# Usage: scripts/abi-check-released.sh path/to/libshapeml.so
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
lib=${1:?usage: abi-check-released.sh libshapeml.so}
name=$(basename "$lib" | sed -E 's/\.so\.[0-9.]+$/.so/; s/\.so$/.so.0.abi/')
command -v abidw >/dev/null || { echo "abi-check-released: abidw not found (apt-get install abigail-tools)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
abidw --no-corpus-path --no-show-locs --exported-interfaces-only --drop-private-types --drop-undefined-syms --headers-dir "$here/include" \
  --out-file "$tmp/current.abi" "$lib" || { echo "abi-check-released: abidw failed"; exit 1; }
grep -q "shapeml_status_get_code" "$tmp/current.abi" || { echo "abi-check-released: no type information: build with -g"; exit 1; }
checked=0 failed=0
for snap in "$here"/abi/snapshots/*/"$name"; do
  [[ -f $snap ]] || continue
  version=$(basename "$(dirname "$snap")")
  abidiff --no-corpus-path --no-added-syms --suppressions "$here/abi/unstable.suppr" "$snap" "$tmp/current.abi" > "$tmp/$version.txt"
  rc=$?  # a bit mask: 4 change, 8 incompatible change, 12 removed symbol; 1, 2 abidiff's own errors
  checked=$((checked + 1))
  if (( rc & 3 || rc & 8 )) || ! python3 "$here/scripts/abi_released_report.py" < "$tmp/$version.txt"; then
    cat "$tmp/$version.txt"
    echo "abi-check-released: $(basename "$lib") breaks the $version ABI (abidiff exit $rc)"
    failed=$((failed + 1))
  else
    echo "abi-check-released: $(basename "$lib") keeps the $version ABI"
  fi
done
[[ $checked -gt 0 ]] || { echo "abi-check-released: no released snapshot of $name"; exit 1; }
[[ $failed -eq 0 ]] || exit 1
echo "abi-check-released: $(basename "$lib") keeps every released ABI ($checked)"
