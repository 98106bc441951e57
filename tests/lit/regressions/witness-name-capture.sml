; BUG (unsound): the fresh names for `divides` witnesses are valid shape
; variable names, so a user variable can capture them and a false obligation
; is accepted.
;  - src/smt/shape_solver.cpp defining_substitution(): `(divides H D)`
;    rewrites D := H * __w0; with a user variable `__w0`, D = H * __w0 is
;    "proved" by normalization.
;  - src/smt/shape_solver.cpp Impl::formula(): the Z3 witness constant
;    `__k0` is the same Z3 constant as a user variable `__k0`.
; (The Z3 witnesses are numbered across the module, so `by_z3` must come
; first to meet `__k0`.) Both functions below are accepted (exit 0) though D=2, H=1, __w0=1 (and
; D=1, H=1, __k0=1) are counterexamples. Renaming the variable (to W, K)
; gives the expected E0301.
; Expected: E0301 for both, exit 1 (or reject `__`-prefixed names).
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s
; CHECK: error[E0301]: returned value 1 of `by_z3`
; CHECK: error[E0301]: returned value 1 of `by_substitution`
(module m
  (func by_z3 (dims D H __k0)
    (where (divides H (* 2 D)))
    (params (dims_H___k0 (tensor f32 (H __k0) host)) (x (tensor f32 ((* 2 D)) host)))
    (returns (tensor f32 ((* H __k0)) host))
    (return x))
  (func by_substitution (dims D H __w0)
    (where (divides H D))
    (params (dims_H___w0 (tensor f32 (H __w0) host)) (x (tensor f32 (D) host)))
    (returns (tensor f32 ((* H __w0)) host))
    (return x)))
