; REGRESSION (fixed): the counterexample names every variable, or says that a value does not fit in 64 bits.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s
; CHECK: error[E0301]
; CHECK: = note: counterexample with values beyond 64 bits: B={{[0-9]+}}, S={{[0-9]+}}
; Found by tests/generated: a counterexample can leave out shape variables. ShapeSolver::prove
; (src/smt/shape_solver.cpp) keeps only the model values for which
; is_numeral_i64 holds and drops the others without a word. Here the only
; refutation needs S = 2^63 or more, so the E0301 says "counterexample":
; {"B":1}, with no S and no "with these values" note.
;   shapemlc check --format=json counterexample_missing_values.sml
; Expected: a value for every shape variable, or a diagnostic that says the
; counterexample does not fit in 64 bits. Generated programs hit this
; through Z3 models with huge values: before 5da2102's small-witness search,
; gen_programs.py --seed 7 (mutant 49) got an E0306 counterexample without D
; and H.
(module m
  (func f
    (dims B S)
    (where (> S 9223372036854775806))
    (params (x (tensor f32 (B S) host)))
    (returns (tensor f32 (B 9223372036854775807) host))
    (return x)))
