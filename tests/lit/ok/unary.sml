; T-Unary (spec §4.4): neg, abs, relu on every numeric dtype; the floating
; ones on f32, f64 and bf16. The result type is the operand's.
; RUN: %shapemlc check %s
; RUN: %shapemlc --emit=typed %s | FileCheck %s
(module unary
  (func numeric (dims N)
    (params (a (tensor i32 (N) host)) (b (tensor i64 (N 2) host)) (c (tensor f32 () host)) (d (tensor bf16 (N) (cuda 0))))
    (returns (tensor i32 (N) host) (tensor i64 (N 2) host) (tensor f32 () host) (tensor bf16 (N) (cuda 0)))
    ; CHECK: a1 = neg(%{{[0-9]+}}) : (tensor i32 (N) host)
    (let a1 (neg (abs (relu a))))
    ; CHECK: b1 = abs(b) : (tensor i64 (N 2) host)
    (let b1 (abs b))
    (let c1 (relu (neg c)))
    ; CHECK: d1 = relu(d) : (tensor bf16 (N) (cuda 0))
    (let d1 (relu d))
    (return a1 b1 c1 d1))
  (func floating (dims N M)
    (params (x (tensor f32 (N M) host)) (y (tensor f64 (M) host)) (z (tensor bf16 (N) host)))
    (returns (tensor f32 (N M) host) (tensor f64 (M) host) (tensor bf16 (N) host))
    (let x1 (exp (log (sqrt (rsqrt x)))))
    (let x2 (tanh (sigmoid (gelu (silu x1)))))
    ; CHECK: y1 = silu(%{{[0-9]+}}) : (tensor f64 (M) host)
    (let y1 (silu (gelu (sigmoid (tanh (rsqrt (sqrt (log (exp y)))))))))
    (let z1 (gelu (exp z)))
    (return x2 y1 z1)))
