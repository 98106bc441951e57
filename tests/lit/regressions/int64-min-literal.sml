; REGRESSION (fixed): the checker crashed (SIGSEGV) on a legal dimension
; literal equal to INT64_MIN: printing a polynomial negated its coefficient
; (-INT64_MIN overflows) in src/types/poly.cpp (and the SMT text of
; src/smt/shape_solver.cpp did the same). Expected: the program checks, and
; the constant prints as written. Issue 24, item 4.
; RUN: %shapemlc check %s
; RUN: %shapemlc --emit=typed %s | FileCheck %s
; CHECK: func f[N] where (>= N -9223372036854775808)
; CHECK: func g[N]
; CHECK: dim_value() {:dim -9223372036854775808}
(module m
  (func f (dims N) (where (>= N -9223372036854775808))
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
    (return x))
  (func g (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 () host))
    (return (dim_value (- -9223372036854775807 1) f32 host))))
