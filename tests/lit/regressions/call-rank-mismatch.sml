; REGRESSION (fixed): a call argument of the wrong rank is reported as E0306 ("cannot infer
; shape variable `N`") instead of E0203: src/check/elaborate.cpp
; Elaborator::call skips parameters whose rank differs ("reported below") but
; the E0306 check for uninferred variables runs before check_subsumes.
; Expected: E0203 "argument 1 of `g` has rank 2 where rank 1 is expected".
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s
; CHECK: error[E0203]: argument 1 of `g` has rank 2 where rank 1 is expected
; CHECK-NOT: E0306
(module m
  (func g (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
    (return x))
  (func f (dims K)
    (params (x (tensor f32 (K K) host)))
    (returns (tensor f32 (K) host))
    (return (call g x))))
