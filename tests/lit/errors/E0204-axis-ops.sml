; E0204 and E0203 for the operations along one axis (spec §4.21, §4.22):
; softmax, log_softmax and repeat_interleave take an axis in -rank .. rank-1
; of an operand of rank >= 1.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func f (dims A B)
    (params (x (tensor f32 (A B) host)) (s (tensor f32 () host)))
    (returns (tensor f32 (A B) host))
; CHECK: error[E0204]: axis 2 is out of range for `softmax` on a rank-2 tensor
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:12
; CHECK: = note: valid axes are -2 .. 1
; JSON: E0204 [[@LINE+1]]:12
    (let a (softmax x :axis 2))
; CHECK: error[E0204]: axis -3 is out of range for `log_softmax` on a rank-2 tensor
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0204 [[@LINE+1]]:12
    (let b (log_softmax x :axis -3))
; CHECK: error[E0204]: axis 5 is out of range for `repeat_interleave` on a rank-2 tensor
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0204 [[@LINE+1]]:12
    (let c (repeat_interleave x :repeats 2 :axis 5))
; CHECK: error[E0203]: `softmax` needs an operand of rank >= 1, got rank 0
; CHECK-NEXT: --> [[FILE]]:[[@LINE+4]]:12
; CHECK: = actual: (tensor f32 () host)
; CHECK-NEXT: = note: reshape a scalar with `(reshape X (1))`
; JSON-NEXT: E0203 [[@LINE+1]]:12
    (let d (softmax s))
; CHECK: error[E0203]: `repeat_interleave` needs an operand of rank >= 1, got rank 0
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0203 [[@LINE+1]]:12
    (let e (repeat_interleave s :repeats 3 :axis 0))
    (return x)))
; CHECK-NOT: error[
; JSON-NEXT: 5 diagnostic(s)
