; Misused dtype and device variables (spec §3.5): each function has one
; mistake.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
(module m
; Syntax errors come first (the parser reports them before checking).
; An undeclared name in a dtype position is still a syntax error.
; CHECK: error[E0003]: expected a dtype: f32, f64, bf16, i32, i64 or bool, or a dtype variable of this function (T)
  (func typo (dtypes (T f32)) (dims N)
    (params (x (tensor T (N) host))) (returns (tensor U (N) host)) (return x))
; `dtypes` comes before the types that use it.
; CHECK: error[E0003]: `dtypes` comes before `params` and `returns`, whose types use its variables
  (func late (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)) (dtypes T) (return x))
; A variable ranging over every dtype may be bool: gelu needs floating.
; CHECK: error[E0202]: `gelu` needs a floating (f32, f64, bf16) operand, not `T`, which may be i32 i64 bool
; CHECK: help: restrict the dtype variable: `(dtypes (T f32 f64 bf16))`
  (func any_dtype (dtypes T) (devices Dv) (dims N)
    (params (x (tensor T (N) Dv))) (returns (tensor T (N) Dv)) (return (gelu x)))
; A dtype variable equals only itself.
; CHECK: error[E0201]: operands of `add` have different dtypes T and f32
; CHECK: `T` is a dtype variable (f32 bf16): it equals only itself
  (func mixed (dtypes (T f32 bf16)) (dims N)
    (params (x (tensor T (N) host)) (y (tensor f32 (N) host))) (returns (tensor T (N) host)) (return (add x y)))
; A device variable equals only itself.
; CHECK: error[E0401]: operands of `mul` live on different devices, Dv and host
  (func two_devices (devices Dv) (dims N)
    (params (x (tensor f32 (N) Dv)) (y (tensor f32 (N) host))) (returns (tensor f32 (N) Dv)) (return (mul x y)))
; A literal must be representable in every dtype of the variable.
; CHECK: error[E0207]: literal `0.5` is not an integer but `T` may be i32
  (func half (dtypes (T f32 i32)) (dims N)
    (params (x (tensor T (N) host))) (returns (tensor T (N) host)) (return (mul x 0.5)))
; A call gives the callee's variable a dtype it does not range over.
; CHECK: error[E0201]: argument 1 of `half_f` gives dtype variable `T` the dtype f64, which it does not range over
  (func half_f (dtypes (T f32 bf16)) (dims N)
    (params (x (tensor T (N) host))) (returns (tensor T (N) host)) (return (mul x 0.5)))
  (func call_f64 (dims N)
    (params (x (tensor f64 (N) host))) (returns (tensor f64 (N) host)) (return (call half_f x)))
; A variable no parameter names could not be bound.
; CHECK: error[E0308]: dtype variable `U` of `unbound` is not the dtype of any parameter
  (func unbound (dtypes (T f32) (U f32 bf16)) (dims N)
    (params (x (tensor T (N) host))) (returns (tensor T (N) host)) (return x)))
