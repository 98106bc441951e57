; `:dims` syntax: a list of `(VAR DIM)` pairs right after the callee (E0003).
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
(module m
  (func id (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)) (return x))
  (func f (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
; CHECK: error[E0003]: an explicit shape argument is `(VAR DIM)`, e.g. `(H 4)` or `(Dh (floordiv D 4))`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:28
    (let a (call id :dims ((N)) x))
; CHECK: error[E0003]: `:dims` takes a list of pairs `((VAR DIM) ...)`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:27
    (let b (call id :dims N x))
    (return x)))
