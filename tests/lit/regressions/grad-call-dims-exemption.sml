; REGRESSION (fixed): the E0308 exemption of a function given `:dims` at a
; call went to the function named in the call only: a helper called only
; through its `grad` (with `:dims`) was reported E0308 for its own variable.
; Expected: the call's `:dims` exempt the function the gradient
; differentiates too. Issue 24, item 15.
; RUN: %shapemlc check %s 2>&1 | FileCheck %s --allow-empty
; CHECK-NOT: E0308
(module m
  (func helper (dims N H)
    (params (x (tensor f32 ((* N H)) host)))
    (returns (tensor f32 (1) host))
    (return (reduce_sum x :axes (0) :keepdims true)))
  (grad dhelper helper)
  (func step (dims N)
    (params (x (tensor f32 ((* N 4)) host)))
    (returns (tensor f32 ((* N 4)) host))
    (let (l gx) (call dhelper :dims ((N N) (H 4)) x))
    (return gx)))
