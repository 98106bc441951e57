; REGRESSION (fixed): a number written with a `+` sign (`+4`, `+1.5`) was
; read as the number, though the spec (§1) has `-?[0-9]+...` only: `+4`
; silently meant 4. Expected: E0001 at the token, naming it. Issue 24, item 12.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
(module m
  (func f
; CHECK: error[E0001]: malformed number `+4`: numbers take no `+` sign (write `4`)
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:55
    (params (x (tensor f32 (4) host)) (y (tensor f32 (+4) host)))
    (returns (tensor f32 (4) host))
; CHECK: error[E0001]: malformed number `+1.5`
    (return (mul x +1.5))))
