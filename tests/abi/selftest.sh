#!/usr/bin/env bash
# Proves that the ABI check fails on a changed struct: builds a probe library
# twice (a field's type changed in the second), snapshots the first with the
# same abidw flags as scripts/abi-snapshot.sh and runs the same abidiff
# comparison as scripts/abi-check.sh on the second.
set -uo pipefail
out=${1:?usage: selftest.sh WORKDIR}
here=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
cat > "$out/probe.h" <<'H'
#include <stddef.h>
#include <stdint.h>
typedef struct probe_options {
  size_t struct_size;
#ifdef CHANGED
  uint64_t timeout_ms;
#else
  uint32_t timeout_ms;
#endif
} probe_options;
__attribute__((visibility("default"))) int probe_create(const probe_options* o);
H
printf '#include "probe.h"\nint probe_create(const probe_options* o) { return o ? (int)o->timeout_ms : 0; }\n' > "$out/probe.c"
cc -g -shared -fPIC -o "$out/libprobe_a.so" "$out/probe.c" -I"$out" || exit 1
cc -g -shared -fPIC -DCHANGED -o "$out/libprobe_b.so" "$out/probe.c" -I"$out" || exit 1
cc -g -shared -fPIC -o "$out/libprobe_c.so" "$out/probe.c" -I"$out" || exit 1
abidw --no-corpus-path --no-show-locs --exported-interfaces-only --drop-private-types --drop-undefined-syms --headers-dir "$out" --out-file "$out/a.abi" "$out/libprobe_a.so" || exit 1
for v in b c; do abidw --no-corpus-path --no-show-locs --exported-interfaces-only --drop-private-types --drop-undefined-syms --headers-dir "$out" --out-file "$out/$v.abi" "$out/libprobe_$v.so" || exit 1; done
abidiff --no-corpus-path --suppressions "$here/abi/unstable.suppr" "$out/a.abi" "$out/c.abi" >/dev/null
same=$?
abidiff --no-corpus-path --suppressions "$here/abi/unstable.suppr" "$out/a.abi" "$out/b.abi" > "$out/report.txt"
changed=$?
echo "identical build: abidiff exit $same; changed struct field: abidiff exit $changed"
[[ $same -eq 0 ]] || { echo "FAIL: an identical build was reported as changed"; exit 1; }
[[ $changed -ne 0 ]] || { echo "FAIL: a changed struct field was not detected"; cat "$out/report.txt"; exit 1; }
grep -q "timeout_ms" "$out/report.txt" || { echo "FAIL: the report does not name the changed field"; cat "$out/report.txt"; exit 1; }
echo "abi selftest: the check detects a changed struct"
