; One pre-norm transformer block: RMSNorm, causal multi-head self-attention
; (heads by reshape/permute, rank-4 batched matmuls, softmax), SwiGLU
; feed-forward, residual connections; and its grouped-query variant, whose
; key/value heads are shared by groups of G query heads (repeat_interleave).
;
; Generic over the dtype T (f32, f64, bf16) and the device Dv (spec §3.5): the
; same source runs on the CPU with host tensors and on the GPU with
; `(cuda N)` tensors, in f32 or bf16; a call takes both from its inputs.
; Projection weights carry their heads, (D H Dh) as in einsum-style layouts,
; so a caller's tensors determine H and Dh and the checker proves the
; reshapes to and from (D D) from D = H*Dh.
(module transformer
  ; RMSNorm over the last axis: x / sqrt(mean(x^2) + eps) * g
  (func rmsnorm
    (dtypes (T floating)) (devices Dv)
    (dims N D)
    (params (x (tensor T (N D) Dv)) (g (tensor T (D) Dv)))
    (returns (tensor T (N D) Dv))
    (let ms (reduce_mean (mul x x) :axes (-1) :keepdims true))
    (return (mul (mul x (rsqrt (add ms 1e-5))) g)))

  ; Causal attention of per-head queries, keys and values [B H S Dh]:
  ; softmax(q k^T / sqrt(Dh) + causal mask) v.
  (func attend
    (dtypes (T floating)) (devices Dv)
    (dims B H S Dh)
    (params
      (q (tensor T (B H S Dh) Dv))
      (k (tensor T (B H S Dh) Dv))
      (v (tensor T (B H S Dh) Dv)))
    (returns (tensor T (B H S Dh) Dv))
    (let scores (mul (matmul q (transpose k)) (rsqrt (dim_value Dh T))))
    ; position i sees positions j <= i; the [S S] mask broadcasts over B and H
    (let causal (ge (iota (tensor i32 (S S) Dv) :axis 0) (iota (tensor i32 (S S) Dv) :axis 1)))
    (return (matmul (softmax (select causal scores -inf) :axis -1) v)))

  ; [B*S, H*Dh] -> [B, H, S, Dh]. B and H cannot be read off (* B S) and
  ; (* H Dh): a caller passes them with `:dims`.
  (func split_heads
    (dtypes (T floating)) (devices Dv)
    (dims B S H Dh)
    (params (x (tensor T ((* B S) (* H Dh)) Dv)))
    (returns (tensor T (B H S Dh) Dv))
    (return (permute (reshape x (B S H Dh)) (0 2 1 3))))

  ; SwiGLU feed-forward: (silu(x Wg) * (x Wu)) Wd
  (func swiglu
    (dtypes (T floating)) (devices Dv)
    (dims N D F)
    (params (x (tensor T (N D) Dv)) (w_gate (tensor T (D F) Dv)) (w_up (tensor T (D F) Dv)) (w_down (tensor T (F D) Dv)))
    (returns (tensor T (N D) Dv))
    (return (matmul (mul (silu (matmul x w_gate)) (matmul x w_up)) w_down)))

  ; After attention: the output projection and the first residual, then
  ; RMSNorm, SwiGLU and the second residual.
  (func finish
    (dtypes (T floating)) (devices Dv)
    (dims N D F)
    (params
      (x (tensor T (N D) Dv))
      (ctx (tensor T (N D) Dv))
      (wo (tensor T (D D) Dv))
      (g2 (tensor T (D) Dv))
      (w_gate (tensor T (D F) Dv))
      (w_up (tensor T (D F) Dv))
      (w_down (tensor T (F D) Dv)))
    (returns (tensor T (N D) Dv))
    (let h (add x (matmul ctx wo)))
    (return (add h (call swiglu (call rmsnorm h g2) w_gate w_up w_down))))

  (func block
    (dtypes (T floating)) (devices Dv)
    (dims B S D H Dh F)
    (where (= D (* H Dh)))
    (params
      (x (tensor T (B S D) Dv))
      (g1 (tensor T (D) Dv))
      (wq (tensor T (D H Dh) Dv))
      (wk (tensor T (D H Dh) Dv))
      (wv (tensor T (D H Dh) Dv))
      (wo (tensor T (H Dh D) Dv))
      (g2 (tensor T (D) Dv))
      (w_gate (tensor T (D F) Dv))
      (w_up (tensor T (D F) Dv))
      (w_down (tensor T (F D) Dv)))
    (returns (tensor T (B S D) Dv))
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
    (dtypes (T floating)) (devices Dv)
    (dims B S D H Dh Hkv G F)
    (where (= D (* H Dh)) (= H (* Hkv G)))
    (params
      (x (tensor T (B S D) Dv))
      (g1 (tensor T (D) Dv))
      (wq (tensor T (D H Dh) Dv))
      (wk (tensor T (D Hkv Dh) Dv))
      (wv (tensor T (D Hkv Dh) Dv))
      (wo (tensor T (H Dh D) Dv))
      (g2 (tensor T (D) Dv))
      (w_gate (tensor T (D F) Dv))
      (w_up (tensor T (D F) Dv))
      (w_down (tensor T (F D) Dv)))
    (returns (tensor T (B S D) Dv))
    (let x2 (reshape x ((* B S) D)))
    (let n1 (call rmsnorm x2 g1))
    (let q (call split_heads :dims ((B B) (H H)) (matmul n1 (reshape wq (D (* H Dh))))))
    (let k (call split_heads :dims ((B B) (H Hkv)) (matmul n1 (reshape wk (D (* Hkv Dh))))))
    (let v (call split_heads :dims ((B B) (H Hkv)) (matmul n1 (reshape wv (D (* Hkv Dh))))))
    (let ctx (call attend q (repeat_interleave k :repeats G :axis 1) (repeat_interleave v :repeats G :axis 1)))
    (let merged (reshape (permute ctx (0 2 1 3)) ((* B S) D)))
    (return (reshape (call finish x2 merged (reshape wo (D D)) g2 w_gate w_up w_down) (B S D)))))
