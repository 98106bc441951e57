; E0003: well-formed S-expressions that are not the grammar of spec §2. Each
; function below has one mistake; the parser reports each and goes on with the
; next function.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
; CHECK: error[E0003]: function `no_returns` has no `(returns TYPE...)`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:3
  (func no_returns (params) (return (const 1 f32)))
; CHECK: error[E0003]: expected a tensor type `(tensor DTYPE (DIMS...) DEVICE)`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:38
  (func bad_type (dims N) (params (x (tensor f32 (N)))) (returns (tensor f32 (N) host)) (return x))
; CHECK: error[E0003]: expected a dtype: f32, f64, bf16, i32, i64 or bool
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:47
  (func bad_dtype (dims N) (params (x (tensor f16 (N) host))) (returns (tensor f32 (N) host)) (return x))
; CHECK: error[E0003]: expected a device: `host` or `(cuda N)`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:56
  (func bad_device (dims N) (params (x (tensor f32 (N) gpu))) (returns (tensor f32 (N) host)) (return x))
; CHECK: error[E0003]: unknown dimension operator `/` (expected +, -, *, floordiv, mod)
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:50
  (func bad_dim (dims N) (params (x (tensor f32 ((/ N 2)) host))) (returns (tensor f32 (N) host)) (return x))
; CHECK: error[E0003]: `floordiv` divides by a positive integer constant only
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:69
  (func bad_floordiv (dims N M) (params (x (tensor f32 ((floordiv N M)) host))) (returns (tensor f32 (N) host)) (return x))
; CHECK: error[E0003]: `matmul` takes 2 arguments: `(matmul X Y)`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:107
  (func bad_arity (dims N) (params (x (tensor f32 (N N) host))) (returns (tensor f32 (N N) host)) (return (matmul x)))
; CHECK: error[E0003]: `reduce_sum` has no attribute `:axis` (it takes :axes, :keepdims)
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:118
  (func bad_attr (dims N) (params (x (tensor f32 (N N) host))) (returns (tensor f32 (N) host)) (return (reduce_sum x :axis 0)))
; CHECK: error[E0003]: `slice` needs `:axis`, `:start` and `:size`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:106
  (func missing_attr (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)) (return (slice x :axis 0 :start 0)))
; CHECK: error[E0003]: expected a constraint `(= a b)`, `(!= a b)`, `(< a b)`, `(<= a b)`, `(> a b)`, `(>= a b)` or `(divides a b)`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:35
  (func bad_where (dims N) (where (== N 2)) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)) (return x))
; CHECK: error[E0003]: nothing may follow `(return ...)` in a function
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:109
  (func after_return (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)) (return x) (let y x))
; CHECK: error[E0003]: expected `(func NAME ...)` or `(grad NAME OF)` inside a module
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:3
  (function g (params) (returns (tensor f32 () host)) (return (const 0 f32)))
; This one is fine and is still checked.
  (func fine (params) (returns (tensor f32 () host)) (return (const 0 f32))))
; CHECK-NOT: error[
; JSON-COUNT-12: E0003
; JSON-NEXT: 12 diagnostic(s)
