; T-Binary and B-Shape (spec §4.5, §4.6): every binary operation, and the
; corners of broadcasting: literal-1 dimensions on either side, rank
; extension, rank 0, equal polynomials written differently, symbolic
; dimensions equal under `where`, bare number operands.
; RUN: %shapemlc check %s
; RUN: %shapemlc --emit=typed %s | FileCheck %s
(module binary
  (func ops (dims N)
    (params (x (tensor f32 (N) host)) (y (tensor f32 (N) host)) (i (tensor i64 (N) host)))
    (returns (tensor f32 (N) host) (tensor i64 (N) host))
    (let a (add (sub x y) (mul (div x y) (max x (min x y)))))
    (let b (pow x y))
    (let c (max (min i i) (add (sub i i) (mul (div i i) i))))
    (return (add a b) c))
  (func corners (dims B N M)
    (params
      (col (tensor f32 (N 1) host))
      (row (tensor f32 (1 M) host))
      (x3 (tensor f32 (B N M) host))
      (v (tensor f32 (M) host))
      (s (tensor f32 () host))
      (one (tensor f32 (1 1 1) host)))
    (returns (tensor f32 (B N M) host))
    ; (N 1) + (1 M) -> (N M): a literal 1 on each side.
    ; CHECK: outer = add(col, row) : (tensor f32 (N M) host)
    (let outer (add col row))
    ; Rank extension: (M) against (B N M).
    ; CHECK: ext = mul(v, x3) : (tensor f32 (B N M) host)
    (let ext (mul v x3))
    ; Rank 0 with rank 3, both orders.
    ; CHECK: s1 = sub(s, ext) : (tensor f32 (B N M) host)
    (let s1 (sub s ext))
    (let s2 (sub ext s))
    ; All-ones tensor of a higher rank.
    ; CHECK: o = add(one, v) : (tensor f32 (1 1 M) host)
    (let o (add one v))
    ; Bare numbers take the other operand's dtype and device, as rank 0.
    ; CHECK: %{{[0-9]+}} = const() {:value 2} : (tensor f32 () host)
    ; CHECK: lit = mul(%{{[0-9]+}}, outer) : (tensor f32 (N M) host)
    (let lit (mul 2 outer))
    (let lit2 (add lit 0.5))
    (return (add (add s1 s2) (add (mul o lit2) x3))))
  (func symbolic (dims N M K)
    (where (= M N) (= K (* 2 N)))
    (params (x (tensor f32 (N (* 2 N)) host)) (y (tensor f32 (M K) host)) (z (tensor f32 ((+ N N)) host)))
    (returns (tensor f32 (N K) host))
    ; (* 2 N) and (+ N N) normalize to the same polynomial: no obligation.
    (let a (add x z))
    ; N vs M and (* 2 N) vs K are proved from the `where` constraints; the
    ; result keeps the left operand's dimensions.
    ; CHECK: b = add(a, y) : (tensor f32 (N (* 2 N)) host)
    (let b (add a y))
    (return b)))
