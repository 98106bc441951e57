; E0401: operands on different devices, or a value checked against a type on
; another device. Data moves only by `copy_to_device` / `copy_to_host`.
; (Spec §3.2, §4.3.)
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func f (dims N)
    (params (x (tensor f32 (N) host)) (g (tensor f32 (N) (cuda 0))) (g1 (tensor f32 (N) (cuda 1))))
    (returns (tensor f32 (N) (cuda 0)))
; CHECK: error[E0401]: operands of `add` live on different devices, host and (cuda 0)
; CHECK-NEXT: --> [[FILE]]:[[@LINE+5]]:12
; CHECK: = expected: (tensor f32 (N) host)
; CHECK-NEXT: = actual: (tensor f32 (N) (cuda 0))
; CHECK-NEXT: = help: move the second operand with `(copy_to_host X)`, or the first with `(copy_to_device X (cuda 0))`
; JSON: E0401 [[@LINE+1]]:12
    (let a (add x g))
; CHECK: error[E0401]: operands of `matmul` live on different devices, (cuda 0) and (cuda 1)
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:12
; CHECK: = help: move the second operand with `(copy_to_device X (cuda 0))`
; JSON-NEXT: E0401 [[@LINE+1]]:12
    (let b (matmul (reshape g (N 1)) (reshape g1 (1 N))))
; CHECK: error[E0401]: returned value 1 of `f` lives on host where (cuda 0) is expected
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:13
; CHECK: = help: move it with `(copy_to_device X (cuda 0))`
; JSON-NEXT: E0401 [[@LINE+1]]:13
    (return x)))
; CHECK-NOT: error[
; JSON-NEXT: 3 diagnostic(s)
