; T-Transpose and T-Permute (spec §4.11).
; RUN: %shapemlc check %s
; RUN: %shapemlc --emit=typed %s | FileCheck %s
(module tp
  (func f (dims A B C D)
    (params (x (tensor f32 (A B) host)) (y (tensor f32 (A B C D) host)) (z (tensor f32 (C) host)))
    (returns (tensor f32 (B A) host) (tensor f32 (A B D C) host) (tensor f32 (D B C A) host) (tensor f32 (C) host))
    ; CHECK: t = transpose(x) : (tensor f32 (B A) host)
    (let t (transpose x))
    (let t4 (transpose y))
    ; CHECK: p = permute(y) {:perm (3 1 2 0)} : (tensor f32 (D B C A) host)
    (let p (permute y (3 1 2 0)))
    ; The identity permutation, and a permutation of a rank-1 tensor.
    (let same (permute (permute y (0 1 2 3)) (0 1 2 3)))
    (let z1 (permute z (0)))
    (return (transpose (transpose t)) t4 (add p (permute same (3 1 2 0))) z1)))
