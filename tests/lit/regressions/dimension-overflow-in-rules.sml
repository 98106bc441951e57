; REGRESSION (fixed): dimension arithmetic done by a typing rule (the element count of
; `reshape`, the summed axis of `concat`, start + size of `slice`) throws
; DimOverflow out of type_op; check_source catches it as E0900 "internal
; compiler error" at 1:1 and the rest of the module is not checked.
; src/check/rules.cpp (product(), concat's sum, slice's start + size) and
; src/check/elaborate.cpp (no catch around type_op).
; Expected: E0004 at each operation (as for overflow while reading a type),
; the other functions still checked, no E0900.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; CHECK-NOT: E0900
(module m
  (func r (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (3037000500 3037000500) host))
; CHECK: error[E0004]: dimension arithmetic overflows 64-bit integers
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:13
    (return (reshape x (3037000500 3037000500))))
  (func c (params (x (tensor f32 (4611686018427387904) host)))
    (returns (tensor f32 (4611686018427387904) host))
; CHECK: error[E0004]: dimension arithmetic overflows 64-bit integers
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:12
    (let y (concat x x :axis 0))
    (return x))
  (func s (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (2) host))
; CHECK: error[E0004]: dimension arithmetic overflows 64-bit integers
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:13
    (return (slice x :axis 0 :start 9223372036854775807 :size 2))))
; CHECK-NOT: E0900
