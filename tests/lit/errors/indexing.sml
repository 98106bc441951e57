; gather and take_along_axis (spec §4.20-4.21): indices of a non-integer
; dtype (E0201), a rank-0 table or indices of the wrong rank (E0203), an axis
; out of range (E0204), indices whose shape is not the data's without the
; axis (E0301, with a counterexample), operands on two devices (E0401).
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func f (dims V D B N)
    (params (t (tensor f32 (V D) host)) (s (tensor f32 () host)) (i (tensor i64 (B) host)) (fi (tensor f32 (B) host))
            (x (tensor f32 (B V) host)) (j (tensor i32 (N) host)) (g (tensor i64 (B) (cuda 0))))
    (returns (tensor f32 (B) host))
; CHECK: error[E0201]: the indices of `gather` must be i32 or i64, not f32
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:22
; CHECK: = help: convert them with `(cast IDX i64)`
; JSON: E0201 [[@LINE+1]]:22
    (let a (gather t fi))
; CHECK: error[E0203]: the table of `gather` must have rank >= 1 (rows are taken along its first axis)
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:20
; JSON-NEXT: E0203 [[@LINE+1]]:20
    (let b (gather s i))
; CHECK: error[E0204]: axis 2 is out of range for `take_along_axis` on a rank-2 tensor
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0204 [[@LINE+1]]:12
    (let c (take_along_axis x i :axis 2))
; CHECK: error[E0301]: `take_along_axis`: dimension 0 of the indices is N where B (dimension 0 of the data) is expected
; CHECK-NEXT: --> [[FILE]]:[[@LINE+4]]:31
; CHECK: = counterexample: V={{[0-9]+}}, D={{[0-9]+}}, B={{[0-9]+}}, N={{[0-9]+}}
; CHECK: = note: the indices' shape is the data's shape with axis 1 removed
; JSON-NEXT: E0301 [[@LINE+1]]:31
    (let d (take_along_axis x j))
; CHECK: error[E0401]: operands of `gather` live on different devices, host and (cuda 0)
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0401 [[@LINE+1]]:12
    (let h (gather t g))
; CHECK: error[E0203]: the indices of `take_along_axis` must have rank 1 (the data's rank without the axis), got rank 2
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:31
; JSON-NEXT: E0203 [[@LINE+1]]:31
    (let k (take_along_axis x (fill 0 (tensor i64 (B V) host))))
    (return (take_along_axis x i))))
; CHECK-NOT: error[
; JSON-NEXT: 6 diagnostic(s)
