; T-Const, T-Fill, T-Iota (spec §4.9).
; RUN: %shapemlc check %s
; RUN: %shapemlc --emit=typed %s | FileCheck %s
(module consts
  (func f (dims N M)
    (params (x (tensor f32 (N M) (cuda 1))))
    (returns (tensor f32 (N M) (cuda 1)) (tensor i64 (N M) host) (tensor bool () host) (tensor f32 (N M) (cuda 1)))
    ; CHECK: a = const() {:value 3} : (tensor i64 () host)
    (let a (const 3 i64))
    ; CHECK: b = const() {:value 1} : (tensor bool () host)
    (let b (const 1 bool))
    (let c (const -2.5e3 f32 (cuda 1)))
    (let d (const inf f64))
    (let e (const -2147483648 i32))
    ; CHECK: z = fill() {:value 0} : (tensor f32 (N M) (cuda 1))
    (let z (fill 0 (tensor f32 (N M) (cuda 1))))
    ; `(fill V)` and a bare number take the expected type.
    ; CHECK: ones = fill() {:value 1} : (tensor f32 (N M) (cuda 1))
    (let ones (tensor f32 (N M) (cuda 1)) (fill 1))
    (let twos (tensor f32 (N M) (cuda 1)) 2.0)
    ; CHECK: rows = iota() {:axis 0} : (tensor i64 (N M) host)
    (let rows (iota (tensor i64 (N M) host) :axis 0))
    (let cols (iota (tensor i64 (N M) host) :axis 1))
    ; Without :axis, the axis is 0.
    (let r (iota (tensor f32 (N) host)))
    (return (add (mul x c) (add z (sub ones twos))) (add rows (add cols a)) b nan)))
