; The premises of spec §4.27-4.30 and of `floordiv`/`mod` (§4.6), one
; mistake per let: the dtype class (E0202), rank 0 (E0203), axes (E0204),
; a squeezed dimension that may not be 1 (E0301, with a counterexample), a
; pad width that may be negative (E0309), a pad value not of the dtype (E0207).
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
(module m
  (func f (dims A B)
    (params (x (tensor f32 (A B) host)) (i (tensor i32 (A B) host)) (c (tensor bool (A B) host)) (s (tensor f32 () host)))
    (returns (tensor f32 (A B) host))
; CHECK: error[E0202]: `floordiv` needs an integral (i32, i64) operand, not f32
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:13
; CHECK: = note: floor division and modulo are defined on integers; for floating operands use `div`
    (let e1 (floordiv x x))
; CHECK: error[E0202]: `erf` needs a floating (f32, f64, bf16) operand, not i32
    (let e2 (erf i))
; CHECK: error[E0202]: `cumsum` needs a numeric operand, not bool
    (let e3 (cumsum c :axis 0))
; CHECK: error[E0202]: `argmax` needs a numeric operand, not bool
    (let e4 (argmax c :axis 0))
; CHECK: error[E0203]: `cumsum` needs an operand of rank >= 1, got rank 0
    (let e5 (cumsum s :axis 0))
; CHECK: error[E0203]: `argmin` needs an operand of rank >= 1, got rank 0
    (let e6 (argmin s :axis 0))
; CHECK: error[E0203]: `pad` needs an operand of rank >= 1, got rank 0
    (let e7 (pad s :axis 0 :low 1 :high 1))
; CHECK: error[E0204]: axis 2 is out of range for `cumsum` on a rank-2 tensor
    (let e8 (cumsum x :axis 2))
; CHECK: error[E0204]: axis -3 is out of range for `argmax` on a rank-2 tensor
; CHECK: = note: valid axes are -2 .. 1
    (let e9 (argmax x :axis -3))
; unsqueeze takes an axis of the result: -3 .. 2 here
; CHECK: error[E0204]: axis 3 is out of range for `unsqueeze` on a rank-2 tensor
; CHECK: = note: valid axes are -3 .. 2
    (let e10 (unsqueeze x :axis 3))
; CHECK: error[E0204]: axis -1 is squeezed twice
    (let e11 (squeeze x :axes (1 -1)))
; CHECK: error[E0301]: `squeeze`: dimension 1 is B, which may not be 1
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:14
; CHECK: = counterexample:
; CHECK: = help: if it is always 1, state it with `(where (= B 1))`
    (let e12 (squeeze x :axis 1))
; CHECK: error[E0309]: `pad` width `:high (- A B)` may be negative
; CHECK: = counterexample:
    (let e13 (pad x :axis 0 :low 0 :high (- A B)))
; CHECK: error[E0309]: `pad` width `:low -1` may be negative
    (let e14 (pad x :axis 0 :low -1 :high 0))
; CHECK: error[E0207]: literal `0.5` is not an integer but the expected dtype is i32
    (let e15 (pad i :axis 1 :low 1 :high 0 :value 0.5))
    (return x)))
; CHECK-NOT: error[
