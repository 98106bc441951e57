; E0305 for `repeat_interleave`: the obligation repeats >= 1 (spec §4.22) is
; proved under the `where` constraints, and refuted with a counterexample.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  ; G - 1 is 0 when G = 1.
  (func symbolic (dims N G)
    (params (x (tensor f32 (N G) host)))
    (returns (tensor f32 (N G) host))
; CHECK: error[E0305]: `repeat_interleave` repeats (- G 1) may be less than 1
; CHECK-NEXT: --> [[FILE]]:[[@LINE+6]]:12
; CHECK: = actual: (tensor f32 (N G) host)
; CHECK-NEXT: = counterexample: N=1, G=1
; CHECK-NEXT: = note: each element is repeated `:repeats` times, which must be >= 1 for every shape satisfying the `where` constraints
; CHECK-NEXT: = note: with these values (- G 1) = 0 and 1 = 1, so (>= (- G 1) 1) is false
; JSON: E0305 [[@LINE+1]]:12
    (let y (repeat_interleave x :repeats (- G 1) :axis 0))
    (return x))
  ; Under (>= G 2) the same repeats are proved.
  (func proved (dims N G)
    (where (>= G 2))
    (params (x (tensor f32 (N G) host)))
    (returns (tensor f32 ((* N G (- G 1))) host))
    (return (repeat_interleave (reshape x ((* N G))) :repeats (- G 1) :axis 0)))
  (func literals (dims N)
    (params (x (tensor i32 (N) host)))
    (returns (tensor i32 (N) host))
; CHECK: error[E0305]: `repeat_interleave` repeats 0 may be less than 1
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0305 [[@LINE+1]]:12
    (let a (repeat_interleave x :repeats 0 :axis 0))
; CHECK: error[E0305]: `repeat_interleave` repeats -2 may be less than 1
; CHECK-NEXT: --> [[FILE]]:[[@LINE+2]]:12
; JSON-NEXT: E0305 [[@LINE+1]]:12
    (let b (repeat_interleave x :repeats -2 :axis -1))
    (return x)))
; CHECK-NOT: error[
; JSON-NEXT: 3 diagnostic(s)
