; E0103: the head of an expression is not an operation of spec §4 (nor `call`).
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func f (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
; CHECK: error[E0103]: unknown operation `layer_norm`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:13
; CHECK-NOT: error[
; JSON: E0103 [[@LINE+1]]:13
    (let y (layer_norm x))
; JSON-NEXT: 1 diagnostic(s)
    (return y)))
