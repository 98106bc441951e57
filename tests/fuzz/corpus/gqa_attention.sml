; Grouped-query attention, the attention of Llama-style models: H = Hk * G
; query heads share Hk key/value heads. Each K/V head is repeated G times in
; place (repeat_interleave, spec §4.22) so that query head h reads K/V head
; h / G; the scores are scaled by 1/sqrt(Dh) taken from the shape itself
; (dim_value, §4.23); the built-in softmax (§4.21) is the numerically stable
; one. `mask` is added to the scores: 0 where a query may attend and -inf
; where it may not (a causal mask), so masked keys get probability 0.
(module gqa
  (func attention
    (dims B Hk G S Dh)
    (params
      (q (tensor f32 (B (* Hk G) S Dh) host))
      (k (tensor f32 (B Hk S Dh) host))
      (v (tensor f32 (B Hk S Dh) host))
      (mask (tensor f32 (S S) host)))
    (returns (tensor f32 (B (* Hk G) S Dh) host))
    ; (B Hk S Dh) -> (B (* Hk G) S Dh): the checker proves the head counts
    ; equal by normalization, so `matmul` needs no `where`.
    (let kr (repeat_interleave k :repeats G :axis 1))
    (let vr (repeat_interleave v :repeats G :axis 1))
    (let scores (mul (matmul q (transpose kr)) (rsqrt (dim_value Dh f32))))
    (let p (softmax (add scores mask) :axis -1))
    (return (matmul p vr))))
