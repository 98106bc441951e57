; E0305: a dimension in a type that may be less than 1 (spec §3.4): a negative
; literal, zero, or an expression such as N - 1 that is 0 for N = 1.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func f (dims N)
; N - 1 < 1 only for N = 1: the counterexample is forced.
; CHECK: error[E0305]: dimension (- N 1) may be less than 1
; CHECK-NEXT: --> [[FILE]]:[[@LINE+6]]:16
; CHECK: = actual: (tensor f32 ((- N 1)) host)
; CHECK-NEXT: = counterexample: N=1
; CHECK-NEXT: = note: every dimension of a tensor type must be >= 1
; CHECK-NEXT: = note: with these values (- N 1) = 0 and 1 = 1, so (>= (- N 1) 1) is false
; JSON: E0305 [[@LINE+1]]:16
    (params (x (tensor f32 ((- N 1)) host)) (y (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
; CHECK: error[E0305]: dimension -3 is negative
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:35
; JSON-NEXT: E0305 [[@LINE+1]]:35
    (let a (fill 0.0 (tensor f32 (-3 N) host)))
; CHECK: error[E0305]: dimension 0 may be less than 1
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:12
; CHECK: = counterexample: N={{[0-9]+}}
; JSON-NEXT: E0305 [[@LINE+1]]:12
    (let b (reshape y (0 N)))
; CHECK: error[E0305]: dimension (floordiv N 2) may be less than 1
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:12
; CHECK: = counterexample: N=1
; JSON-NEXT: E0305 [[@LINE+1]]:12
    (let c (broadcast_to y ((floordiv N 2) N)))
    (return y)))
; CHECK-NOT: error[
; JSON-NEXT: 4 diagnostic(s)
