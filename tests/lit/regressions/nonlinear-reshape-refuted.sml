; REGRESSION (fixed): a false non-linear reshape is refuted with a counterexample (two-variable witness search), not E0501.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s
; CHECK: error[E0303]
; CHECK: = counterexample: S={{[0-9]+}}, D={{[0-9]+}}, H={{[0-9]+}}, Dh={{[0-9]+}}, K={{[0-9]+}}
; CHECK-NOT: E0501
; Found by tests/generated: a reshape that is false whenever K != H (for example S=4, K=2,
; H=1, Dh=1, D=1) gets E0501 (Z3 unknown) instead of E0303 with a
; counterexample, even after 5da2102 (small-witness search, then a fresh-solver
; retry).
;   shapemlc check unknown_on_refutable.sml   -> E0501, exit 1
; Expected: E0303 with a counterexample.
; The witness search only tries valuations where every variable has one base
; value (1 or 2) except one variable. With (< 3 S), S must be >= 4, and K and
; H must also differ, so no candidate satisfies the hypotheses and breaks the
; goal. Without (< 3 S) the search finds one. Z3 then gives up on the
; nonlinear goal 3*Dh*Dh*K*K = 3*Dh*Dh*H*K. Possible fixes:
;   - vary two variables at a time;
;   - start from a small model of the hypotheses alone and perturb it;
;   - cancel common factors before asking Z3, which leaves K = H here.
; Found by gen_programs.py --seed 29 (mutant 30).
(module m
  (func f
    (dims S D H Dh K)
    (where (= D (* H Dh)) (< 3 S) (<= K S))
    (params (dims_S_D_H (tensor f32 (S D H) host)) (x (tensor f32 (3 Dh Dh K K) host)))
    (returns (tensor f32 (3 Dh Dh H K) host))
    (return (reshape x (3 Dh Dh H K)))))
