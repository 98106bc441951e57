; REGRESSION (fixed, issue 7): a true reshape under `(divides 4 (* B T))` took
; the whole budget and was rejected (E0501) under --timeout-ms=200, although
; the z3 CLI proved the dumped query in 0.19 s. Cause: the hypothesis was
; encoded as B*T = 4*k with a witness k, so Z3 had to relate k to
; (div (* B T) 4) by non-linear reasoning (~215 ms on a fresh solver; on the
; reused push/pop solver, after the two earlier obligations of this function,
; "incomplete (theory arithmetic)" after the full budget, even 2000 ms).
; Encoded as (mod (* B T) 4) = 0, the spec's own meaning, Z3's div/mod axiom
; gives it in a few ms; every query now runs on a fresh solver.
; RUN: %shapemlc check --timeout-ms=200 %s 2>&1 | FileCheck %s --allow-empty --check-prefix=OK
; OK-NOT: error
; RUN: %shapemlc check --timeout-ms=200 --stats %s | FileCheck %s
; --stats counts the IR verifier's solver work too (it discharges the
; non-syntactic obligations again): a non-zero number of verifier queries.
; CHECK: divides-reshape-budget.sml: ok, 2 function(s), {{.*}} Z3 queries), {{.*}} (verify {{[1-9][0-9]*}} queries, {{[0-9.]+}} ms)
(module m
  (func f (dims B T D)
    (where (divides 4 (* B T)))
    (params (x (tensor f32 (B T D) host)))
    (returns (tensor f32 ((floordiv (* B T) 4) 4 D) host))
    (return (reshape x ((floordiv (* B T) 4) 4 D))))
  ; The same with the constraint written as a mod equality.
  (func g (dims B T D)
    (where (= (mod (* B T) 4) 0))
    (params (x (tensor f32 (B T D) host)))
    (returns (tensor f32 ((floordiv (* B T) 4) 4 D) host))
    (return (reshape x ((floordiv (* B T) 4) 4 D)))))
