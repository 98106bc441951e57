; E0501: Z3 could not decide an obligation within the budget. shapeml never
; accepts what it cannot prove. The constraint below says A^2 = 2 B^2, which
; has no positive solution (sqrt 2 is irrational) but which Z3 cannot refute;
; so the hypotheses are not reported as unsatisfiable (E0307 needs a
; refutation) but as undecided (a warning, E0501 too), and no obligation can
; be proved or refuted. With a 50 ms
; budget the answer is "unknown" quickly, whatever reason Z3 gives.
; (Not 1 ms: with Z3 4.8.12 a 1 ms budget is occasionally not honored and the
; check runs forever; %expect-exit stops it after 60 s.)
; RUN: %expect-exit 1 %shapemlc check --timeout-ms=50 %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --timeout-ms=50 --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func f (dims A B C)
    (where (= (* A A) (* 2 (* B B))))
    (params (dims_B_C (tensor f32 (B C) host)) (x (tensor f32 (A) host)))
    (returns (tensor f32 (B) host))
; CHECK: warning[E0501]: could not decide whether the `where` constraints of `f` can all hold
; CHECK: error[E0501]: could not prove (= A B) within 50 ms
; CHECK-NEXT: --> [[FILE]]:[[@LINE+7]]:13
; CHECK: = note: the obligation comes from: returned value 1 of `f`: dimension 0 is A where B is expected [E0301]
; CHECK-NEXT: = note: Z3 answered unknown ({{.+}}); shapeml rejects what it cannot prove
; CHECK-NEXT: = note: add a `where` constraint that makes it evident, or raise the budget
; CHECK-NOT: counterexample
; CHECK-NOT: error[
; JSON: E0501 [[@LINE+1]]:13
    (return x)))
; JSON-NEXT: 2 diagnostic(s)
