; E0207: a literal that the expected dtype cannot represent: a non-integer
; for i32/i64, anything but 0 or 1 for bool, an integer outside i32.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func f (dims N)
    (params (i (tensor i32 (N) host)))
    (returns (tensor i32 (N) host))
; CHECK: error[E0207]: literal `1.5` is not an integer but the expected dtype is i64
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:19
; JSON: E0207 [[@LINE+1]]:19
    (let a (const 1.5 i64))
; CHECK: error[E0207]: literal `2` is not a bool (write 0 or 1)
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:19
; JSON-NEXT: E0207 [[@LINE+1]]:19
    (let b (const 2 bool))
; CHECK: error[E0207]: literal `3000000000` does not fit in i32
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:19
; JSON-NEXT: E0207 [[@LINE+1]]:19
    (let c (const 3000000000 i32))
; A literal operand takes the other operand's dtype, here i32.
; CHECK: error[E0207]: literal `0.5` is not an integer but the expected dtype is i32
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:19
; JSON-NEXT: E0207 [[@LINE+1]]:19
    (let d (mul i 0.5))
; A bare literal takes the ascribed type.
; CHECK: error[E0207]: literal `-1` is not a bool (write 0 or 1)
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:35
; JSON-NEXT: E0207 [[@LINE+1]]:35
    (let e (tensor bool (N) host) -1)
; CHECK: error[E0207]: literal `nan` is not an integer but the expected dtype is i32
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:13
; JSON-NEXT: E0207 [[@LINE+1]]:13
    (return nan)))
; CHECK-NOT: error[
; JSON-NEXT: 6 diagnostic(s)
