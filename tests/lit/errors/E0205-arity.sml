; E0205: the number of arguments of a call, of results bound by a `let`, or of
; returned values does not match.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func split (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host) (tensor f32 (N) host))
    (return x (neg x)))
  (func f (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
; CHECK: error[E0205]: `split` takes 1 argument(s), got 2
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:16
; JSON: E0205 [[@LINE+1]]:16
    (let (a b) (call split x x))
; CHECK: error[E0205]: `split` returns 2 value(s) but 1 name(s) are bound
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:12
; CHECK: = note: bind them all: `(let (a b ...) (call ...))`
; JSON-NEXT: E0205 [[@LINE+1]]:12
    (let c (call split x))
; CHECK: error[E0205]: `split` returns 2 value(s) but 1 name(s) are bound
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:17
; CHECK: = note: bind the results with `(let (a b ...) (call ...))`
; JSON-NEXT: E0205 [[@LINE+1]]:17
    (let d (neg (call split x)))
; CHECK: error[E0205]: only a `call` or `top_k` can bind several names
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:5
; JSON-NEXT: E0205 [[@LINE+1]]:5
    (let (e g) (neg x))
; CHECK: error[E0205]: `f` returns 2 value(s) but declares 1
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:5
; JSON-NEXT: E0205 [[@LINE+1]]:5
    (return x x)))
; CHECK-NOT: error[
; JSON-NEXT: 5 diagnostic(s)
