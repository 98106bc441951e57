; Causal attention alone, as the transformer block writes it
; (examples/transformer_block.sml `attend`), reading q, k, v in the layout a
; projection produces ([B S H Dh]) and writing the context in the layout the
; output projection reads: bench/attention_gpu.py times its fused launch
; beside PyTorch's SDPA back ends (cuDNN, FlashAttention-2) on the same
; strides.
(module attention_bench
  (func attn
    (dtypes (T floating)) (devices Dv)
    (dims B S H Dh)
    (params
      (q (tensor T (B S H Dh) Dv))
      (k (tensor T (B S H Dh) Dv))
      (v (tensor T (B S H Dh) Dv)))
    (returns (tensor T (B S H Dh) Dv))
    (let qh (permute q (0 2 1 3)))
    (let kh (permute k (0 2 1 3)))
    (let vh (permute v (0 2 1 3)))
    (let scores (mul (matmul qh (transpose kh)) (rsqrt (dim_value Dh T))))
    (let causal (ge (iota (tensor i32 (S S) Dv) :axis 0) (iota (tensor i32 (S S) Dv) :axis 1)))
    (return (permute (matmul (softmax (select causal scores -inf) :axis -1) vh) (0 2 1 3)))))
