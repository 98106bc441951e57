; One pre-norm transformer block: RMSNorm, multi-head self-attention with
; heads split by reshape, softmax written with exp/sum/div, SwiGLU MLP, and
; residual connections.
(module transformer
  ; RMSNorm over the last axis: x / sqrt(mean(x^2) + eps) * g
  (func rmsnorm
    (dims N D)
    (params (x (tensor f32 (N D) host)) (g (tensor f32 (D) host)))
    (returns (tensor f32 (N D) host))
    (let ms (reduce_mean (mul x x) :axes (-1) :keepdims true))
    (let inv (rsqrt (add ms 1e-5)))
    (return (mul (mul x inv) g)))

  ; Numerically stable softmax over the last axis.
  (func softmax
    (dims B H S T)
    (params (s (tensor f32 (B H S T) host)))
    (returns (tensor f32 (B H S T) host))
    (let m (reduce_max s :axes (-1) :keepdims true))
    (let e (exp (sub s m)))
    (let z (reduce_sum e :axes (-1) :keepdims true))
    (return (div e z)))

  (func block
    (dims B S D H Dh F)
    (where (= D (* H Dh)))
    (params
      (x (tensor f32 (B S D) host))
      ; per-head score scale, 1/sqrt(Dh) for standard attention (shape
      ; variables are not values); its shape also tells a caller's runtime H,
      ; and then Dh follows from D = H*Dh
      (scale (tensor f32 (H 1 1) host))
      (g1 (tensor f32 (D) host))
      (wq (tensor f32 (D D) host))
      (wk (tensor f32 (D D) host))
      (wv (tensor f32 (D D) host))
      (wo (tensor f32 (D D) host))
      (g2 (tensor f32 (D) host))
      (w_gate (tensor f32 (D F) host))
      (w_up (tensor f32 (D F) host))
      (w_down (tensor f32 (F D) host)))
    (returns (tensor f32 (B S D) host))
    ; --- attention ---
    (let x2 (reshape x ((* B S) D)))
    (let n1 (call rmsnorm x2 g1))
    (let q (matmul n1 wq))
    (let k (matmul n1 wk))
    (let v (matmul n1 wv))
    ; [B*S, D] -> [B, S, H, Dh] -> [B, H, S, Dh]; the reshape is proved from D = H*Dh
    (let qh (permute (reshape q (B S H Dh)) (0 2 1 3)))
    (let kh (permute (reshape k (B S H Dh)) (0 2 1 3)))
    (let vh (permute (reshape v (B S H Dh)) (0 2 1 3)))
    (let scores (mul (matmul qh (transpose kh)) scale))
    (let p (call softmax scores))
    (let ctx (matmul p vh))
    (let merged (reshape (permute ctx (0 2 1 3)) ((* B S) D)))
    (let attn (matmul merged wo))
    (let h (add x2 attn))
    ; --- SwiGLU MLP ---
    (let n2 (call rmsnorm h g2))
    (let gate (silu (matmul n2 w_gate)))
    (let up (matmul n2 w_up))
    (let mlp (matmul (mul gate up) w_down))
    (let out (add h mlp))
    (return (reshape out (B S D)))))
