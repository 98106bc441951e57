; Diagnostics end with a `help:` line where the fix is known.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
(module m
  ; A reduction without :keepdims dropped the axis the subtraction needs.
  (func center (dims B S D)
    (params (x (tensor f32 (B S D) host)))
    (returns (tensor f32 (B S D) host))
    (let mean (reduce_mean x :axes (-1)))
; CHECK: error[E0302]: {{.*}}cannot be broadcast together
; CHECK: = help: the shorter operand looks like a reduction over the last axis of the longer one; reduce with `:keepdims true` to keep that axis as 1
    (return (sub x mean)))
  ; A weight stored as (out, in): the help suggests the transpose.
  (func proj (dims B D F)
    (params (x (tensor f32 (B D) host)) (w (tensor f32 (F D) host)))
    (returns (tensor f32 (B F) host))
; CHECK: error[E0301]: `matmul` contraction dimensions differ: D (last of the left operand) vs F (second to last of the right operand)
; CHECK: = help: the right operand's last dimension is D: if it is stored transposed, write `(matmul A (transpose B))`
    (return (matmul x w))))
