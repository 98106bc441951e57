#!/usr/bin/env bash
# Differential test of the normalizer (docs/design/proofs.md): the Coq
# normalizer of proofs/Normalize.v (proven sound: eval (norm_dim d) = eval d),
# extracted to OCaml, against the checker's (src/types/poly.cpp), on
# generated pairs of dimension expressions (tests/proofs/gen_dims.py).
#
# For each pair (E1, E2) a function takes y : (tensor f32 (E1) host) and
# returns it as (tensor f32 (E2) host); the checker's T-Sub obligation
# (E0301), dumped with --dump-obligations, carries both normal forms
# (`; goal: (= N1 N2)`). "C++ equal" means N1 and N2 are the same text;
# "Coq equal" means norm_dim E1 = norm_dim E2. The test fails when
#   - the two normalizers disagree on a pair, or
#   - a pair the C++ normalizer calls equal takes different values at a
#     random valuation (an unsound normalization), or
#   - fewer than 3/4 of the pairs could be compared (a pair is skipped when
#     the checker rejects one of its types, E0305: it then does not check
#     the body).
# Usage: normalizer_diff.sh path/to/shapemlc REPO_ROOT [COUNT] [SEED]
set -uo pipefail
shapemlc=${1:?usage: normalizer_diff.sh shapemlc repo_root [count] [seed]}
root=${2:?}
count=${3:-300}
seed=${4:-20261130}
here="$root/tests/proofs"
py=/usr/bin/python3; [[ -x $py ]] || py=python3
for tool in coqc ocamlfind; do
  command -v "$tool" >/dev/null || { echo "normalizer_diff: $tool not found"; exit 1; }
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# The Coq side: build the proofs, extract the normalizer, compile the driver.
make --no-print-directory -C "$root/proofs" >/dev/null || { echo "normalizer_diff: proofs do not build"; exit 1; }
cp "$here/NormExtract.v" "$here/normdiff.ml" "$dir/"
( cd "$dir" && coqc -Q "$root/proofs" ShapeML NormExtract.v >/dev/null &&
  ocamlfind ocamlopt -w -a normx.mli normx.ml normdiff.ml -o normdiff ) ||
  { echo "normalizer_diff: extraction or OCaml build failed"; exit 1; }

"$py" "$here/gen_dims.py" "$seed" "$count" > "$dir/pairs.tsv"
"$dir/normdiff" < "$dir/pairs.tsv" > "$dir/coq.txt" || { echo "normalizer_diff: normdiff failed"; exit 1; }

# The C++ side: one module, one function per pair.
{
  echo "(module t"
  i=0
  while IFS=$'\t' read -r e1 e2; do
    printf '  (func f%d (dims A B C)\n    (params (x (tensor f32 (A B C) host)) (y (tensor f32 (%s) host)))\n    (returns (tensor f32 (%s) host))\n    (return y))\n' "$i" "$e1" "$e2"
    i=$((i + 1))
  done < "$dir/pairs.tsv"
  echo ")"
} > "$dir/t.sml"
mkdir -p "$dir/dump"
"$shapemlc" check --dump-obligations "$dir/dump" "$dir/t.sml" > "$dir/check.out" 2>&1

"$py" - "$dir" "$count" <<'PY'
import glob, os, random, re, sys
d, count = sys.argv[1], int(sys.argv[2])
pairs = [l.rstrip("\n").split("\t") for l in open(os.path.join(d, "pairs.tsv"))]
coq = [l.strip() == "1" for l in open(os.path.join(d, "coq.txt"))]

def split_top(s):
    # "(= L R)" -> [L, R]
    s = s.strip()[1:-1].strip()
    assert s.startswith("= ")
    s = s[2:]
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == " " and depth == 0:
            if cur: out.append(cur); cur = ""
            continue
        depth += ch == "("; depth -= ch == ")"
        cur += ch
    if cur: out.append(cur)
    return out

cpp = {}
for f in glob.glob(os.path.join(d, "dump", "t.f*.smt2")):
    m = re.match(r"t\.f(\d+)\.\d+\.smt2", os.path.basename(f))
    text = open(f).read()
    if "; rule: E0301" not in text:
        continue
    goal = re.search(r"^; goal: (.*)$", text, re.M).group(1)
    lhs, rhs = split_top(goal)
    cpp[int(m.group(1))] = (lhs == rhs)

def ev(e, env):
    toks = e.replace("(", " ( ").replace(")", " ) ").split()
    pos = 0
    def one():
        nonlocal pos
        t = toks[pos]; pos += 1
        if t != "(":
            return env[t] if t in env else int(t)
        op = toks[pos]; pos += 1
        args = []
        while toks[pos] != ")":
            args.append(one())
        pos += 1
        if op == "+": return sum(args)
        if op == "*":
            r = 1
            for a in args: r *= a
            return r
        if op == "-": return args[0] - args[1]
        if op == "floordiv": return args[0] // args[1]
        if op == "mod": return args[0] % args[1]
        raise ValueError(op)
    return one()

rnd = random.Random(7)
agree = disagree = missing = unsound = eq_both = 0
for i, (e1, e2) in enumerate(pairs):
    if i not in cpp:
        missing += 1   # a type the checker rejects (E0305 beyond the generator's grid): no body check
        continue
    c, q = cpp[i], coq[i]
    if c:
        for _ in range(20):
            env = {v: rnd.randint(1, 50) for v in "ABC"}
            if ev(e1, env) != ev(e2, env):
                unsound += 1
                print("UNSOUND f%d: C++ normal forms equal, values differ at %s: %s vs %s" % (i, env, e1, e2))
                break
    if c == q:
        agree += 1
        eq_both += c
    else:
        disagree += 1
        print("DISAGREE f%d: C++ %s, Coq %s: %s  vs  %s" % (i, "equal" if c else "different", "equal" if q else "different", e1, e2))
print("normalizer_diff: %d pairs, %d compared: %d agree (%d equal in both), %d disagree, %d unsound; "
      "%d skipped (a type the checker rejects, E0305)" % (len(pairs), agree + disagree, agree, eq_both,
                                                         disagree, unsound, missing))
ok = disagree == 0 and unsound == 0 and eq_both > 0 and agree >= len(pairs) * 3 // 4
sys.exit(0 if ok else 1)
PY
