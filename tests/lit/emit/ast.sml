; --emit=ast prints the parsed program in canonical layout: comments dropped,
; number literals as written, nested expressions kept nested (no ANF), and
; no type checking needed (this program is ill-typed but parses).
; RUN: %shapemlc --emit=ast %s | FileCheck %s --match-full-lines
; CHECK:      (module m
; CHECK-NEXT:   (func f
; CHECK-NEXT:     (dims N)
; CHECK-NEXT:     (where (= (mod N 2) 0) (divides 2 N))
; CHECK-NEXT:     (params (x (tensor bf16 (N (* 2 N)) (cuda 3))))
; CHECK-NEXT:     (returns (tensor f32 (N) host))
; CHECK-NEXT:     (let y (tensor bf16 (N (* 2 N)) (cuda 3)) (add x 1e-5))
; CHECK-NEXT:     (let z (reduce_mean (mul y y) :axes (-1) :keepdims true))
; CHECK-NEXT:     (let s (slice x :axis 1 :start (floordiv N 2) :size (+ N 1)))
; CHECK-NEXT:     (return z)))
; CHECK-NOT: {{.}}
;
; The AST printer's output is itself a fixed point of `fmt` and of --emit=ast.
; RUN: %shapemlc --emit=ast %s > %t.ast.sml
; RUN: %shapemlc --emit=ast %t.ast.sml > %t.ast2.sml
; RUN: diff %t.ast.sml %t.ast2.sml
; RUN: %shapemlc fmt %t.ast.sml > %t.fmt.sml
; RUN: diff %t.ast.sml %t.fmt.sml
(module m ; comments are not part of the AST
  (func f (dims N)
    (where (= (mod N 2) 0) (divides 2 N))
    (params (x (tensor bf16 (N (* 2 N)) (cuda 3))))
    (returns (tensor f32 (N) host))
    (let y (tensor bf16 (N (* 2 N)) (cuda 3))
      (add x 1e-5))
    (let z (reduce_mean (mul y y) :axes (-1) :keepdims true))
    (let s (slice x :axis 1 :start (floordiv N 2) :size (+ N 1)))
    (return z)))
