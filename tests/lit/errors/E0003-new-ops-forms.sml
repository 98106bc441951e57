; E0003 for the forms of spec §4.20-4.23: arity, required and unknown
; attributes, and the dimension operand of `dim_value`. One mistake per
; function; the parser reports each and goes on.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
(module m
; CHECK: error[E0003]: `repeat_interleave` needs `:repeats` and `:axis`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:104
  (func no_repeats (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)) (return (repeat_interleave x :axis 0)))
; CHECK: error[E0003]: `softmax` has no attribute `:axes` (it takes :axis)
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:117
  (func softmax_axes (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)) (return (softmax x :axes (0))))
; CHECK: error[E0003]: `and` takes 2 arguments: `(and X Y)`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:105
  (func and_arity (dims N) (params (x (tensor bool (N) host))) (returns (tensor bool (N) host)) (return (and x)))
; CHECK: error[E0003]: `dim_value` is `(dim_value DIM DTYPE)` or `(dim_value DIM DTYPE DEVICE)`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:101
  (func dv_arity (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 () host)) (return (dim_value N)))
; CHECK: error[E0003]: expected a dtype: f32, f64, bf16, i32, i64 or bool
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:114
  (func dv_dtype (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 () host)) (return (dim_value N host)))
; CHECK: error[E0003]: expected a dimension: an integer, a shape variable, or `(+|-|*|floordiv|mod ...)`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:135
  (func bad_repeats (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)) (return (repeat_interleave x :repeats 1.5 :axis 0)))
  (func ok (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)) (return x)))
; CHECK-NOT: error[
