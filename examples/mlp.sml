; A 2-layer MLP on a [B, S, D] input: D -> F (GELU) -> D.
; Milestone 1 runs this with B=4, S=128, D=256, F=1024. Generic in its dtype T
; and device Dv (spec §3.5): a call takes both from its inputs (f32 or bf16,
; host or a CUDA device); an AOT build binds them, e.g.
; --bind mlp:T=f32,Dv=host,B=4,S=128,D=256,F=1024.
(module mlp
  (func mlp
    (dtypes (T floating)) (devices Dv)
    (dims B S D F)
    (params
      (x (tensor T (B S D) Dv))
      (w1 (tensor T (D F) Dv))
      (b1 (tensor T (F) Dv))
      (w2 (tensor T (F D) Dv))
      (b2 (tensor T (D) Dv)))
    (returns (tensor T (B S D) Dv))
    ; matmul with a rank-2 right operand shares the weight across B and S
    (let h (gelu (add (matmul x w1) b1)))
    (let y (add (matmul h w2) b2))
    (return y)))
