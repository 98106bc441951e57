; REGRESSION (fixed, issue 7 held-out program 2): `(divides a a)` holds only
; when a >= 1. The syntactic shortcut proved `(divides a b)` whenever a and b
; were the same expression, so `(divides 0 0)` (the callee's constraint at
; K = 1) was discharged and `slice` read past the end of a 1-element input;
; only a run-time re-check stopped it.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func callee (dims K)
    (where (divides (- K 1) (- K 1)))
    (params (x (tensor f32 (K) host)))
    (returns (tensor f32 (1) host))
    (return (slice x :axis 0 :start 1 :size 1)))
  (func caller (dims)
    (params (x (tensor f32 (1) host)))
    (returns (tensor f32 (1) host))
; CHECK: error[E0306]: the call may violate `callee`'s constraint (divides (- K 1) (- K 1))
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:13
; CHECK: = note: inferred: K=1
; JSON: E0306 [[@LINE+1]]:13
    (return (call callee x)))
  ; Symbolic: K = 1 breaks it.
  (func symbolic (dims K)
    (params (x (tensor f32 (K) host)))
    (returns (tensor f32 (1) host))
; CHECK: error[E0306]: the call may violate `callee`'s constraint (divides (- K 1) (- K 1))
; CHECK-NEXT: --> [[FILE]]:[[@LINE+4]]:13
; CHECK: = counterexample: K=1
; CHECK-NOT: error[
; JSON-NEXT: E0306 [[@LINE+1]]:13
    (return (call callee x)))
  ; With K >= 2 known the call is fine.
  (func guarded (dims K)
    (where (>= K 2))
    (params (x (tensor f32 (K) host)))
    (returns (tensor f32 (1) host))
    (return (call callee x))))
; JSON-NEXT: 2 diagnostic(s)
