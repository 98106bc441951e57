; REGRESSION (fixed): when the parser drops a function because of a grammar error, calls to
; it report E0105 "unknown function" although it is defined: a second,
; misleading error. (Calls to functions that fail type checking are already
; silenced through poisoned_functions_ in src/check/elaborate.cpp; functions
; dropped by the parser are not.)
; Expected: only the E0103 for `layer_norm`.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s
; CHECK: error[E0103]: unknown operation `layer_norm`
; CHECK-NOT: error[
(module m
  (func g (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
    (return (layer_norm x)))
  (func f (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
    (return (call g x))))
