#!/usr/bin/env bash
# proofs/check.sh — build and audit the Coq development.
#   (i)   make (coqc via coq_makefile); any error fails the check;
#   (ii)  count Admitted per file: allowed only in the Stated file; the
#         proven files must not contain admit / Admitted / Axiom / Parameter /
#         Conjecture / Hypothesis / Variable / Unset ... Checking, nor import
#         the Stated file; every theorem of a proven file must be listed in
#         Assumptions.v;
#   (iii) compile Assumptions.v with coqc and require that every
#         Print Assumptions prints "Closed under the global context".
# Last line: "proofs: N passed, M failed" (N = theorems checked closed).
# Exit status 0 iff M = 0.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")" || exit 2
STATED=Stated.v
ASSUMPTIONS=Assumptions.v
COQFLAGS=(-Q . ShapeML)
THM_RE='^[[:space:]]*(Theorem|Lemma|Corollary|Example|Fact|Remark|Proposition)[[:space:]]+[A-Za-z0-9_'"'"']+'
FORBIDDEN_RE='\b(admit|Admitted|Axiom|Axioms|Parameter|Parameters|Conjecture|Hypothesis|Hypotheses|Variable|Variables)\b|Unset[[:space:]]+(Guard|Positivity|Universe)[[:space:]]+Checking'

passed=0
failed=0
problems=0
summary() { echo "proofs: $passed passed, $failed failed"; }

# ---------------------------------------------------------------- (i) build
echo "== build (make)"
if ! make --no-print-directory; then
  echo "check: build failed"
  failed=1; summary; exit 1
fi

# ------------------------------------------------------------- (ii) audit
mapfile -t VFILES < <(grep -E '\.v[[:space:]]*$' _CoqProject | sed 's/[[:space:]]//g')
echo "== Admitted per file"
proven=()
for f in "${VFILES[@]}"; do
  if [[ ! -f "$f" ]]; then
    echo "  ERROR: $f (listed in _CoqProject) not found"; problems=$((problems + 1)); continue
  fi
  n=$(grep -oE '\bAdmitted[[:space:]]*\.' "$f" | wc -l)
  printf '  %-14s %3d Admitted\n' "$f" "$n"
  if [[ "$f" == "$STATED" ]]; then continue; fi
  proven+=("$f")
  if ((n > 0)); then
    echo "  ERROR: Admitted outside $STATED in $f"; problems=$((problems + 1))
  fi
done

echo "== statements only (Admitted, in $STATED)"
grep -oE "$THM_RE" "$STATED" | awk '{print "  - " $2}'

echo "== forbidden constructs in proven files"
bad=0
for f in "${proven[@]}"; do
  if grep -nE "$FORBIDDEN_RE" "$f"; then
    echo "  ERROR: forbidden construct in $f (see above)"; bad=1
  fi
  if grep -nE "Require[^.]*\b${STATED%.v}\b" "$f"; then
    echo "  ERROR: $f imports ${STATED%.v}"; bad=1
  fi
done
if ((bad)); then problems=$((problems + 1)); else echo "  none"; fi

# every theorem of a proven file must be checked
mkdir -p .check
: > .check/theorems.txt
for f in "${proven[@]}"; do
  m=${f%.v}
  grep -oE "$THM_RE" "$f" | awk -v m="$m" '{print "ShapeML." m "." $2}' >> .check/theorems.txt
done
sort -u .check/theorems.txt -o .check/theorems.txt
if [[ ! -s .check/theorems.txt || ! -f "$STATED" ]]; then
  echo "== ERROR: no proven theorems found, or $STATED missing"; problems=$((problems + 1))
fi
grep -oE '^[[:space:]]*Print Assumptions[[:space:]]+[A-Za-z0-9_.'"'"']+' "$ASSUMPTIONS" \
  | awk '{print $3}' | sed 's/\.$//' > .check/listed.txt
sort -u .check/listed.txt > .check/listed.sorted
missing=$(comm -23 .check/theorems.txt .check/listed.sorted)
if [[ -n "$missing" ]]; then
  echo "== ERROR: theorems missing from $ASSUMPTIONS:"; echo "$missing" | sed 's/^/  /'
  problems=$((problems + 1))
fi

# -------------------------------------------------- (iii) Print Assumptions
echo "== Print Assumptions ($ASSUMPTIONS)"
expected=$(wc -l < .check/listed.txt)
coqc "${COQFLAGS[@]}" -noglob -o .check/Assumptions.vo "$ASSUMPTIONS" > .check/assumptions.out 2>&1
rc=$?
closed=$(grep -cx 'Closed under the global context' .check/assumptions.out || true)
other=$(grep -vx 'Closed under the global context' .check/assumptions.out | grep -c . || true)
if ((rc == 0 && closed == expected && other == 0)); then
  passed=$closed
else
  echo "  coqc exit $rc; $closed of $expected closed; other output:"
  grep -vx 'Closed under the global context' .check/assumptions.out | sed 's/^/    /' | head -40
  # attribute: check each theorem on its own
  header=$(grep -E '^From ShapeML Require' "$ASSUMPTIONS")
  while read -r thm; do
    printf '%s\nPrint Assumptions %s.\n' "$header" "$thm" > .check/One.v
    out=$(coqc "${COQFLAGS[@]}" -noglob -o .check/One.vo .check/One.v 2>&1)
    if [[ "$out" == "Closed under the global context" ]]; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1)); echo "  NOT CLOSED: $thm"; echo "$out" | sed 's/^/    /'
    fi
  done < .check/listed.txt
  ((failed == 0)) && failed=1   # the combined run failed even if each alone passed
fi
echo "  $passed theorems closed under the global context"

failed=$((failed + problems))
summary
((failed == 0))
