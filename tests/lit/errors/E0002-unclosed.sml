; E0002: the file ends inside a list. The diagnostic points at the outermost
; unclosed `(`, where the missing `)` belongs.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
; CHECK: error[E0002]: unclosed `(`: the file ends before its `)`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+4]]:1
; CHECK-NOT: error[
; JSON: E0002 [[@LINE+2]]:1
; JSON-NEXT: 1 diagnostic(s)
(module m
  (func f (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
    (return (neg x))
