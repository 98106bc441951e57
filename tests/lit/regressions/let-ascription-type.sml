; REGRESSION (fixed): spec §4.2 (T-LetAsc) gives `(let x TYPE e)` the ascribed type, but the
; elaborator binds x to e's synthesized type (src/check/elaborate.cpp,
; Elaborator::let: only the name of the value is set). Here `a` should be
; (1), which broadcasts against (N); the checker keeps (K) and reports E0302
; (K = N refuted with K=1, N=2).
; Expected: the program checks, and --emit=typed shows a : (tensor f32 (1) host).
; RUN: %shapemlc check %s
; RUN: %shapemlc --emit=typed %s | FileCheck %s
; CHECK: a = neg(y) : (tensor f32 (1) host)
(module m
  (func f (dims K N)
    (where (= K 1))
    (params (y (tensor f32 (K) host)) (z (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
    (let a (tensor f32 (1) host) (neg y))
    (return (add a z))))
