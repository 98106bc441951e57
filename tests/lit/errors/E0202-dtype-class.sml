; E0202: an operation needs a numeric or a floating dtype (spec §4.4, §4.6,
; §4.9, §4.16) and the operand has another one.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func f (dims N)
    (params (i (tensor i32 (N) host)) (b (tensor bool (N) host)))
    (returns (tensor i32 (N) host))
; CHECK: error[E0202]: `exp` needs a floating (f32, f64, bf16) operand, not i32
; CHECK-NEXT: --> [[FILE]]:[[@LINE+4]]:12
; CHECK: = actual: (tensor i32 (N) host)
; CHECK-NEXT: = note: convert with `(cast X f32)` first
; JSON: E0202 [[@LINE+1]]:12
    (let a (exp i))
; CHECK: error[E0202]: `neg` needs a numeric operand, not bool
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0202 [[@LINE+1]]:12
    (let c (neg b))
; CHECK: error[E0202]: `pow` needs a floating (f32, f64, bf16) operand, not i32
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0202 [[@LINE+1]]:12
    (let d (pow i i))
; CHECK: error[E0202]: `add` needs a numeric operand, not bool
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0202 [[@LINE+1]]:12
    (let e (add b b))
; CHECK: error[E0202]: `reduce_mean` needs a floating (f32, f64, bf16) operand, not i32
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0202 [[@LINE+1]]:12
    (let g (reduce_mean i))
; CHECK: error[E0202]: `matmul` needs a numeric operand, not bool
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0202 [[@LINE+1]]:12
    (let h (matmul (reshape b (N 1)) (reshape b (1 N))))
; CHECK: error[E0202]: `iota` makes numeric tensors, not bool
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0202 [[@LINE+1]]:12
    (let k (iota (tensor bool (N) host) :axis 0))
    (return i)))
; CHECK-NOT: error[
; JSON-NEXT: 7 diagnostic(s)
