; E0104: a dimension names a shape variable that the function does not
; declare in `(dims ...)`: in a parameter type, a `where` constraint, an
; operation's shape, a `let` ascription.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func f (dims N)
; CHECK: error[E0104]: unknown shape variable `K`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:15
; CHECK: = note: declare it in the function's `(dims ...)`
; JSON: E0104 [[@LINE+1]]:15
    (where (= K 4))
; CHECK: error[E0104]: unknown shape variable `M`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:31
; JSON-NEXT: E0104 [[@LINE+1]]:31
    (params (x (tensor f32 (N M) host)) (y (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
; CHECK: error[E0104]: unknown shape variable `H`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:24
; JSON-NEXT: E0104 [[@LINE+1]]:24
    (let a (reshape y (H N)))
    (return y))
  (func g
    (params)
; CHECK: error[E0104]: unknown shape variable `D`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:27
; CHECK: = note: this function declares no shape variables; add `(dims D)`
; JSON-NEXT: E0104 [[@LINE+1]]:27
    (returns (tensor f32 (D) host))
    (return (fill 0.0 (tensor f32 (1) host)))))
; CHECK-NOT: error[
; JSON-NEXT: 4 diagnostic(s)
