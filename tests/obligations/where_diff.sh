#!/usr/bin/env bash
# Differential test of the `where` pipeline (docs/design/proofs.md, "From
# where to Z3 to the run-time check"): for every constraint form, the SMT-LIB
# that the checker dumps and the C++ run-time check of a call agree on a grid
# of values of the shape variables.
#
# For each constraint C, a module q holds f (dims N M) (where C), an identity
# on a (N M) tensor, and a module p holds f and g (dims N M), with no
# constraint, which calls f. The dump of f's obligations carries C's encoding
# as a hypothesis, and the dump of g's call obligation (E0306, refuted: p does
# not check) carries it as a goal. For every (N, M)
# in 1..G x 1..G:
#   hypothesis side: the dumped hypotheses, with N and M pinned, are sat
#                    (evaluated by the z3 CLI)  iff  the run-time check passes;
#   goal side:       the dumped query (hypotheses and the negated goal), pinned,
#                    is unsat  iff  the run-time check passes;
#   run-time check:  `shapemlc run --entry f --bind N=n,M=m --random x=1`
#                    binds N and M from x's shape and evaluates C
#                    (ShapeConstraint::eval, runtime/shape_binding.cpp); exit 0
#                    iff it holds, exit 1 naming the constraint iff it does not.
# The Coq contract (proofs/Where.v) is the implication each side needs
# (run-time check => hypotheses, goal => meaning); agreement on the grid is
# what this test checks.
# Usage: where_diff.sh path/to/shapemlc [GRID]
set -uo pipefail
shapemlc=${1:?usage: where_diff.sh shapemlc [grid]}
G=${2:-7}
command -v z3 >/dev/null || { echo "where_diff: z3 CLI not found (apt-get install z3)"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

forms=(
  '(= (mod N 3) 1)'
  '(!= N M)'
  '(< (floordiv N 2) M)'
  '(<= (* N M) 12)'
  '(> N (+ M 1))'
  '(>= (- N (* 2 M)) -4)'
  '(divides M N)'
  '(divides (- M 2) N)'
  '(= (+ N 1) (* 2 M))'
)

pass=0; fail=0; points=0
for idx in "${!forms[@]}"; do
  c=${forms[$idx]}
  w="$dir/f$idx"; mkdir -p "$w/dump"
  fdef="  (func f (dims N M)
    (where $c)
    (params (x (tensor f32 (N M) host)))
    (returns (tensor f32 (N M) host))
    (return x))"
  printf '(module q\n%s)\n' "$fdef" > "$w/q.sml"
  cat > "$w/p.sml" <<SML
(module p
$fdef
  (func g (dims N M)
    (params (x (tensor f32 (N M) host)))
    (returns (tensor f32 (N M) host))
    (return (call f x))))
SML
  if ! "$shapemlc" check --dump-obligations "$w/dump" "$w/q.sml" > "$w/check.out" 2>&1; then
    echo "FAIL $c: the module with f alone does not check: $(head -n3 "$w/check.out")"; fail=$((fail + 1)); continue
  fi
  "$shapemlc" check --dump-obligations "$w/dump" "$w/p.sml" > /dev/null 2>&1
  hyp=$(ls "$w"/dump/q.f.*.smt2 2>/dev/null | head -n1)
  goal=$(grep -l '^; rule: E0306' "$w"/dump/p.g.*.smt2 2>/dev/null | head -n1)
  if [[ -z $hyp ]]; then
    # a goal that Φ-free normalization proves is never sent to Z3 and has no
    # file; every form above is refutable, so both files must exist
    echo "FAIL $c: no dumped obligation of f (check output: $(head -n3 "$w/check.out"))"; fail=$((fail + 1)); continue
  fi
  if [[ -z $goal ]]; then
    echo "FAIL $c: no dumped call obligation (E0306) of g"; fail=$((fail + 1)); continue
  fi
  # Queries: the dump without its own goal (hypothesis side) / with it (goal
  # side), then one pinned check-sat per grid point.
  # the goal is the last assertion of a dump (a hypothesis may itself begin
  # with `(assert (not`, as != does)
  last=$(grep -n '^(assert ' "$hyp" | tail -n1 | cut -d: -f1)
  sed -e "${last}d" "$hyp" | grep -v -e '^(check-sat)' -e '^(get-value' > "$w/hyp.smt2"
  grep -v -e '^(check-sat)' -e '^(get-value' "$goal" > "$w/goal.smt2"
  for n in $(seq 1 "$G"); do
    for m in $(seq 1 "$G"); do
      for q in hyp goal; do
        printf '(push)\n(assert (= |N| %d))\n(assert (= |M| %d))\n(check-sat)\n(pop)\n' "$n" "$m" >> "$w/$q.smt2"
      done
    done
  done
  mapfile -t hs < <(timeout 120 z3 -T:60 "$w/hyp.smt2" 2>&1)
  mapfile -t gs < <(timeout 120 z3 -T:60 "$w/goal.smt2" 2>&1)
  k=0; bad=0
  for n in $(seq 1 "$G"); do
    for m in $(seq 1 "$G"); do
      out=$("$shapemlc" run "$w/q.sml" --entry f --bind "N=$n,M=$m" --random x=1 2>&1); rc=$?
      if ((rc == 0)); then rt=1
      elif ((rc == 1)) && grep -q 'where constraint .* does not hold' <<<"$out"; then rt=0
      else echo "FAIL $c at N=$n M=$m: shapemlc run exit $rc: $out"; bad=$((bad + 1)); k=$((k + 1)); continue
      fi
      h=${hs[$k]:-missing}; g=${gs[$k]:-missing}
      hz=$([[ $h == sat ]] && echo 1 || { [[ $h == unsat ]] && echo 0 || echo "?"; })
      gz=$([[ $g == unsat ]] && echo 1 || { [[ $g == sat ]] && echo 0 || echo "?"; })
      if [[ $hz != "$rt" || $gz != "$rt" ]]; then
        echo "MISMATCH $c at N=$n M=$m: run-time check $rt, dumped hypothesis $h, dumped goal query $g"
        bad=$((bad + 1))
      fi
      k=$((k + 1)); points=$((points + 1))
    done
  done
  if ((bad == 0)); then pass=$((pass + 1)); else fail=$((fail + 1)); fi
done
echo "where_diff: ${#forms[@]} constraint forms, $points grid points (N, M in 1..$G), hypothesis and goal encodings vs the run-time check"
echo "where_diff: $pass passed, $fail failed"
((fail == 0 && pass == ${#forms[@]}))
