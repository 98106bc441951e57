#!/usr/bin/env bash
# Translation validation, trusted mode (docs/design/obligations.md): dump every
# obligation the checker discharged for a corpus of programs, then re-decide
# each with the z3 command-line tool, independently of libshapeml. A proved
# obligation must come back `unsat`; a refuted one `sat` with the same
# counterexample.
# Usage: recheck.sh path/to/shapemlc REPO_ROOT
set -uo pipefail
shapemlc=${1:?}; root=${2:?}
command -v z3 >/dev/null || { echo "recheck: z3 CLI not found (apt-get install z3)"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
shopt -s nullglob
files=("$root"/examples/*.sml "$root"/tests/lit/ok/*.sml "$root"/tests/lit/errors/*.sml "$root"/tests/generated/largest.sml)
n=0
for f in "${files[@]}"; do
  "$shapemlc" check --dump-obligations "$dir/$(basename "$f" .sml)" "$f" >/dev/null 2>&1
  n=$((n + 1))
done
pass=0; fail=0; skipped=0
for o in "$dir"/*/*.smt2; do
  expect=$(sed -n 's/^; expect: //p' "$o")
  if [[ $expect == unknown ]]; then skipped=$((skipped + 1)); continue; fi
  out=$(timeout 30 z3 -T:20 "$o" 2>&1)
  verdict=$(printf '%s\n' "$out" | head -n1)
  if [[ $verdict != "$expect" ]]; then
    echo "MISMATCH $o: library said $expect, z3 CLI said $verdict"; fail=$((fail + 1)); continue
  fi
  if [[ $expect == sat ]]; then
    # The library's counterexample must satisfy the hypotheses and break the
    # goal: assert it and ask z3 again; it must stay sat.
    cex=$(sed -n 's/^; counterexample: //p' "$o")
    pinned="$dir/pinned.smt2"
    sed '/^(check-sat)/,$d' "$o" > "$pinned"
    for kv in $cex; do echo "(assert (= |${kv%%=*}| ${kv#*=}))" >> "$pinned"; done
    echo "(check-sat)" >> "$pinned"
    v2=$(z3 -T:20 "$pinned" 2>&1 | head -n1)
    if [[ $v2 != sat ]]; then echo "BAD COUNTEREXAMPLE $o: ($cex) gives $v2"; fail=$((fail + 1)); continue; fi
  fi
  pass=$((pass + 1))
done
echo "re-checked the obligations of $n programs with the z3 CLI ($skipped unknown skipped)"
echo "obligations: $pass passed, $fail failed"
[[ $fail -eq 0 && $pass -gt 0 ]]
