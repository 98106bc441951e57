; Parameter bundles (spec §4.32), misused: E0107 for a bundle declared twice,
; a bundle where a tensor is expected, a wrong number of dimensions, an
; unknown field and a missing one in a bundle value. A function with such an
; error is not checked further (no follow-up errors for the names it lost).
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (bundle L (dims I O)
    (w (tensor f32 (I O) host))
    (b (tensor f32 (O) host)))
; CHECK: error[E0107]: bundle `L` is declared twice
; JSON: E0107 [[@LINE+1]]:11
  (bundle L (w (tensor f32 (2) host)))
  (func f (dims N I O)
    (params (p (L I O)) (x (tensor f32 (N I) host)))
    (returns (tensor f32 (N O) host))
; CHECK: error[E0107]: `p` is a bundle (L), not a tensor
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:28
; CHECK: = help: name one of its fields, e.g. `p.w`; a whole bundle is passed to a call or returned
; JSON-NEXT: E0107 [[@LINE+1]]:28
    (return (add (matmul x p) p.b)))
  (func g (dims I O)
; CHECK: error[E0107]: bundle `L` takes 2 dimension(s) (I O), given 1
; JSON-NEXT: E0107 [[@LINE+1]]:16
    (params (q (L I)))
    (returns (tensor f32 (I O) host))
    (return q.w))
  (func h (dims I O)
    (params (p (L I O)))
    (returns (L I O))
; CHECK: error[E0107]: bundle `L` has no field `c`
; CHECK: = note: its fields: w b
; JSON-NEXT: E0107 [[@LINE+1]]:24
    (let a (L (w p.w) (c p.b)))
; CHECK: error[E0107]: the value of bundle `L` does not give field `b`
; JSON-NEXT: E0107 [[@LINE+1]]:12
    (let b (L (w p.w)))
    (return p)))
; CHECK-NOT: error[
; JSON-NEXT: 5 diagnostic(s)
