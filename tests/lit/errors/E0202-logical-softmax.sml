; E0202 for the operations of spec §4.20-4.23: `not and or` take bool only,
; `sin cos softmax log_softmax` a floating dtype, `reduce_min` a numeric one,
; and `dim_value` makes numeric tensors.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func f (dims N)
    (params (x (tensor f32 (N) host)) (i (tensor i64 (N) host)) (b (tensor bool (N) host)))
    (returns (tensor bool (N) host))
; CHECK: error[E0202]: `not` needs a bool operand, not f32
; CHECK-NEXT: --> [[FILE]]:[[@LINE+4]]:12
; CHECK: = actual: (tensor f32 (N) host)
; CHECK-NEXT: = note: make a bool with a comparison such as `(ne X 0)`, or convert with `(cast X bool)`
; JSON: E0202 [[@LINE+1]]:12
    (let a (not x))
; CHECK: error[E0202]: `and` needs a bool operand, not i64
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0202 [[@LINE+1]]:12
    (let c (and i i))
; Mixed dtypes are a mismatch first (E0201), as for every binary operation.
; CHECK: error[E0201]: operands of `or` have different dtypes bool and f32
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0201 [[@LINE+1]]:12
    (let d (or b x))
; CHECK: error[E0202]: `sin` needs a floating (f32, f64, bf16) operand, not i64
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0202 [[@LINE+1]]:12
    (let e (sin i))
; CHECK: error[E0202]: `cos` needs a floating (f32, f64, bf16) operand, not bool
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0202 [[@LINE+1]]:12
    (let g (cos b))
; CHECK: error[E0202]: `softmax` needs a floating (f32, f64, bf16) operand, not i64
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0202 [[@LINE+1]]:12
    (let h (softmax i))
; CHECK: error[E0202]: `log_softmax` needs a floating (f32, f64, bf16) operand, not bool
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0202 [[@LINE+1]]:12
    (let k (log_softmax b :axis 0))
; CHECK: error[E0202]: `reduce_min` needs a numeric operand, not bool
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0202 [[@LINE+1]]:12
    (let l (reduce_min b))
; CHECK: error[E0202]: `dim_value` makes numeric tensors, not bool
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:12
; CHECK: = note: compare the value instead, e.g. `(gt (dim_value N i64) 1)`
; JSON-NEXT: E0202 [[@LINE+1]]:12
    (let n (dim_value N bool))
    (return b)))
; CHECK-NOT: error[
; JSON-NEXT: 9 diagnostic(s)
