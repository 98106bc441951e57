; REGRESSION (fixed): a `where` clause whose satisfiability Z3 leaves
; undecided (N^2 = 2 M^2 has no positive solution, which needs more than
; Z3's nonlinear arithmetic) passed silently, although if it cannot hold
; every obligation of the function holds vacuously. Expected: said, as a
; warning naming the clause (the program still checks: the constraints may
; hold). Issue 24, item 17.
; RUN: %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
(module m
; CHECK: warning[E0501]: could not decide whether the `where` constraints of `f` can all hold
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:29
  (func f (dims N M) (where (= (* N N) (* 2 M M)))
    (params (x (tensor f32 (N) host)) (y (tensor f32 (M) host)))
    (returns (tensor f32 (N) host))
    (return x))
; A clause Z3 decides says nothing.
; CHECK-NOT: warning
  (func g (dims D H Dh) (where (= D (* H Dh)))
    (params (x (tensor f32 (D) host)) (y (tensor f32 (H Dh) host)))
    (returns (tensor f32 (D) host))
    (return x)))
