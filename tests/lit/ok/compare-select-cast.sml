; T-Compare, T-Select, T-Cast (spec §4.7, §4.8).
; RUN: %shapemlc check %s
; RUN: %shapemlc --emit=typed %s | FileCheck %s
(module cmp
  (func f (dims N M)
    (params (x (tensor f32 (N M) host)) (y (tensor f32 (M) host)) (k (tensor i32 (N 1) host)))
    (returns (tensor f32 (N M) host) (tensor bool (N M) host) (tensor i64 (N M) host))
    ; CHECK: c1 = eq(x, y) : (tensor bool (N M) host)
    (let c1 (eq x y))
    (let c2 (ne x y))
    (let c3 (lt x 0))
    (let c4 (le x y))
    (let c5 (gt 1.5 x))
    ; CHECK: c6 = ge(k, %{{[0-9]+}}) : (tensor bool (N 1) host)
    (let c6 (ge k 3))
    ; The condition and both branches broadcast together.
    ; CHECK: s = select(c6, x, y) : (tensor f32 (N M) host)
    (let s (select c6 x y))
    ; A literal branch takes the other branch's dtype.
    (let relu_by_hand (select c3 0.0 s))
    ; Casts between every kind of dtype.
    ; CHECK: b = cast(c1) {:to bool} : (tensor bool (N M) host)
    (let b (cast c1 bool))
    (let asint (cast (cast (cast x bf16) f64) i64))
    (let back (cast (cast b i32) f32))
    (return (add relu_by_hand back) (select c2 c4 c5) asint)))
