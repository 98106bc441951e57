; Several independent errors in one function are all reported, in source
; order, each once. A name whose definition failed is "poisoned": later uses
; of it report nothing more.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func f (dims B S D H)
    (params (dims_H (tensor f32 (H) host)) (x (tensor f32 (B S D) host)) (i (tensor i32 (S) host)) (w (tensor f32 (D D) host)))
    (returns (tensor f32 (B S D) host))
; CHECK: error[E0201]: operands of `add` have different dtypes f32 and i32
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:13
; CHECK-NOT: error[
; JSON: E0201 [[@LINE+1]]:13
    (let a1 (add x i))
; CHECK: error[E0202]: `sqrt` needs a floating (f32, f64, bf16) operand, not i32
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:13
; CHECK-NOT: error[
; JSON-NEXT: E0202 [[@LINE+1]]:13
    (let a2 (sqrt i))
; CHECK: error[E0303]: `reshape` changes the number of elements: (* B D S) elements into (* B D H S)
; CHECK-NEXT: --> [[FILE]]:[[@LINE+4]]:13
; CHECK: = counterexample: B={{[0-9]+}}, S={{[0-9]+}}, D={{[0-9]+}}, H={{[0-9]+}}
; CHECK-NOT: error[
; JSON-NEXT: E0303 [[@LINE+1]]:13
    (let a3 (reshape x (B S H D)))
; Start 1 + size S > S for every S: any value is a counterexample.
; CHECK: error[E0304]: `slice` reads past the end of axis 1: start 1 + size S may exceed S
; CHECK-NEXT: --> [[FILE]]:[[@LINE+4]]:13
; CHECK: = note: with these values (+ S 1) = {{[0-9]+}} and S = {{[0-9]+}}, so (<= (+ S 1) S) is false
; CHECK-NOT: error[
; JSON-NEXT: E0304 [[@LINE+1]]:13
    (let a4 (slice x :axis 1 :start 1 :size S))
; CHECK: error[E0101]: unknown name `unknown`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:20
; CHECK-NOT: error[
; JSON-NEXT: E0101 [[@LINE+1]]:20
    (let a5 (mul x unknown))
; a1, a3, a4 are poisoned: nothing is reported here.
    (let a6 (add a1 (add a3 a4)))
    (let a7 (matmul x w))
; CHECK: error[E0203]: returned value 1 of `f` has rank 2 where rank 3 is expected
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:13
; CHECK-NOT: error[
; JSON-NEXT: E0203 [[@LINE+1]]:13
    (return (reduce_sum a7 :axes (0)))))
; JSON-NEXT: 6 diagnostic(s)
