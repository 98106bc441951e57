; REGRESSION (fixed, issue 7 held-out program 1): `(divides a b)` means
; a >= 1 and b mod a = 0 (spec §2) everywhere. `(divides (- 1 N) N)` cannot
; hold for any N >= 1 (1 - N <= 0), so the `where` clause is E0307. Before, the
; evaluator (`a != 0 and b % a == 0`) accepted N = 2, so the witness search
; called the clause satisfiable while Z3's hypotheses (a >= 1) were not, and
; the false reshape below was "proved" vacuously; at run time N = 2 passed the
; `where` check and the call failed inside code generation.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func f (dims N M)
; CHECK: error[E0307]: the `where` constraints of `f` cannot all hold
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON: E0307 [[@LINE+1]]:12
    (where (divides (- 1 N) N))
    (params (dims_N (tensor f32 (N) host)) (x (tensor f32 (M) host)))
    (returns (tensor f32 (M (+ 1 (floordiv M 9))) host))
    (return (reshape x (M (+ 1 (floordiv M 9))))))
  ; A zero divisor divides nothing, not even 0.
  (func g (dims N)
; CHECK: error[E0307]: the `where` constraints of `g` cannot all hold
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0307 [[@LINE+1]]:12
    (where (divides (- N N) (- N N)))
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
    (return x))
  ; Satisfiable (K >= 3): checks, and the divisor is a valid dimension.
  (func h (dims K N)
    (where (divides (- K 2) N))
    (params (x (tensor f32 (K N) host)))
    (returns (tensor f32 ((- K 2)) host))
    (return (fill 1.0))))
; The only diagnostics: the reshape was not also "proved" or refuted.
; CHECK-NOT: error[
; JSON-NEXT: 2 diagnostic(s)
