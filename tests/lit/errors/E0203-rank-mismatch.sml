; E0203: a rank that the rule does not allow: checking against a type of
; another rank, matmul operands, transpose of a vector, concat of different
; ranks, broadcast_to to a lower rank.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func f (dims B N K)
    (params (v (tensor f32 (K) host)) (w (tensor f32 (K N) host)) (x3 (tensor f32 (B N K) host)) (w3 (tensor f32 (B B K N) host)))
    (returns (tensor f32 (N K) host))
; CHECK: error[E0203]: `matmul` needs operands of rank >= 2, got ranks 1 and 2
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:12
; CHECK: = note: reshape a vector to a matrix with `(reshape X (1 N))`
; JSON: E0203 [[@LINE+1]]:12
    (let a (matmul v w))
; Batch dimensions broadcast (spec §4.10): ranks 3 and 4 are fine.
    (let b (matmul x3 w3))
; CHECK: error[E0203]: `transpose` needs rank >= 2, got rank 1
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0203 [[@LINE+1]]:12
    (let c (transpose v))
; CHECK: error[E0203]: operands of `concat` have ranks 1 and 2
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0203 [[@LINE+1]]:12
    (let d (concat v w :axis 0))
; CHECK: error[E0203]: `broadcast_to` cannot lower the rank from 2 to 1
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0203 [[@LINE+1]]:12
    (let e (broadcast_to w (N)))
; CHECK: error[E0203]: `g` has rank 1 where rank 2 is expected
; CHECK-NEXT: --> [[FILE]]:[[@LINE+4]]:36
; CHECK: = expected: (tensor f32 (K N) host)
; CHECK-NEXT: = actual: (tensor f32 (K) host)
; JSON-NEXT: E0203 [[@LINE+1]]:36
    (let g (tensor f32 (K N) host) (neg v))
; CHECK: error[E0203]: returned value 1 of `f` has rank 1 where rank 2 is expected
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:13
; JSON-NEXT: E0203 [[@LINE+1]]:13
    (return v)))
; CHECK-NOT: error[
; JSON-NEXT: 6 diagnostic(s)
