; E0101: a name that is not a parameter or an earlier `let`. The notes say
; when the name is a shape variable or an operation.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func f (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
; CHECK: error[E0101]: unknown name `y`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:19
; CHECK-NOT: = note
; JSON: E0101 [[@LINE+1]]:19
    (let a (add x y))
; CHECK: error[E0101]: unknown name `N`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:19
; CHECK: = note: `N` is a shape variable, not a value
; JSON-NEXT: E0101 [[@LINE+1]]:19
    (let b (mul x N))
; CHECK: error[E0101]: unknown name `relu`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:19
; CHECK: = note: `relu` is an operation; apply it as `(relu ...)`
; JSON-NEXT: E0101 [[@LINE+1]]:19
    (let c (add x relu))
; A later use of a name whose definition failed is not reported again.
    (let d (add a b))
; CHECK: error[E0101]: unknown name `later`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:17
; JSON-NEXT: E0101 [[@LINE+1]]:17
    (let e (neg later))
    (let later (neg x))
    (return d)))
; CHECK-NOT: error[
; JSON-NEXT: 4 diagnostic(s)
