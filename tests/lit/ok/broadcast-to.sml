; T-BroadcastTo (spec §4.13): rank extension, literal-1 stretching, equal
; dimensions proved under `where`.
; RUN: %shapemlc check %s
; RUN: %shapemlc --emit=typed %s | FileCheck %s
(module bt
  (func f (dims B N M K)
    (where (= K M))
    (params (dims_B (tensor f32 (B) host)) (v (tensor f32 (M) host)) (c (tensor f32 (N 1) host)) (s (tensor i32 () host)))
    (returns (tensor f32 (B N M) host) (tensor f32 (N K) host) (tensor i32 (B N) host))
    ; CHECK: a = broadcast_to(v) {:shape (B N M)} : (tensor f32 (B N M) host)
    (let a (broadcast_to v (B N M)))
    ; 1 stretches to K, and N stays N.
    (let b (broadcast_to c (N K)))
    (let d (broadcast_to s (B N)))
    ; K = M, so M may be "broadcast" to K.
    (let e (broadcast_to v (N K)))
    (return a (add b e) d)))
