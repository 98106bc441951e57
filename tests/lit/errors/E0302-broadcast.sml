; E0302: dimensions that broadcasting would have to stretch but that are not
; the literal 1 and not provably equal (spec §4.5, §4.13). A shape variable
; that happens to be 1 is not stretched: broadcasting is decided on types.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  ; Forced counterexample: N=1, M=2. N=1 is allowed, yet N is not stretched.
  (func forced (dims N M)
    (where (<= N 1) (<= M 2) (!= N M))
    (params (x (tensor f32 (N) host)) (y (tensor f32 (M) host)))
    (returns (tensor f32 (M) host))
; CHECK: error[E0302]: operands of `add`: dimensions N and M cannot be broadcast together
; CHECK-NEXT: --> [[FILE]]:[[@LINE+10]]:13
; CHECK: = expected: (N)
; CHECK-NEXT: = actual: (M)
; CHECK-NEXT: = counterexample: N=1, M=2
; CHECK-NEXT: = note: broadcasting stretches only dimensions that are the literal 1; other dimensions must be equal
; CHECK-NEXT: = note: dimension 0 of the result (counting from 0 at the left)
; CHECK-NEXT: = note: with these values N = 1 and M = 2, so (= N M) is false
; CHECK-NEXT: = note: assumed: (<= N 1) (<= M 2) (!= N M)
; CHECK-EMPTY:
; JSON: E0302 [[@LINE+1]]:13
    (return (add x y)))
  ; Constant dimensions: no shape variables, so no counterexample values.
  (func constants
    (params (x (tensor f32 (2 3) host)) (y (tensor f32 (4) host)))
    (returns (tensor f32 (2 3) host))
; CHECK: error[E0302]: operands of `mul`: dimensions 3 and 4 cannot be broadcast together
; CHECK-NEXT: --> [[FILE]]:[[@LINE+5]]:13
; CHECK: = expected: (2 3)
; CHECK-NEXT: = actual: (4)
; CHECK-NOT: counterexample
; JSON-NEXT: E0302 [[@LINE+1]]:13
    (return (mul x y)))
  (func others (dims N M)
    (params (x (tensor f32 (N M) host)) (c (tensor bool (M N) host)) (v (tensor f32 (N) host)))
    (returns (tensor f32 (N M) host))
; Both aligned dimensions are reported.
; CHECK: error[E0302]: operands of `select`: dimensions M and N cannot be broadcast together
; CHECK-NEXT: --> [[FILE]]:[[@LINE+7]]:12
; CHECK: = counterexample: N={{[0-9]+}}, M={{[0-9]+}}
; CHECK: error[E0302]: operands of `select`: dimensions N and M cannot be broadcast together
; CHECK-NEXT: --> [[FILE]]:[[@LINE+4]]:12
; CHECK: = counterexample: N={{[0-9]+}}, M={{[0-9]+}}
; JSON-NEXT: E0302 [[@LINE+2]]:12
; JSON-NEXT: E0302 [[@LINE+1]]:12
    (let s (select c x x))
; CHECK: error[E0302]: `broadcast_to` cannot stretch dimension N to M
; CHECK-NEXT: --> [[FILE]]:[[@LINE+6]]:12
; CHECK: = expected: (N M)
; CHECK-NEXT: = actual: (N)
; CHECK-NEXT: = counterexample: N={{[0-9]+}}, M={{[0-9]+}}
; CHECK-NEXT: = note: only dimensions that are the literal 1 are stretched
; JSON-NEXT: E0302 [[@LINE+1]]:12
    (let b (broadcast_to v (N M)))
    (return x)))
; CHECK-NOT: error[
; JSON-NEXT: 5 diagnostic(s)
