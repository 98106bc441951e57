; T-Let, T-LetAsc and T-Sub (spec §4.2, §4.3): ascriptions checked by
; normalization or Z3, aliases.
; RUN: %shapemlc check %s
; RUN: %shapemlc --emit=typed %s | FileCheck %s
(module lets
  (func f (dims N M)
    (where (= M (+ N 1)))
    (params (x (tensor f32 (N M) host)))
    (returns (tensor f32 (N (+ N 1)) host))
    ; (The binding keeps the synthesized type (N M) rather than the ascribed
    ; one; see tests/lit/xfail/let-ascription-type.sml.)
    ; CHECK: a = relu(x) : (tensor f32 (N {{M|\(\+ N 1\)}}) host)
    (let a (tensor f32 (N (+ N 1)) host) (relu x))
    ; An alias gets its own binding, an identity broadcast_to.
    ; CHECK: b = broadcast_to(a) {:shape (N {{.*}})} : (tensor f32 (N {{.*}}) host)
    (let b a)
    (let c (tensor f32 (N M) host) b)
    (return c)))
