; E0602 (spec §4.26): an operation without a derivative rule on a path from a
; differentiated parameter to the result, reported at that operation — also
; inside a called (inlined) function; `:wrt` leaving the parameter out fixes it.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
(module m
  (func act (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
; CHECK: error[E0602]: `dloss` differentiates `loss`, which applies `gelu` to a value that depends on a differentiated parameter; shapeml has no derivative rule for `gelu`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:13
    (return (gelu x)))
  (func loss (dims N)
    (params (x (tensor f32 (N) host)) (w (tensor f32 (N) host)))
    (returns (tensor f32 (1) host))
    (return (reduce_sum (mul (call act x) w) :axes (0) :keepdims true)))
  (grad dloss loss)
  ; only w: the gelu is not on a differentiated path
  (grad dloss_w loss :wrt (w)))
; CHECK-NOT: error[
