; E0102: a name defined twice: a shape variable, a parameter, a `let` (also
; one that shadows a parameter, and one inside a destructuring `let`), a
; function.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func pair (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host) (tensor f32 (N) host))
    (return x x))
; CHECK: error[E0102]: shape variable `N` is declared twice
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:19
; JSON: E0102 [[@LINE+1]]:19
  (func f (dims N N)
; CHECK: error[E0102]: parameter `x` is declared twice
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:39
; JSON-NEXT: E0102 [[@LINE+1]]:39
    (params (x (tensor f32 (N) host)) (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
    (let a (neg x))
; CHECK: error[E0102]: `a` is already defined in this function
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:10
; JSON-NEXT: E0102 [[@LINE+1]]:10
    (let a (abs x))
; CHECK: error[E0102]: `x` is already defined in this function
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:10
; JSON-NEXT: E0102 [[@LINE+1]]:10
    (let x (abs x))
; CHECK: error[E0102]: `a` is already defined in this function
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:13
; JSON-NEXT: E0102 [[@LINE+1]]:13
    (let (b a) (call pair x))
    (return a))
; CHECK: error[E0102]: function `f` is defined twice in module `m`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:9
; JSON-NEXT: E0102 [[@LINE+1]]:9
  (func f (params) (returns (tensor f32 () host)) (return (const 0 f32))))
; CHECK-NOT: error[
; JSON-NEXT: 6 diagnostic(s)
