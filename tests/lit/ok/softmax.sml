; T-Softmax (spec §4.21): the result type is the operand's; `:axis` defaults
; to -1 and is stored normalized (0 <= axis < rank) in the typed IR.
; RUN: %shapemlc check %s
; RUN: %shapemlc --emit=typed %s | FileCheck %s
(module sm
  (func f (dims B S)
    (params (x (tensor f32 (B S) host)) (y (tensor f64 (2 B 3 S) host)) (z (tensor bf16 (S) host)))
    (returns (tensor f32 (B S) host) (tensor f64 (2 B 3 S) host) (tensor bf16 (S) host) (tensor f32 (B S) host))
    ; CHECK: p = softmax(x) {:axis 1} : (tensor f32 (B S) host)
    (let p (softmax x))
    ; CHECK: q = log_softmax(y) {:axis 1} : (tensor f64 (2 B 3 S) host)
    (let q (log_softmax y :axis -3))
    ; CHECK: r = softmax(z) {:axis 0} : (tensor bf16 (S) host)
    (let r (softmax z :axis 0))
    ; CHECK: t = log_softmax(x) {:axis 0} : (tensor f32 (B S) host)
    (let t (log_softmax x :axis 0))
    (return p q r t)))
