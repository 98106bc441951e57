; REGRESSION (fixed, issue 7): a negative integer literal in a `where`
; constraint, e.g. (>= (- c (* 2 d)) -4), was rejected as "dimension -4 is
; negative" (E0305) and the constraint dropped; checking went on with fewer
; hypotheses, so the true slice below was refuted with a counterexample
; (c=1, d=3) that violates the `where` clause. The grammar allows negative
; literals in constraints; only dimensions inside types must be >= 1.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
; RUN: %shapemlc --emit=typed %S/Inputs/where-negative-literal-ok.sml | FileCheck %s --check-prefix=TYPED
; TYPED: func f[c, d] where (>= (- c (* 2 d)) -4) (>= d 3)
; And the run-time check reads it back from the module's manifest.
; RUN: %shapemlc run %S/Inputs/where-negative-literal-ok.sml --entry f --random x=1 --random y=2 --bind c=2,d=3 | FileCheck %s --check-prefix=RESULT
; RESULT: result 0: f32 (2)
; RUN: %expect-exit 1 %shapemlc run %S/Inputs/where-negative-literal-ok.sml --entry f --random x=1 --random y=2 --bind c=1,d=3 2>&1 | FileCheck %s --check-prefix=VIOLATED
; VIOLATED: (>= (- c (* 2 d)) -4) does not hold
(module m
  (func f (dims c d)
    (where (>= (- c (* 2 d)) -4) (>= d 3))
    (params (x (tensor f32 (c) host)) (y (tensor f32 (d) host)))
    (returns (tensor f32 ((- (* 2 d) 4)) host))
    (return (slice x :axis 0 :start 0 :size (- (* 2 d) 4))))
  ; A constraint that does not resolve (unknown variable Q) is reported, and
  ; the function is not checked under the remaining hypotheses: no E0304
  ; with a counterexample follows.
  (func g (dims c d)
; CHECK: error[E0104]: unknown shape variable `Q`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:40
; JSON: E0104 [[@LINE+1]]:40
    (where (>= (- c (* 2 d)) -4) (>= d Q))
    (params (x (tensor f32 (c) host)) (y (tensor f32 (d) host)))
    (returns (tensor f32 ((- (* 2 d) 4)) host))
    (return (slice x :axis 0 :start 0 :size (- (* 2 d) 4))))
  ; Inside a type, a negative literal is still an error.
  (func h (dims c)
    (params (x (tensor f32 (c) host)))
; CHECK: error[E0305]: dimension -4 is negative
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:29
; JSON-NEXT: E0305 [[@LINE+1]]:29
    (returns (tensor f32 (c -4) host))
    (return x)))
; CHECK-NOT: error[
; JSON-NEXT: 2 diagnostic(s)
