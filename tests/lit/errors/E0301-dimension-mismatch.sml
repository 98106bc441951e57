; E0301: two dimensions that must be equal are not provably equal: a value
; checked against a type (return, ascription, call argument), matmul
; contraction dimensions (batch: E0302), concat's other dimensions. The diagnostic
; gives a counterexample from Z3.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  ; The constraints leave exactly one counterexample: N=2, M=1.
  (func forced (dims N M)
    (where (<= N 2) (<= M 1))
    (params (x (tensor f32 (N M) host)))
    (returns (tensor f32 (N N) host))
; CHECK: error[E0301]: returned value 1 of `forced`: dimension 1 is M where N is expected
; CHECK-NEXT: --> [[FILE]]:[[@LINE+8]]:13
; CHECK: = expected: (tensor f32 (N N) host)
; CHECK-NEXT: = actual: (tensor f32 (N M) host)
; CHECK-NEXT: = counterexample: N=2, M=1
; CHECK-NEXT: = note: with these values M = 1 and N = 2, so (= M N) is false
; CHECK-NEXT: = note: assumed: (<= N 2) (<= M 1)
; CHECK-EMPTY:
; JSON: E0301 [[@LINE+1]]:13
    (return x))
  (func id2 (dims N)
    (params (x (tensor f32 (N N) host)))
    (returns (tensor f32 (N N) host))
    (return x))
  (func f (dims B N K K2)
    (params (a (tensor f32 (B N K) host)) (w (tensor f32 (K2 N) host)) (c (tensor f32 (K N K) host)) (d (tensor f32 (B N K2) host)))
    (returns (tensor f32 (B N K) host))
; CHECK: error[E0301]: `matmul` contraction dimensions differ: K (last of the left operand) vs K2 (second to last of the right operand)
; The caret is on the right operand, a label on its declaration, and both
; operands are shown with their names (neither is "the wrong one").
; CHECK-NEXT: --> [[FILE]]:[[@LINE+9]]:22
; CHECK: ::: [[FILE]]:28:43
; CHECK: ---------------------------- `w` is declared here
; CHECK-NEXT: = left operand `a`: (tensor f32 (B N K) host)
; CHECK-NEXT: = right operand `w`: (tensor f32 (K2 N) host)
; CHECK-NEXT: = counterexample: B={{[0-9]+}}, N={{[0-9]+}}, K={{[0-9]+}}, K2={{[0-9]+}}
; CHECK-NEXT: = note: with these values K = {{[0-9]+}} and K2 = {{[0-9]+}}, so (= K K2) is false
; CHECK-NEXT: = help: the left operand's last dimension must equal the right operand's second to last; state it with `(where (= K K2))` if it always holds
; JSON-NEXT: E0301 [[@LINE+1]]:22
    (let p (matmul a w))
; Batch dimensions broadcast (spec §4.10): B and K are neither equal nor 1.
; CHECK: error[E0302]: batch dimensions of `matmul`: dimensions B and K cannot be broadcast together
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:12
; CHECK: = counterexample: B={{[0-9]+}}, N={{[0-9]+}}, K={{[0-9]+}}, K2={{[0-9]+}}
; JSON-NEXT: E0302 [[@LINE+1]]:12
    (let q (matmul a (transpose c)))
; CHECK: error[E0301]: operands of `concat` differ in dimension 2 (not the concatenated axis)
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:12
; CHECK: = counterexample: B={{[0-9]+}}, N={{[0-9]+}}, K={{[0-9]+}}, K2={{[0-9]+}}
; JSON-NEXT: E0301 [[@LINE+1]]:12
    (let r (concat a d :axis 1))
; CHECK: error[E0301]: argument 1 of `id2`: dimension 1 is K where (* B N) is expected
; CHECK-NEXT: --> [[FILE]]:[[@LINE+5]]:12
; CHECK: = expected: (tensor f32 ((* B N) (* B N)) host)
; CHECK-NEXT: = actual: (tensor f32 ((* B N) K) host)
; CHECK: = counterexample: B={{[0-9]+}}, N={{[0-9]+}}, K={{[0-9]+}}, K2={{[0-9]+}}
; JSON-NEXT: E0301 [[@LINE+1]]:12
    (let s (call id2 (reshape a ((* B N) K))))
; Each mismatched dimension is its own diagnostic.
; CHECK: error[E0301]: `t`: dimension 1 is N where K is expected
; CHECK-NEXT: --> [[FILE]]:[[@LINE+7]]:38
; CHECK: = counterexample: B={{[0-9]+}}, N={{[0-9]+}}, K={{[0-9]+}}, K2={{[0-9]+}}
; CHECK: error[E0301]: `t`: dimension 2 is K where N is expected
; CHECK-NEXT: --> [[FILE]]:[[@LINE+4]]:38
; CHECK: = counterexample: B={{[0-9]+}}, N={{[0-9]+}}, K={{[0-9]+}}, K2={{[0-9]+}}
; JSON-NEXT: E0301 [[@LINE+2]]:38
; JSON-NEXT: E0301 [[@LINE+1]]:38
    (let t (tensor f32 (B K N) host) a)
    (return a)))
; CHECK-NOT: error[
; JSON-NEXT: 7 diagnostic(s)
