; Explicit shape arguments at a call, `(call f :dims ((VAR DIM) ...) ARGS...)`
; (spec §4.18): a name that is no shape variable of the callee or is given
; twice (E0306), a value that may be < 1 (E0305), values that contradict the
; arguments (E0301, with a counterexample), an unknown variable of the caller
; in a value (E0104); a function whose variables the parameters do not
; determine and that no call gives `:dims` to is E0308 (reported last).
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func heads (dims B S H Dh)
    (params (x (tensor f32 (B S (* H Dh)) host)))
    (returns (tensor f32 (B H S Dh) host))
    (return (permute (reshape x (B S H Dh)) (0 2 1 3))))
  (func never_given (dims N R)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (R N) host))
    (return (broadcast_to x (R N))))
  (func f (dims B S)
    (params (x (tensor f32 (B S 64) host)))
    (returns (tensor f32 (B 4 S 16) host))
; CHECK: error[E0306]: `K` is not a shape variable of `heads`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:12
; CHECK: = note: its shape variables are: B S H Dh
; JSON: E0306 [[@LINE+1]]:12
    (let a (call heads :dims ((H 4) (K 2)) x))
; CHECK: error[E0306]: shape variable `H` of `heads` is given twice in `:dims`
; JSON-NEXT: E0306 [[@LINE+1]]:12
    (let b (call heads :dims ((H 4) (H 4)) x))
; CHECK: error[E0305]: the explicit value (- S 1) of `H` may be less than 1
; CHECK: = counterexample: B=1, S=1
; JSON-NEXT: E0305 [[@LINE+1]]:12
    (let c (call heads :dims ((H (- S 1))) x))
; 4 * 8 = 32 is not the argument's 64.
; CHECK: error[E0301]: argument 1 of `heads`: dimension 2 is 64 where 32 is expected
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:12
; CHECK: = counterexample: B=1, S=1
; JSON-NEXT: E0301 [[@LINE+1]]:12
    (let d (call heads :dims ((H 4) (Dh 8)) x))
; CHECK: error[E0104]: unknown shape variable `Q`
; JSON-NEXT: E0104 [[@LINE+1]]:41
    (let e (call heads :dims ((H 4) (Dh Q)) x))
    (return (call heads :dims ((H 4)) x)))
; CHECK: error[E0308]: shape variable `R` of `never_given` cannot be inferred from the shapes of its parameters
; CHECK: = help: or call `never_given` only from other functions, giving it with `(call never_given :dims ((R DIM)) ...)`; it is then not an entry point
; JSON-NEXT: E0308 14:29
  (func g (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
    (return x)))
; CHECK-NOT: error[
; JSON-NEXT: 6 diagnostic(s)
