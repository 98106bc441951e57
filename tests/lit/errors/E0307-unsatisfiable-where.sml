; E0307: `where` constraints that no positive values satisfy; every obligation
; would hold vacuously, so the function is rejected.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func f (dims N)
; CHECK: error[E0307]: the `where` constraints of `f` cannot all hold
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:12
; CHECK-NEXT: {{^ +}}|{{$}}
; JSON: E0307 [[@LINE+1]]:12
    (where (> N 3) (< N 2))
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
    (return x))
; Odd and even at once.
  (func g (dims N M)
; CHECK: error[E0307]: the `where` constraints of `g` cannot all hold
; CHECK-NEXT: --> [[FILE]]:[[@LINE+4]]:12
; CHECK: = note: no positive values of the shape variables satisfy them, so every obligation would hold vacuously
; CHECK-NOT: counterexample
; JSON-NEXT: E0307 [[@LINE+1]]:12
    (where (divides 2 N) (= (mod N 2) 1))
    (params (dims_M (tensor f32 (M) host)) (x (tensor f32 (N) host)))
; With impossible constraints the body would check anyway; it is not the
; reason for the error.
    (returns (tensor f32 (M) host))
    (return x))
; Shape variables are >= 1, so N + M = 1 cannot hold.
  (func h (dims N M)
; CHECK: error[E0307]: the `where` constraints of `h` cannot all hold
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0307 [[@LINE+1]]:12
    (where (= (+ N M) 1))
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
    (return x)))
; CHECK-NOT: error[
; JSON-NEXT: 3 diagnostic(s)
