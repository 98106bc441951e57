; E0306: a call whose callee's shape variables cannot be inferred from the
; arguments, or whose arguments may violate the callee's `where` constraints.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  ; N comes from `n`; then (* N M) is linear in M, but a caller that passes
  ; K for `n` and (+ K 1) for `x` has no exact symbolic M = (+ K 1) / K.
  (func flat (dims N M)
    (params (n (tensor f32 (N) host)) (x (tensor f32 ((* N M)) host)))
    (returns (tensor f32 ((* N M)) host))
    (return x))
  (func at_least_two (dims N)
    (where (>= N 2))
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
    (return x))
  (func f (dims K)
    (params (x (tensor f32 (K) host)) (y (tensor f32 ((+ K 1)) host)))
    (returns (tensor f32 (K) host))
; CHECK: error[E0306]: cannot infer shape variable `M` of `flat` from dimension 0 of argument 2, (+ K 1), against (* M N)
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:12
; CHECK: = note: solving for `M` needs a division that is not exact for every value of the caller's shape variables
; JSON: E0306 [[@LINE+1]]:12
    (let a (call flat x y))
; K = 1 is the only value that breaks N >= 2.
; CHECK: error[E0306]: the call may violate `at_least_two`'s constraint (>= N 2)
; CHECK-NEXT: --> [[FILE]]:[[@LINE+5]]:12
; CHECK: = counterexample: K=1
; CHECK-NEXT: = note: inferred: N=K
; CHECK-NEXT: = note: with these values K = 1 and 2 = 2, so (>= K 2) is false
; JSON-NEXT: E0306 [[@LINE+1]]:12
    (let b (call at_least_two x))
    (return x)))
; CHECK-NOT: error[
; JSON-NEXT: 2 diagnostic(s)
