; A 2-layer MLP on a [B, S, D] input: D -> F (GELU) -> D.
; Milestone 1 runs this with B=4, S=128, D=256, F=1024.
(module mlp
  (func mlp
    (dims B S D F)
    (params
      (x (tensor f32 (B S D) host))
      (w1 (tensor f32 (D F) host))
      (b1 (tensor f32 (F) host))
      (w2 (tensor f32 (F D) host))
      (b2 (tensor f32 (D) host)))
    (returns (tensor f32 (B S D) host))
    ; matmul with a rank-2 right operand shares the weight across B and S
    (let h (gelu (add (matmul x w1) b1)))
    (let y (add (matmul h w2) b2))
    (return y)))
