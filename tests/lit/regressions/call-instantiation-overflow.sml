; REGRESSION (fixed): a call whose callee, instantiated at the call's shapes,
; overflows 64-bit dimension arithmetic (here N^3 at N = 3037000500) was an
; internal compiler error (E0900) at the module that also hid the module's
; other diagnostics. Expected: E0004 at the call, and the other error still
; reported. Issue 24, item 13.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; CHECK-NOT: E0900
(module m
  (func big (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 ((* N N N)) host))
    (return (reshape (broadcast_to (reshape x (N 1 1)) (N N N)) ((* N N N)))))
  (func caller (dims) (params (x (tensor f32 (3037000500) host))) (returns (tensor f32 (3037000500) host))
; CHECK: error[E0004]: dimension arithmetic overflows 64-bit integers when `big` is instantiated at this call's shapes
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:12
    (let y (call big x))
    (return x))
  (func other (dims) (params (x (tensor f32 (3) host))) (returns (tensor f32 (4) host))
; CHECK: error[E0301]: returned value 1 of `other`
    (return x)))
; CHECK-NOT: E0900
