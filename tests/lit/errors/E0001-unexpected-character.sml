; E0001: a character that starts no token. `#` is not part of the language.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func f (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
; CHECK: error[E0001]: unexpected character `#`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:17
; CHECK-NOT: error[
; JSON: E0001 [[@LINE+1]]:17
    (let y (neg #x))
; JSON-NEXT: 1 diagnostic(s)
    (return y)))
