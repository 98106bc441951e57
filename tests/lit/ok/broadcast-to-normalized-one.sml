; T-BroadcastTo (spec §4.13): a source dimension stretches when it is 1 by
; its normal form, not only as the literal 1: (- 2 1) broadcasts to N. The
; Coq model agrees (proofs/Typing.v, bto_minus_one_is_one; issue 27).
; RUN: %shapemlc check %s
; RUN: %shapemlc --emit=typed %s | FileCheck %s
(module bt1
  (func f (dims N)
    (params (x (tensor f32 ((- 2 1)) host)) (y (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
    ; CHECK: broadcast_to(x) {:shape (N)} : (tensor f32 (N) host)
    (return (add (broadcast_to x (N)) y))))
