; E0303: a reshape whose element count is not provably the same for every
; shape allowed by the `where` constraints (spec §4.12).
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  ; Splitting N in halves needs N even; N >= 2 is not enough. With N <= 3 the
  ; only counterexample is N=3.
  (func halves (dims N)
    (where (>= N 2) (<= N 3))
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (2 (floordiv N 2)) host))
; CHECK: error[E0303]: `reshape` changes the number of elements: N elements into (* 2 (floordiv N 2))
; CHECK-NEXT: --> [[FILE]]:[[@LINE+8]]:13
; CHECK: = expected: (2 (floordiv N 2))
; CHECK-NEXT: = actual: (N)
; CHECK-NEXT: = counterexample: N=3
; CHECK-NEXT: = note: a reshape must keep the element count for every shape satisfying the `where` constraints
; CHECK-NEXT: = note: with these values N = 3 and (* 2 (floordiv N 2)) = 2, so (= N (* 2 (floordiv N 2))) is false
; CHECK-NEXT: = note: assumed: (>= N 2) (<= N 3)
; JSON: E0303 [[@LINE+1]]:13
    (return (reshape x (2 (floordiv N 2)))))
  ; Heads: D = H * Dh is what makes the reshape valid; D >= H is not enough.
  (func heads (dims S D H Dh)
    (where (>= D H))
    (params (dims_H_Dh (tensor f32 (H Dh) host)) (x (tensor f32 (S D) host)))
    (returns (tensor f32 (S H Dh) host))
; CHECK: error[E0303]: `reshape` changes the number of elements: (* D S) elements into (* Dh H S)
; CHECK-NEXT: --> [[FILE]]:[[@LINE+4]]:13
; CHECK: = counterexample: S={{[0-9]+}}, D={{[0-9]+}}, H={{[0-9]+}}, Dh={{[0-9]+}}
; CHECK: = note: with these values (* D S) = {{[0-9]+}} and (* Dh H S) = {{[0-9]+}}, so (= (* D S) (* Dh H S)) is false
; JSON-NEXT: E0303 [[@LINE+1]]:13
    (return (reshape x (S H Dh)))))
; CHECK-NOT: error[
; JSON-NEXT: 2 diagnostic(s)
