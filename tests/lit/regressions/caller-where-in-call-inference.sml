; REGRESSION (fixed): a caller that states the same `(where (= H (* Hk G)))`
; as its callee got E0306 "the division is not exact for every value of the
; caller's shape variables" when the call inferred G from H over Hk. Expected:
; the caller's `where` equalities rewrite the arguments' dimensions before the
; division (H is Hk G there, so H over Hk is G), and the call checks; a
; caller without the equality still gets E0306. Issue 24, item 18.
; RUN: %shapemlc check %s 2>&1 | FileCheck %s --allow-empty
; CHECK-NOT: error
; RUN: not %shapemlc check %S/Inputs/caller-without-where.sml 2>&1 | FileCheck %s --check-prefix=WITHOUT
; WITHOUT: error[E0306]: cannot infer shape variable `G` of `expand_kv`
(module m
  (func expand_kv (dims B H Hk G S Dh)
    (where (= H (* Hk G)))
    (params (q (tensor f32 (B H S Dh) host)) (k (tensor f32 (B Hk S Dh) host)))
    (returns (tensor f32 (B H S Dh) host))
    (return (repeat_interleave k :repeats G :axis 1)))
  (func attend (dims B H Hk G S Dh)
    (where (= H (* Hk G)))
    (params (q (tensor f32 (B H S Dh) host)) (k (tensor f32 (B Hk S Dh) host)))
    (returns (tensor f32 (B H S Dh) host))
    (return (add q (call expand_kv q k)))))
