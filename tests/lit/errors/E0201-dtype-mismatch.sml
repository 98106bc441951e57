; E0201: operands of one operation, or a value and the type it is checked
; against, have different dtypes. There is no implicit conversion.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func f (dims N)
    (params (x (tensor f32 (N) host)) (i (tensor i32 (N) host)) (h (tensor f64 (N) host)))
    (returns (tensor f32 (N) host))
; CHECK: error[E0201]: operands of `add` have different dtypes f32 and i32
; CHECK-NEXT: --> [[FILE]]:[[@LINE+6]]:12
; CHECK: = expected: (tensor f32 (N) host)
; CHECK-NEXT: = actual: (tensor i32 (N) host)
; CHECK-NEXT: = note: shapeml never converts implicitly; convert one side with `(cast X f32)`
; CHECK-NOT: counterexample
; JSON: E0201 [[@LINE+1]]:12
    (let a (add x i))
; CHECK: error[E0201]: the condition of `select` must be bool, not f32
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0201 [[@LINE+1]]:12
    (let b (select x x x))
; CHECK: error[E0201]: operands of `concat` have different dtypes f32 and f64
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0201 [[@LINE+1]]:12
    (let c (concat x h :axis 0))
; CHECK: error[E0201]: `d` has dtype f64 where f32 is expected
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:34
; CHECK: = note: convert with `(cast X f32)`
; JSON-NEXT: E0201 [[@LINE+1]]:34
    (let d (tensor f32 (N) host) (neg h))
; CHECK: error[E0201]: returned value 1 of `f` has dtype i32 where f32 is expected
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:13
; JSON-NEXT: E0201 [[@LINE+1]]:13
    (return i)))
; CHECK-NOT: error[
; JSON-NEXT: 5 diagnostic(s)
