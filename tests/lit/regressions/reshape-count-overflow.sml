; REGRESSION: dimension arithmetic that overflows inside a typing rule (the
; element count of this reshape, 3037000500^2 > 2^63) is E0004 at the
; reshape; it used to escape as an internal error (E0900) at 1:1.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
(module m
  (func f (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
; CHECK: error[E0004]: dimension arithmetic overflows 64-bit integers in `reshape`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:14
; CHECK-NOT: E0900
    (let big (reshape x (3037000500 3037000500)))
    (return x)))
