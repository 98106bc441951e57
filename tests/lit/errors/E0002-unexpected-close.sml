; E0002: a `)` with no open `(`. Each stray one is reported; the module before
; them is still checked (and is fine).
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func f (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
; CHECK: error[E0002]: unexpected `)` with no open `(`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+6]]:23
; CHECK: error[E0002]: unexpected `)` with no open `(`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+4]]:24
; CHECK-NOT: error[
; JSON: E0002 [[@LINE+2]]:23
; JSON-NEXT: E0002 [[@LINE+1]]:24
    (return (neg x))))))
; JSON-NEXT: 2 diagnostic(s)
