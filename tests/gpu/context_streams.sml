; Programs of tests/gpu/context_streams_gpu_test.cpp: `slow` keeps its
; stream busy (eight chained N×N matmuls; on the identity it returns the
; identity exactly), `twice` reads its input at once.
(module context_streams
  (func slow
    (dims N)
    (params (x (tensor f32 (N N) (cuda 0))))
    (returns (tensor f32 (N N) (cuda 0)))
    (let a (matmul x x))
    (let b (matmul a a))
    (let c (matmul b b))
    (let d (matmul c c))
    (let e (matmul d d))
    (let f (matmul e e))
    (let g (matmul f f))
    (let h (matmul g g))
    (return h))
  (func twice
    (dims N)
    (params (x (tensor f32 (N N) (cuda 0))))
    (returns (tensor f32 (N N) (cuda 0)))
    (return (add x x))))
