; E0601 (spec §4.26): `grad` premises — one floating result, `:wrt` names
; floating parameters once; E0105 for an unknown function; E0003 for forms.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
; the reader's and parser's errors come first
; CHECK: error[E0003]: `grad` is `(grad NAME OF)` or `(grad NAME OF :wrt (PARAM...))`
; JSON: E0003 [[@LINE+1]]:3
  (grad g8)
  (func two (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host) (tensor f32 (N) host))
    (return x x))
  (func count (dims N)
    (params (x (tensor f32 (N) host)) (ids (tensor i64 (N) host)))
    (returns (tensor i64 (N) host))
    (return ids))
  (func loss (dims N)
    (params (x (tensor f32 (N) host)) (ids (tensor i64 (N) host)) (w (tensor f32 (N) host)))
    (returns (tensor f32 (1) host))
    (return (reduce_sum (mul x w) :axes (0) :keepdims true)))
  (func ints (dims N)
    (params (ids (tensor i64 (N) host)))
    (returns (tensor f32 (1) host))
    (return (reduce_sum (cast ids f32) :axes (0) :keepdims true)))
; CHECK: error[E0601]: `grad` differentiates a function with one result; `two` returns 2
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0601 [[@LINE+1]]:12
  (grad g1 two)
; CHECK: error[E0601]: `grad` differentiates a floating result; `count` returns (tensor i64 (N) host)
; JSON-NEXT: E0601 [[@LINE+1]]:12
  (grad g2 count)
; CHECK: error[E0601]: `y` is not a parameter of `loss`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:23
; JSON-NEXT: E0601 [[@LINE+1]]:23
  (grad g3 loss :wrt (y))
; CHECK: error[E0601]: parameter `ids` of `loss` is (tensor i64 (N) host), not floating
; CHECK: = note: gradients exist only with respect to floating parameters
; JSON-NEXT: E0601 [[@LINE+1]]:23
  (grad g4 loss :wrt (ids))
; CHECK: error[E0601]: `w` is listed twice in `:wrt`
; JSON-NEXT: E0601 [[@LINE+1]]:25
  (grad g5 loss :wrt (w w))
; CHECK: error[E0601]: `ints` has no floating parameter to differentiate with respect to
; JSON-NEXT: E0601 [[@LINE+1]]:12
  (grad g6 ints)
; CHECK: error[E0105]: unknown function `later`
; CHECK: = note: `grad` can differentiate only a function defined before it in the module
; JSON-NEXT: E0105 [[@LINE+1]]:12
  (grad g7 later)
  (func later (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
    (return x)))
; CHECK-NOT: error[
; JSON-NEXT: 8 diagnostic(s)
