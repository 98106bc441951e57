; T-DimValue (spec §4.23): a dimension expression as a rank-0 value of a
; numeric dtype, on the host unless a device is given.
; RUN: %shapemlc check %s
; RUN: %shapemlc --emit=typed %s | FileCheck %s
(module dv
  (func f (dims B S Dh)
    (params (x (tensor f32 (B S Dh) host)))
    (returns (tensor f32 (B S Dh) host) (tensor i64 () host) (tensor f64 () (cuda 0)))
    ; CHECK: %0 = dim_value() {:dim Dh} : (tensor f32 () host)
    ; CHECK-NEXT: scale = rsqrt(%0) : (tensor f32 () host)
    (let scale (rsqrt (dim_value Dh f32)))
    ; CHECK: n = dim_value() {:dim (- (* B S) 1)} : (tensor i64 () host)
    (let n (dim_value (- (* B S) 1) i64))
    ; CHECK: d = dim_value() {:dim 7} : (tensor f64 () (cuda 0))
    (let d (dim_value 7 f64 (cuda 0)))
    (return (mul x scale) n d)))
