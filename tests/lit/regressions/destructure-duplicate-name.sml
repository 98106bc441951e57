; REGRESSION (fixed): `(let (a a) (call g x))` binds the same name twice without E0102
; (src/check/elaborate.cpp Elaborator::let checks each name against the
; scope, but not against the other names of the same `let`); the typed IR
; then has two values named `a`.
; Expected: E0102 "`a` is already defined in this function" at the second `a`.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; CHECK: error[E0102]:
; CHECK-NEXT: --> [[FILE]]:[[@LINE+9]]:13
(module m
  (func g (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host) (tensor f32 (N) host))
    (return x (neg x)))
  (func f (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
    (let (a a) (call g x))
    (return a)))
