; E0305 at a call: an inferred callee shape variable must be >= 1 like an
; explicit one (the callee was checked only for such values). Found by the
; Coq model's T-Call (docs/design/proofs.md): (+ N 1) against K infers
; N = (- K 1), which is 0 at K = 1. With (>= K 2) the call checks.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
(module cp
  (func g (dims N)
    (params (x (tensor f32 ((+ N 1)) host)))
    (returns (tensor f32 (1) host))
    (return (slice x :axis 0 :start (- N 1) :size 1)))
  (func f (dims K)
    (params (y (tensor f32 (K) host)))
    (returns (tensor f32 (1) host))
; CHECK: error[E0305]: the call binds shape variable `N` of `g` to (- K 1), which may be less than 1
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:13
; CHECK: = counterexample: K=1
; CHECK: = note: inferred: N=(- K 1)
    (return (call g y)))
  (func f2 (dims K)
    (where (>= K 2))
    (params (y (tensor f32 (K) host)))
    (returns (tensor f32 (1) host))
    (return (call g y))))
; CHECK-NOT: error[
