; E0001: a token that starts like a number but is not one.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func f (params)
    (returns (tensor f32 () host))
; CHECK: error[E0001]: malformed number `12abc`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+4]]:19
; CHECK: error[E0001]: malformed number `1.5.2`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:19
; CHECK-NOT: error[
    (let a (const 12abc f32))
    (let b (const 1.5.2 f32))
; JSON: E0001 [[@LINE-2]]:19
; JSON-NEXT: E0001 [[@LINE-2]]:19
; JSON-NEXT: 2 diagnostic(s)
    (return (add a b))))
