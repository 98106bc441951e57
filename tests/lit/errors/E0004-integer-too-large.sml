; E0004: an integer literal that does not fit in a signed 64-bit integer, a
; float literal out of range, and dimension arithmetic that overflows.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func f (params)
    (returns (tensor i64 () host))
; CHECK: error[E0004]: integer literal `99999999999999999999` does not fit in 64 bits
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:19
; JSON: E0004 [[@LINE+1]]:19
    (let a (const 99999999999999999999 i64))
    (return a))
  (func g (params)
    (returns (tensor f64 () host))
; CHECK: error[E0004]: float literal `1e999` is out of range
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:19
; JSON-NEXT: E0004 [[@LINE+1]]:19
    (let a (const 1e999 f64))
    (return a))
  (func h
; CHECK: error[E0004]: dimension arithmetic overflows 64-bit integers
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:29
; JSON-NEXT: E0004 [[@LINE+1]]:29
    (params (x (tensor f32 ((* 4611686018427387904 4)) host)))
    (returns (tensor f32 (1) host))
    (return x)))
; CHECK-NOT: error[
; JSON-NEXT: 3 diagnostic(s)
