; REGRESSION (fixed): a shape variable "determined" by a parameter dimension
; whose coefficient can be 0, `(+ (* (mod K 2) V) 1)`, was accepted as
; inferable; for even K no input fixes V and every call was refused at run
; time. Expected: E0308 at check time. A coefficient that is a product of
; variables (never 0: they are >= 1) still determines. Issue 24, item 16.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
(module m
; CHECK: error[E0308]: shape variable `V` of `f` cannot be inferred from the shapes of its parameters
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:19
  (func f (dims K V)
    (params (k (tensor f32 (K) host)) (x (tensor f32 ((+ (* (mod K 2) V) 1)) host)))
    (returns (tensor f32 (K) host))
    (return k))
; CHECK-NOT: error[
  (func g (dims H Dh)
    (params (h (tensor f32 (H) host)) (x (tensor f32 ((+ (* H Dh) (* 2 Dh))) host)))
    (returns (tensor f32 ((+ (* H Dh) (* 2 Dh))) host))
    (return x)))
