; E0206: a number literal whose dtype, device and shape cannot be inferred:
; a bare number with no expected type, `(fill V)` with no expected type, an
; elementwise operation whose operands are all literals.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func f (dims N)
    (params (x (tensor f32 (N) host)) (c (tensor bool (N) host)))
    (returns (tensor f32 (N) host))
; CHECK: error[E0206]: the type of literal `1.0` cannot be inferred here
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:12
; CHECK: = note: write `(const 1.0 f32)` or `(fill 1.0 (tensor f32 (...) host))`
; JSON: E0206 [[@LINE+1]]:12
    (let a 1.0)
; CHECK: error[E0206]: `(fill 0)` needs a type here
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:19
; JSON-NEXT: E0206 [[@LINE+1]]:19
    (let b (add x (fill 0)))
; CHECK: error[E0206]: cannot infer the dtype of the literals of `mul`: no operand is a tensor
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:12
; CHECK: = note: write one side as `(const V DTYPE)`
; JSON-NEXT: E0206 [[@LINE+1]]:12
    (let d (mul 2 3))
; CHECK: error[E0206]: cannot infer the dtype of the literals of `select`: no operand is a tensor
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0206 [[@LINE+1]]:12
    (let e (select c 1.0 0.0))
    (return x)))
; CHECK-NOT: error[
; JSON-NEXT: 4 diagnostic(s)
