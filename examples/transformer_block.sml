; One pre-norm transformer block: RMSNorm, causal multi-head self-attention
; (heads by reshape/permute, rank-4 batched matmuls, softmax), SwiGLU
; feed-forward, residual connections; and its grouped-query variant, whose
; key/value heads are shared by groups of G query heads (repeat_interleave).
;
; The same source runs on the CPU and, with every `host` placed on
; `(cuda 0)`, on the GPU (tests/gpu/transformer_gpu.py does exactly that).
; Projection weights carry their heads, (D H Dh) as in einsum-style layouts,
; so a caller's tensors determine H and Dh and the checker proves the
; reshapes to and from (D D) from D = H*Dh.
(module transformer
  ; RMSNorm over the last axis: x / sqrt(mean(x^2) + eps) * g
  (func rmsnorm
    (dims N D)
    (params (x (tensor f32 (N D) host)) (g (tensor f32 (D) host)))
    (returns (tensor f32 (N D) host))
    (let ms (reduce_mean (mul x x) :axes (-1) :keepdims true))
    (return (mul (mul x (rsqrt (add ms 1e-5))) g)))

  ; Causal attention of per-head queries, keys and values [B H S Dh]:
  ; softmax(q k^T / sqrt(Dh) + causal mask) v.
  (func attend
    (dims B H S Dh)
    (params
      (q (tensor f32 (B H S Dh) host))
      (k (tensor f32 (B H S Dh) host))
      (v (tensor f32 (B H S Dh) host)))
    (returns (tensor f32 (B H S Dh) host))
    (let scores (mul (matmul q (transpose k)) (rsqrt (dim_value Dh f32 host))))
    ; position i sees positions j <= i; the [S S] mask broadcasts over B and H
    (let causal (ge (iota (tensor i32 (S S) host) :axis 0) (iota (tensor i32 (S S) host) :axis 1)))
    (return (matmul (softmax (select causal scores -inf) :axis -1) v)))

  ; [B*S, H*Dh] -> [B, H, S, Dh]. B and H cannot be read off (* B S) and
  ; (* H Dh): a caller passes them with `:dims`.
  (func split_heads
    (dims B S H Dh)
    (params (x (tensor f32 ((* B S) (* H Dh)) host)))
    (returns (tensor f32 (B H S Dh) host))
    (return (permute (reshape x (B S H Dh)) (0 2 1 3))))

  ; SwiGLU feed-forward: (silu(x Wg) * (x Wu)) Wd
  (func swiglu
    (dims N D F)
    (params (x (tensor f32 (N D) host)) (w_gate (tensor f32 (D F) host)) (w_up (tensor f32 (D F) host)) (w_down (tensor f32 (F D) host)))
    (returns (tensor f32 (N D) host))
    (return (matmul (mul (silu (matmul x w_gate)) (matmul x w_up)) w_down)))

  ; After attention: the output projection and the first residual, then
  ; RMSNorm, SwiGLU and the second residual.
  (func finish
    (dims N D F)
    (params
      (x (tensor f32 (N D) host))
      (ctx (tensor f32 (N D) host))
      (wo (tensor f32 (D D) host))
      (g2 (tensor f32 (D) host))
      (w_gate (tensor f32 (D F) host))
      (w_up (tensor f32 (D F) host))
      (w_down (tensor f32 (F D) host)))
    (returns (tensor f32 (N D) host))
    (let h (add x (matmul ctx wo)))
    (return (add h (call swiglu (call rmsnorm h g2) w_gate w_up w_down))))

  (func block
    (dims B S D H Dh F)
    (where (= D (* H Dh)))
    (params
      (x (tensor f32 (B S D) host))
      (g1 (tensor f32 (D) host))
      (wq (tensor f32 (D H Dh) host))
      (wk (tensor f32 (D H Dh) host))
      (wv (tensor f32 (D H Dh) host))
      (wo (tensor f32 (H Dh D) host))
      (g2 (tensor f32 (D) host))
      (w_gate (tensor f32 (D F) host))
      (w_up (tensor f32 (D F) host))
      (w_down (tensor f32 (F D) host)))
    (returns (tensor f32 (B S D) host))
    (let x2 (reshape x ((* B S) D)))
    (let n1 (call rmsnorm x2 g1))
    (let q (call split_heads :dims ((B B) (H H)) (matmul n1 (reshape wq (D (* H Dh))))))
    (let k (call split_heads :dims ((B B) (H H)) (matmul n1 (reshape wk (D (* H Dh))))))
    (let v (call split_heads :dims ((B B) (H H)) (matmul n1 (reshape wv (D (* H Dh))))))
    (let ctx (call attend q k v))
    (let merged (reshape (permute ctx (0 2 1 3)) ((* B S) D)))
    (return (reshape (call finish x2 merged (reshape wo (D D)) g2 w_gate w_up w_down) (B S D))))

  ; Grouped-query attention: Hkv key/value heads, each shared by G = H/Hkv
  ; query heads.
  (func block_gqa
    (dims B S D H Dh Hkv G F)
    (where (= D (* H Dh)) (= H (* Hkv G)))
    (params
      (x (tensor f32 (B S D) host))
      (g1 (tensor f32 (D) host))
      (wq (tensor f32 (D H Dh) host))
      (wk (tensor f32 (D Hkv Dh) host))
      (wv (tensor f32 (D Hkv Dh) host))
      (wo (tensor f32 (H Dh D) host))
      (g2 (tensor f32 (D) host))
      (w_gate (tensor f32 (D F) host))
      (w_up (tensor f32 (D F) host))
      (w_down (tensor f32 (F D) host)))
    (returns (tensor f32 (B S D) host))
    (let x2 (reshape x ((* B S) D)))
    (let n1 (call rmsnorm x2 g1))
    (let q (call split_heads :dims ((B B) (H H)) (matmul n1 (reshape wq (D (* H Dh))))))
    (let k (call split_heads :dims ((B B) (H Hkv)) (matmul n1 (reshape wk (D (* Hkv Dh))))))
    (let v (call split_heads :dims ((B B) (H Hkv)) (matmul n1 (reshape wv (D (* Hkv Dh))))))
    (let ctx (call attend q (repeat_interleave k :repeats G :axis 1) (repeat_interleave v :repeats G :axis 1)))
    (let merged (reshape (permute ctx (0 2 1 3)) ((* B S) D)))
    (return (reshape (call finish x2 merged (reshape wo (D D)) g2 w_gate w_up w_down) (B S D)))))
