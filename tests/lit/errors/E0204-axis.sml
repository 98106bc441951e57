; E0204: an axis or a permutation that does not fit the operand's rank.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func f (dims A B C)
    (params (x (tensor f32 (A B C) host)))
    (returns (tensor f32 (A B C) host))
; CHECK: error[E0204]: `permute` needs a permutation of 0..2 for a rank-3 tensor
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON: E0204 [[@LINE+1]]:12
    (let a (permute x (0 1 1)))
; CHECK: error[E0204]: `permute` needs a permutation of 0..2 for a rank-3 tensor
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0204 [[@LINE+1]]:12
    (let b (permute x (1 0)))
; CHECK: error[E0204]: axis 3 is out of range for `reduce_sum` on a rank-3 tensor
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:12
; CHECK: = note: valid axes are -3 .. 2
; JSON-NEXT: E0204 [[@LINE+1]]:12
    (let c (reduce_sum x :axes (3)))
; CHECK: error[E0204]: axis 2 is reduced twice
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0204 [[@LINE+1]]:12
    (let d (reduce_max x :axes (2 -1)))
; CHECK: error[E0204]: axis -4 is out of range for `concat` on a rank-3 tensor
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0204 [[@LINE+1]]:12
    (let e (concat x x :axis -4))
; CHECK: error[E0204]: axis 5 is out of range for `slice` on a rank-3 tensor
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0204 [[@LINE+1]]:12
    (let g (slice x :axis 5 :start 0 :size 1))
; CHECK: error[E0204]: `iota` axis 2 is out of range for rank 2
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0204 [[@LINE+1]]:12
    (let h (iota (tensor i32 (A B) host) :axis 2))
    (return x)))
; CHECK-NOT: error[
; JSON-NEXT: 7 diagnostic(s)
