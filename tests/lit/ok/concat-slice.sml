; T-Concat and T-Slice (spec §4.14, §4.15).
; RUN: %shapemlc check %s
; RUN: %shapemlc --emit=typed %s | FileCheck %s
(module cs
  (func concat (dims N A B)
    (params (x (tensor f32 (N A) host)) (y (tensor f32 (N B) host)) (z (tensor f32 (N 3) host)))
    (returns (tensor f32 (N (+ A B 3)) host) (tensor f32 ((* 2 N) A) host) (tensor f32 (N A) host))
    ; CHECK: c = concat(x, y, z) {:axis {{-1|1}}} : (tensor f32 (N (+ A B 3)) host)
    ; CHECK: c2 = concat(x, x) {:axis 0} : (tensor f32 ((* 2 N) A) host)
    (let c (concat x y z :axis -1))
    (let c2 (concat x x :axis 0))
    ; One operand is allowed.
    (let c1 (concat x :axis 1))
    (return c c2 c1))
  (func slice (dims N D)
    (where (>= D 8) (divides 2 N))
    (params (x (tensor f32 (N D) host)))
    (returns (tensor f32 (N 4) host) (tensor f32 ((floordiv N 2) D) host) (tensor f32 (N (- D 4)) host))
    ; CHECK: a = slice(x) {:axis 1 :start 2 :size 4} : (tensor f32 (N 4) host)
    (let a (slice x :axis -1 :start 2 :size 4))
    ; The second half of the rows.
    (let b (slice x :axis 0 :start (floordiv N 2) :size (floordiv N 2)))
    ; Symbolic start and size: 4 + (D - 4) = D.
    (let c (slice x :axis 1 :start 4 :size (- D 4)))
    (return a b c))
  (func split_concat (dims N)
    (params (x (tensor f32 ((* 2 N)) host)))
    (returns (tensor f32 ((* 2 N)) host))
    (let lo (slice x :axis 0 :start 0 :size N))
    (let hi (slice x :axis 0 :start N :size N))
    ; CHECK: %0 = concat(hi, lo) {:axis 0} : (tensor f32 ((* 2 N)) host)
    (return (concat hi lo :axis 0))))
