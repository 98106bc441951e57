; Shape variables given at the call, `(given V ...)` (spec §4.19): each must
; be a variable of `dims` (E0104) listed once (E0102); a call inside the
; module must give them with `:dims` (E0306), since they are never inferred
; from the arguments. A function whose undetermined variables are declared
; given is an entry point (no E0308); one that leaves a variable neither
; determined nor given is still E0308, whose help names `given`.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
; CHECK: error[E0104]: `given` names `K`, which is not a shape variable of `bad_given`
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:35
; CHECK: = help: declare it in `(dims ...)` too
; JSON: E0104 [[@LINE+1]]:35
  (func bad_given (dims N) (given K)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
    (return x))
; CHECK: error[E0102]: shape variable `H` is listed twice in `given`
; JSON-NEXT: E0102 [[@LINE+1]]:40
  (func twice (dims B S H Dh) (given H H)
    (params (x (tensor f32 (B S (* H Dh)) host)))
    (returns (tensor f32 (B S (* H Dh)) host))
    (return x))
  (func heads (dims B S H Dh) (given H)
    (params (x (tensor f32 (B S (* H Dh)) host)))
    (returns (tensor f32 (B H S Dh) host))
    (return (permute (reshape x (B S H Dh)) (0 2 1 3))))
  (func caller (dims B S)
    (params (x (tensor f32 (B S 64) host)))
    (returns (tensor f32 (B 4 S 16) host))
; CHECK: error[E0306]: `heads` takes shape variable `H` at the call, and this call does not give it
; CHECK: = note: `heads` declares `(given H)`: every call supplies it
; CHECK: = help: give it: `(call heads :dims ((H DIM)) ...)`
; JSON-NEXT: E0306 [[@LINE+1]]:12
    (let a (call heads x))
    (return (call heads :dims ((H 4)) x)))
; R is neither determined by the parameters nor given.
; CHECK: error[E0308]: shape variable `R` of `tile` cannot be inferred from the shapes of its parameters
; CHECK: = help: or declare `(given R)`: every call then supplies it
; JSON-NEXT: E0308 [[@LINE+1]]:22
  (func tile (dims N R)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (R N) host))
    (return (broadcast_to x (R N)))))
; CHECK-NOT: error[
; JSON-NEXT: 4 diagnostic(s)
