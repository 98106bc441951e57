#!/usr/bin/env bash
# Proves that the ABI checks mean something: builds a probe library several
# ways, snapshots the first with the same abidw flags as scripts/abi-snapshot.sh
# and runs scripts/abi-check.sh's comparison (exact) and
# scripts/abi-check-released.sh's (additions allowed) on the others: a
# changed field fails both, a member appended to a struct and an added
# function pass the released check only, a removed function fails both, and
# so does a member put in the old layout's tail padding (an old caller's
# struct_size covers those bytes and leaves them uninitialized).
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
#ifdef APPENDED
  uint64_t flags; /* past the old end: the struct grows */
#endif
#ifdef INTO_PADDING
  uint32_t flags; /* in the old tail padding, which an old caller's struct_size covers */
#endif
} probe_options;
__attribute__((visibility("default"))) int probe_create(const probe_options* o);
#ifndef REMOVED
__attribute__((visibility("default"))) int probe_destroy(void);
#endif
#ifdef APPENDED
__attribute__((visibility("default"))) int probe_added(void);
#endif
H
cat > "$out/probe.c" <<'C'
#include "probe.h"
int probe_create(const probe_options* o) { return o ? (int)o->timeout_ms : 0; }
#ifndef REMOVED
int probe_destroy(void) { return 0; }
#endif
#ifdef APPENDED
int probe_added(void) { return 1; }
#endif
C
cc -g -shared -fPIC -o "$out/libprobe_a.so" "$out/probe.c" -I"$out" || exit 1
cc -g -shared -fPIC -DCHANGED -o "$out/libprobe_b.so" "$out/probe.c" -I"$out" || exit 1
cc -g -shared -fPIC -o "$out/libprobe_c.so" "$out/probe.c" -I"$out" || exit 1
cc -g -shared -fPIC -DAPPENDED -o "$out/libprobe_d.so" "$out/probe.c" -I"$out" || exit 1
cc -g -shared -fPIC -DREMOVED -o "$out/libprobe_e.so" "$out/probe.c" -I"$out" || exit 1
cc -g -shared -fPIC -DINTO_PADDING -o "$out/libprobe_f.so" "$out/probe.c" -I"$out" || exit 1
abidw --no-corpus-path --no-show-locs --exported-interfaces-only --drop-private-types --drop-undefined-syms --headers-dir "$out" --out-file "$out/a.abi" "$out/libprobe_a.so" || exit 1
for v in b c d e f; do abidw --no-corpus-path --no-show-locs --exported-interfaces-only --drop-private-types --drop-undefined-syms --headers-dir "$out" --out-file "$out/$v.abi" "$out/libprobe_$v.so" || exit 1; done
abidiff --no-corpus-path --suppressions "$here/abi/unstable.suppr" "$out/a.abi" "$out/c.abi" >/dev/null
same=$?
abidiff --no-corpus-path --suppressions "$here/abi/unstable.suppr" "$out/a.abi" "$out/b.abi" > "$out/report.txt"
changed=$?
echo "identical build: abidiff exit $same; changed struct field: abidiff exit $changed"
[[ $same -eq 0 ]] || { echo "FAIL: an identical build was reported as changed"; exit 1; }
[[ $changed -ne 0 ]] || { echo "FAIL: a changed struct field was not detected"; cat "$out/report.txt"; exit 1; }
grep -q "timeout_ms" "$out/report.txt" || { echo "FAIL: the report does not name the changed field"; cat "$out/report.txt"; exit 1; }
# The released check (as scripts/abi-check-released.sh runs it).
released() {
  abidiff --no-corpus-path --no-added-syms --suppressions "$here/abi/unstable.suppr" "$out/a.abi" "$out/$1.abi" > "$out/released-$1.txt"
  local rc=$?
  (( rc & 3 || rc & 8 )) && return 1
  python3 "$here/scripts/abi_released_report.py" < "$out/released-$1.txt" >/dev/null
}
released b; r_changed=$?
released d; r_appended=$?
released e; r_removed=$?
released f; r_padding=$?
abidiff --no-corpus-path --suppressions "$here/abi/unstable.suppr" "$out/a.abi" "$out/d.abi" >/dev/null; e_appended=$?
echo "released check: changed field exit $r_changed, appended member + added function exit $r_appended, removed function exit $r_removed, member in the old padding exit $r_padding; exact check of the appended one: exit $e_appended"
[[ $r_changed -ne 0 ]] || { echo "FAIL: the released check let a changed field through"; exit 1; }
[[ $r_appended -eq 0 ]] || { echo "FAIL: the released check refused an appended member or an added function"; cat "$out/released-d.txt"; exit 1; }
[[ $r_removed -ne 0 ]] || { echo "FAIL: the released check let a removed function through"; exit 1; }
[[ $r_padding -ne 0 ]] || { echo "FAIL: the released check let a member in the old tail padding through"; exit 1; }
[[ $e_appended -ne 0 ]] || { echo "FAIL: the exact check let an appended member through"; exit 1; }
echo "abi selftest: the checks detect a changed struct; the released check allows appending, detects removal and a member in old padding"
