; A 2-layer MLP on a [B, S, D] input: D -> F (GELU) -> D.
; Milestone 2 runs this on cuda(0) with B=4, S=128, D=256, F=1024. The MLP
; itself is examples/mlp.sml, generic in its dtype and device; this concrete
; copy (entry `mlp_gpu`) is the GPU C-ABI tests' fixture, and
; tests/lit/emit/gpu-plan.test checks that mlp.sml bound to (cuda 0) plans
; exactly as it does.
(module mlp_gpu
  (func mlp_gpu
    (dims B S D F)
    (params
      (x (tensor f32 (B S D) (cuda 0)))
      (w1 (tensor f32 (D F) (cuda 0)))
      (b1 (tensor f32 (F) (cuda 0)))
      (w2 (tensor f32 (F D) (cuda 0)))
      (b2 (tensor f32 (D) (cuda 0))))
    (returns (tensor f32 (B S D) (cuda 0)))
    ; matmul with a rank-2 right operand shares the weight across B and S
    (let h (gelu (add (matmul x w1) b1)))
    (let y (add (matmul h w2) b2))
    (return y)))
