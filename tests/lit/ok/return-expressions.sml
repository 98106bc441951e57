; `return` takes expressions (spec §2 `ret ::= ( return expr+ )`, §4.19), each
; checked against its declared type in checking mode, so a bare literal or
; `(fill N)` takes the declared type; comparisons take bool operands (§4.7).
; RUN: %shapemlc check %s
; RUN: %shapemlc --emit=typed %s | FileCheck %s
(module m
  (func f (dims N)
    (params (x (tensor f32 (N) host)) (b (tensor bool (N) host)))
    (returns (tensor f32 (N) host) (tensor f32 () host) (tensor bool (N) host) (tensor bool (N) host) (tensor i32 (N 2) host))
    ; CHECK: func f[N]
    ; CHECK: add(x, %{{[0-9]+}}) : (tensor f32 (N) host)
    ; CHECK: lt(b, %{{[0-9]+}}) : (tensor bool (N) host)
    ; CHECK: eq(b, b) : (tensor bool (N) host)
    ; CHECK: fill{{.*}} : (tensor i32 (N 2) host)
    (return (add x 1.0) 2.0 (lt b (gt x 0.0)) (eq b b) (fill 7))))
