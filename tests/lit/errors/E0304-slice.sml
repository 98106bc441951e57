; E0304: a slice whose start may be negative, whose size may be less than 1,
; or that may read past the end of the axis (spec §4.15).
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
; RUN: %expect-exit 1 %shapemlc check --format=json %s 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  ; Reading 4 elements from 1 needs N >= 5; N >= 4 leaves N=4.
  (func past_end (dims N)
    (where (>= N 4))
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (4) host))
; CHECK: error[E0304]: `slice` reads past the end of axis 0: start 1 + size 4 may exceed N
; CHECK-NEXT: --> [[FILE]]:[[@LINE+6]]:13
; CHECK: = actual: (tensor f32 (N) host)
; CHECK-NEXT: = counterexample: N=4
; CHECK-NEXT: = note: with these values 5 = 5 and N = 4, so (<= 5 N) is false
; CHECK-NEXT: = note: assumed: (>= N 4)
; JSON: E0304 [[@LINE+1]]:13
    (return (slice x :axis 0 :start 1 :size 4)))
  ; Size N - 4 is 0 when N=4; start 2 - 3 is negative for every N.
  (func bad_bounds (dims N)
    (where (>= N 4))
    (params (x (tensor f32 (3 N) host)))
    (returns (tensor f32 (3 N) host))
; CHECK: error[E0304]: `slice` size (- N 4) may be less than 1
; CHECK-NEXT: --> [[FILE]]:[[@LINE+4]]:12
; CHECK: = counterexample: N=4
; CHECK-NEXT: = note: with these values (- N 4) = 0 and 1 = 1, so (>= (- N 4) 1) is false
; JSON-NEXT: E0304 [[@LINE+1]]:12
    (let a (slice x :axis -1 :start 0 :size (- N 4)))
; CHECK: error[E0304]: `slice` start -1 may be negative
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:12
; CHECK: = counterexample: N={{[0-9]+}}
; JSON-NEXT: E0304 [[@LINE+1]]:12
    (let b (slice x :axis 0 :start (- 2 3) :size 1))
    (return x)))
; CHECK-NOT: error[
; JSON-NEXT: 3 diagnostic(s)
