; T-Not, T-Logic (spec §4.20): `not` keeps the type; `and`/`or` broadcast as
; every binary operation, a literal operand takes bool. sin/cos (§4.4) keep
; the floating type; reduce_min (§4.16) follows reduce_max.
; RUN: %shapemlc check %s
; RUN: %shapemlc --emit=typed %s | FileCheck %s
(module logic
  (func f (dims N M)
    (params (a (tensor bool (N M) host)) (b (tensor bool (M) host)) (x (tensor f32 (N M) host)) (i (tensor i64 (N M) host)))
    (returns (tensor bool (N M) host) (tensor f32 (N M) host) (tensor i64 (N) host) (tensor f64 (M) host))
    ; CHECK: n = not(a) : (tensor bool (N M) host)
    (let n (not a))
    ; CHECK: c = and(n, b) : (tensor bool (N M) host)
    (let c (and n b))
    ; CHECK: %{{[0-9]+}} = const() {:value 1} : (tensor bool () host)
    ; CHECK: d = or(c, %{{[0-9]+}}) : (tensor bool (N M) host)
    (let d (or c 1))
    (let e (and (gt x 0.0) (not (eq i 3))))
    ; CHECK: s = sin(x) : (tensor f32 (N M) host)
    (let s (sin x))
    ; CHECK: mn = reduce_min(i) {:axes (1)} : (tensor i64 (N) host)
    (let mn (reduce_min i :axes (-1)))
    (let k (reduce_min (cos (cast x f64)) :axes (0)))
    (return (or d e) (add s (cos x)) mn k)))
