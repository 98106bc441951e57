; E0105: `call` of a function that is not defined before the caller: a typo,
; a function defined later, or the caller itself (no recursion, spec §4.19).
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func f (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
; CHECK: error[E0105]: unknown function `nrom`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:12
; CHECK: = note: a function can call only functions defined before it in the module
; JSON: E0105 [[@LINE+1]]:12
    (let a (call nrom x))
; CHECK: error[E0105]: unknown function `g`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0105 [[@LINE+1]]:12
    (let b (call g x))
; CHECK: error[E0105]: unknown function `f`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:13
; JSON-NEXT: E0105 [[@LINE+1]]:13
    (return (call f x)))
  (func g (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
    (return x)))
; CHECK-NOT: error[
; JSON-NEXT: 3 diagnostic(s)
