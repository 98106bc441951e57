; REGRESSION (fixed): `(select 1 2 3)` (every operand a literal) crashes the checker
; (SIGSEGV): src/check/elaborate.cpp, Elaborator::expr, the literal loop reads
; `fn_->values[*vals[1]]` when no operand is a tensor and the condition is
; the literal being typed, so `vals[1]` is empty.
; Expected: E0206 "cannot infer the dtype of the literals of `select`", exit 1.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; CHECK: error[E0206]: cannot infer the dtype of the literals of `select`: neither branch is a tensor
; CHECK-NEXT: --> [[FILE]]:[[@LINE+4]]:12
(module m
  (func f (params)
    (returns (tensor f32 () host))
    (let a (select 1 2 3))
    (return a)))
