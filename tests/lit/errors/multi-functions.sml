; Errors in different functions, and of different stages (reader, parser,
; checker), are all reported; a function without errors between them is
; still checked, and a call to a function that had errors reports nothing.
; Stages run one after the other: reader errors come first, then parser
; errors, then checker errors, each in source order.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func bad_char (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
; The stray `$` is skipped; the rest of the function is fine.
; CHECK: error[E0001]: unexpected character `$`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:20
; JSON: E0001 [[@LINE+1]]:20
    (return (neg x $)))
  (func bad_form (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
; CHECK: error[E0003]: `let` is `(let NAME EXPR)`, `(let NAME TYPE EXPR)` or `(let (NAME...) (call ...))`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:5
; JSON-NEXT: E0003 [[@LINE+1]]:5
    (let y)
    (return x))
  (func bad_dims (dims N M)
    (params (x (tensor f32 (N M) host)))
    (returns (tensor f32 (M N) host))
; CHECK: error[E0301]: returned value 1 of `bad_dims`: dimension 0 is N where M is expected
; CHECK-NEXT: --> [[FILE]]:[[@LINE+5]]:13
; CHECK: error[E0301]: returned value 1 of `bad_dims`: dimension 1 is M where N is expected
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:13
; JSON-NEXT: E0301 [[@LINE+2]]:13
; JSON-NEXT: E0301 [[@LINE+1]]:13
    (return x))
  (func good (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
    (return (relu x)))
  (func bad_dtype (dims N)
    (params (x (tensor i64 (N) host)))
    (returns (tensor i64 (N) host))
; CHECK: error[E0202]: `tanh` needs a floating (f32, f64, bf16) operand, not i64
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:13
; JSON-NEXT: E0202 [[@LINE+1]]:13
    (return (tanh x)))
  (func caller (dims N)
    (params (x (tensor f32 (N N) host)) (y (tensor f32 (N) host)))
    (returns (tensor f32 (N N) host))
    ; bad_dims had an error: this call is not checked again.
    (let a (call bad_dims x))
    ; good is fine, and its result broadcasts.
    (let b (add x (call good y)))
; CHECK: error[E0302]: operands of `sub`: dimensions N and 3 cannot be broadcast together
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:13
; JSON-NEXT: E0302 [[@LINE+1]]:13
    (return (sub b (fill 1.0 (tensor f32 (3) host))))))
; CHECK-NOT: error[
; JSON-NEXT: 6 diagnostic(s)
