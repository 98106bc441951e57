; E0003 for the forms of spec §4.27-4.30: required and unknown attributes and
; their values. One mistake per function; the parser reports each and goes on.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
(module m
; CHECK: error[E0003]: `cumsum` needs `:axis K`
  (func a (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)) (return (cumsum x)))
; CHECK: error[E0003]: `:reverse` is `true` or `false`
  (func b (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)) (return (cumsum x :axis 0 :reverse 1)))
; CHECK: error[E0003]: `squeeze` needs `:axis K` or `:axes (A...)` (the dimensions of extent 1 to remove)
  (func c (dims N) (params (x (tensor f32 (1 N) host))) (returns (tensor f32 (N) host)) (return (squeeze x)))
; CHECK: error[E0003]: `unsqueeze` needs `:axis K` (where the new dimension of extent 1 goes)
  (func d (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (1 N) host)) (return (unsqueeze x)))
; CHECK: error[E0003]: `pad` needs `:axis`, `:low` and `:high` (`:value` defaults to 0)
  (func e (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)) (return (pad x :axis 0 :low 1)))
; CHECK: error[E0003]: `:value` takes a number literal
  (func f (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)) (return (pad x :axis 0 :low 1 :high 0 :value x)))
; CHECK: error[E0003]: `argmax` needs `:axis K`
  (func g (dims N) (params (x (tensor f32 (N) host))) (returns (tensor i64 () host)) (return (argmax x)))
; CHECK: error[E0003]: `argmin` has no attribute `:axes` (it takes :axis, :keepdims)
  (func h (dims N) (params (x (tensor f32 (N) host))) (returns (tensor i64 () host)) (return (argmin x :axes (0))))
; CHECK: error[E0003]: `erf` takes 1 argument: `(erf X)`
  (func i (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)) (return (erf x x)))
  (func ok (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)) (return (cumsum x :axis 0))))
; CHECK-NOT: error[
