; StoryLM-0: a tiny decoder-only language model that shapeml trains and
; samples from. Token embedding by `gather`, one pre-norm decoder block
; (RMSNorm, causal multi-head attention with rank-4 batched matmuls, SwiGLU,
; residuals), a final RMSNorm and the output projection to logits [B T V].
; No positional embedding: causal attention alone tells positions apart, and
; the same functions run at any T (train at T = 16, generate at T = 36).
;
; The sizes examples/storylm0/train.py uses (one CPU thread, seconds):
;   V = 64 characters, D = 32, H = 2 heads of Dh = 16, F = 64 (SwiGLU),
;   B = 33 windows of T = 16 tokens (every shifted window), 400 AdamW steps;
;   the earlier recipe (--optimizer sgd): 3 windows, 40 epochs of SGD.
; Every function is shape-polymorphic: the checker proves them for all sizes
; with D = H * Dh; and generic in its dtype Ty and device Dv (spec §3.5), so
; the same source trains on the CPU and on the GPU (tests/gpu/storylm0_gpu.py).
(module storylm0
  ; RMSNorm over the last axis: x / sqrt(mean(x^2) + eps) * g
  (func rmsnorm
    (dtypes (Ty floating)) (devices Dv)
    (dims N D)
    (params (x (tensor Ty (N D) Dv)) (g (tensor Ty (D) Dv)))
    (returns (tensor Ty (N D) Dv))
    (let ms (reduce_mean (mul x x) :axes (-1) :keepdims true))
    (return (mul (mul x (rsqrt (add ms 1e-5))) g)))

  ; softmax(q k^T / sqrt(Dh) + causal mask) v on [B H T Dh]
  (func attend
    (dtypes (Ty floating)) (devices Dv)
    (dims B H T Dh)
    (params
      (q (tensor Ty (B H T Dh) Dv))
      (k (tensor Ty (B H T Dh) Dv))
      (v (tensor Ty (B H T Dh) Dv)))
    (returns (tensor Ty (B H T Dh) Dv))
    (let scores (mul (matmul q (transpose k)) (rsqrt (dim_value Dh Ty Dv))))
    (let causal (ge (iota (tensor i32 (T T) Dv) :axis 0) (iota (tensor i32 (T T) Dv) :axis 1)))
    (return (matmul (softmax (select causal scores -inf) :axis -1) v)))

  ; [B*T, H*Dh] -> [B, H, T, Dh]
  (func split_heads
    (dtypes (Ty floating)) (devices Dv)
    (dims B T H Dh)
    (params (x (tensor Ty ((* B T) (* H Dh)) Dv)))
    (returns (tensor Ty (B H T Dh) Dv))
    (return (permute (reshape x (B T H Dh)) (0 2 1 3))))

  ; Queries, keys and values of the rows x [B*T, D], per head [B H T Dh].
  (func qkv
    (dtypes (Ty floating)) (devices Dv)
    (dims B T D H Dh)
    (where (= D (* H Dh)))
    (params
      (n1 (tensor Ty ((* B T) D) Dv))
      (wq (tensor Ty (D H Dh) Dv))
      (wk (tensor Ty (D H Dh) Dv))
      (wv (tensor Ty (D H Dh) Dv)))
    (returns (tensor Ty (B H T Dh) Dv) (tensor Ty (B H T Dh) Dv) (tensor Ty (B H T Dh) Dv))
    (return
      (call split_heads :dims ((B B) (H H)) (matmul n1 (reshape wq (D (* H Dh)))))
      (call split_heads :dims ((B B) (H H)) (matmul n1 (reshape wk (D (* H Dh)))))
      (call split_heads :dims ((B B) (H H)) (matmul n1 (reshape wv (D (* H Dh)))))))

  ; The block after attention: x + ctx Wo, then h + SwiGLU(norm(h)).
  (func block_tail
    (dtypes (Ty floating)) (devices Dv)
    (dims N D H Dh F)
    (where (= D (* H Dh)))
    (params
      (x (tensor Ty (N D) Dv))
      (ctx (tensor Ty (N D) Dv))
      (wo (tensor Ty (H Dh D) Dv))
      (g2 (tensor Ty (D) Dv))
      (w_gate (tensor Ty (D F) Dv))
      (w_up (tensor Ty (D F) Dv))
      (w_down (tensor Ty (F D) Dv)))
    (returns (tensor Ty (N D) Dv))
    (let h (add x (matmul ctx (reshape wo (D D)))))
    (let n2 (call rmsnorm h g2))
    (return (add h (matmul (mul (silu (matmul n2 w_gate)) (matmul n2 w_up)) w_down))))

  ; The decoder block on [B*T, D] rows: x + attention(norm(x)), then
  ; h + SwiGLU(norm(h)). Also returns the keys, transposed [B H Dh T], and
  ; the values [B H T Dh]: generation's KV cache.
  (func block
    (dtypes (Ty floating)) (devices Dv)
    (dims B T D H Dh F)
    (where (= D (* H Dh)))
    (params
      (x (tensor Ty ((* B T) D) Dv))
      (g1 (tensor Ty (D) Dv))
      (wq (tensor Ty (D H Dh) Dv))
      (wk (tensor Ty (D H Dh) Dv))
      (wv (tensor Ty (D H Dh) Dv))
      (wo (tensor Ty (H Dh D) Dv))
      (g2 (tensor Ty (D) Dv))
      (w_gate (tensor Ty (D F) Dv))
      (w_up (tensor Ty (D F) Dv))
      (w_down (tensor Ty (F D) Dv)))
    (returns (tensor Ty ((* B T) D) Dv) (tensor Ty (B H Dh T) Dv) (tensor Ty (B H T Dh) Dv))
    (let (q k v) (call qkv :dims ((B B) (T T)) (call rmsnorm x g1) wq wk wv))
    (let ctx (reshape (permute (call attend q k v) (0 2 1 3)) ((* B T) D)))
    (return (call block_tail x ctx wo g2 w_gate w_up w_down) (transpose k) v))

  ; tokens [B T] -> logits [B T V]
  (func logits
    (dtypes (Ty floating)) (devices Dv)
    (dims B T V D H Dh F)
    (where (= D (* H Dh)))
    (params
      (tokens (tensor i64 (B T) Dv))
      (emb (tensor Ty (V D) Dv))
      (g1 (tensor Ty (D) Dv))
      (wq (tensor Ty (D H Dh) Dv))
      (wk (tensor Ty (D H Dh) Dv))
      (wv (tensor Ty (D H Dh) Dv))
      (wo (tensor Ty (H Dh D) Dv))
      (g2 (tensor Ty (D) Dv))
      (w_gate (tensor Ty (D F) Dv))
      (w_up (tensor Ty (D F) Dv))
      (w_down (tensor Ty (F D) Dv))
      (g_final (tensor Ty (D) Dv))
      (w_out (tensor Ty (D V) Dv)))
    (returns (tensor Ty (B T V) Dv))
    (let x (reshape (gather emb tokens) ((* B T) D)))
    (let (h kt v) (call block :dims ((B B) (T T)) x g1 wq wk wv wo g2 w_gate w_up w_down))
    (return (reshape (matmul (call rmsnorm h g_final) w_out) (B T V))))

  ; Generation, part 1: the prompt [1 T] -> its logits [1 T V] and its KV
  ; cache, keys transposed [1 H Dh T] and values [1 H T Dh]. The host takes
  ; the last position's logits and pads the cache to T_max for `decode`.
  (func prefill
    (dtypes (Ty floating)) (devices Dv)
    (dims T V D H Dh F)
    (where (= D (* H Dh)))
    (params
      (tokens (tensor i64 (1 T) Dv))
      (emb (tensor Ty (V D) Dv))
      (g1 (tensor Ty (D) Dv))
      (wq (tensor Ty (D H Dh) Dv))
      (wk (tensor Ty (D H Dh) Dv))
      (wv (tensor Ty (D H Dh) Dv))
      (wo (tensor Ty (H Dh D) Dv))
      (g2 (tensor Ty (D) Dv))
      (w_gate (tensor Ty (D F) Dv))
      (w_up (tensor Ty (D F) Dv))
      (w_down (tensor Ty (F D) Dv))
      (g_final (tensor Ty (D) Dv))
      (w_out (tensor Ty (D V) Dv)))
    (returns (tensor Ty (1 T V) Dv) (tensor Ty (1 H Dh T) Dv) (tensor Ty (1 H T Dh) Dv))
    (let x (reshape (gather emb tokens) (T D)))
    (let (h kt v) (call block :dims ((B 1) (T T)) x g1 wq wk wv wo g2 w_gate w_up w_down))
    (return (reshape (matmul (call rmsnorm h g_final) w_out) (1 T V)) kt v))

  ; Generation, part 2: one token at a static cache length Tm. The cache
  ; holds `live` positions (0 .. live-1); the rest is zero padding. The new
  ; token attends to the live positions and to itself — its key and value
  ; appended to the cache by `concat` — and the padding is masked out, so
  ; every token runs the same specialization. Returns the logits [1 1 V]
  ; and the cache with the new key and value at position `live` (a select:
  ; a new value, not an in-place write). With Tm = live + 1 and a one-wide
  ; pad this is the unpadded, growing cache (one specialization per length).
  (func decode
    (dtypes (Ty floating)) (devices Dv)
    (dims Tm V D H Dh F)
    (where (= D (* H Dh)))
    (params
      (token (tensor i64 (1 1) Dv))
      (live (tensor i64 () Dv))
      (kt_cache (tensor Ty (1 H Dh Tm) Dv))
      (v_cache (tensor Ty (1 H Tm Dh) Dv))
      (emb (tensor Ty (V D) Dv))
      (g1 (tensor Ty (D) Dv))
      (wq (tensor Ty (D H Dh) Dv))
      (wk (tensor Ty (D H Dh) Dv))
      (wv (tensor Ty (D H Dh) Dv))
      (wo (tensor Ty (H Dh D) Dv))
      (g2 (tensor Ty (D) Dv))
      (w_gate (tensor Ty (D F) Dv))
      (w_up (tensor Ty (D F) Dv))
      (w_down (tensor Ty (F D) Dv))
      (g_final (tensor Ty (D) Dv))
      (w_out (tensor Ty (D V) Dv)))
    (returns (tensor Ty (1 1 V) Dv) (tensor Ty (1 H Dh Tm) Dv) (tensor Ty (1 H Tm Dh) Dv))
    (let x (reshape (gather emb token) (1 D)))
    (let (q k v) (call qkv :dims ((B 1) (T 1)) (call rmsnorm x g1) wq wk wv))
    (let kt_all (concat kt_cache (transpose k) :axis 3))
    (let v_all (concat v_cache v :axis 2))
    (let pos (iota (tensor i64 ((+ Tm 1)) Dv) :axis 0))
    (let visible (or (lt pos live) (eq pos (dim_value Tm i64 Dv))))
    (let scores (mul (matmul q kt_all) (rsqrt (dim_value Dh Ty Dv))))
    (let ctx (reshape (permute (matmul (softmax (select visible scores -inf) :axis -1) v_all) (0 2 1 3)) (1 D)))
    (let h (call block_tail x ctx wo g2 w_gate w_up w_down))
    (let at (eq (iota (tensor i64 (Tm) Dv) :axis 0) live))
    (return
      (reshape (matmul (call rmsnorm h g_final) w_out) (1 1 V))
      (select at (transpose k) kt_cache)
      (select (reshape at (Tm 1)) v v_cache)))

  ; The summed negative log-likelihood of the targets, shape (1 1):
  ; -sum log softmax(logits)[target]. Its gradients are those of the sum; the
  ; host scales the learning rate by 1/(B*T) for the mean.
  (func nll
    (dtypes (Ty floating)) (devices Dv)
    (dims B T V D H Dh F)
    (where (= D (* H Dh)))
    (params
      (tokens (tensor i64 (B T) Dv))
      (targets (tensor i64 (B T) Dv))
      (emb (tensor Ty (V D) Dv))
      (g1 (tensor Ty (D) Dv))
      (wq (tensor Ty (D H Dh) Dv))
      (wk (tensor Ty (D H Dh) Dv))
      (wv (tensor Ty (D H Dh) Dv))
      (wo (tensor Ty (H Dh D) Dv))
      (g2 (tensor Ty (D) Dv))
      (w_gate (tensor Ty (D F) Dv))
      (w_up (tensor Ty (D F) Dv))
      (w_down (tensor Ty (F D) Dv))
      (g_final (tensor Ty (D) Dv))
      (w_out (tensor Ty (D V) Dv)))
    (returns (tensor Ty (1 1) Dv))
    (let z (call logits tokens emb g1 wq wk wv wo g2 w_gate w_up w_down g_final w_out))
    (let picked (take_along_axis (log_softmax z :axis -1) targets :axis -1))
    (return (reduce_sum (neg picked) :axes (0 1) :keepdims true)))

  ; (loss, d loss / d emb, ..., d loss / d w_out): every floating parameter, in order
  (grad nll_grad nll)

  ; One SGD step: w' = w - lr * g for every weight; returns the loss before it.
  (func sgd_step
    (dtypes (Ty floating)) (devices Dv)
    (dims B T V D H Dh F)
    (where (= D (* H Dh)))
    (params
      (tokens (tensor i64 (B T) Dv))
      (targets (tensor i64 (B T) Dv))
      (lr (tensor Ty () Dv))
      (emb (tensor Ty (V D) Dv))
      (g1 (tensor Ty (D) Dv))
      (wq (tensor Ty (D H Dh) Dv))
      (wk (tensor Ty (D H Dh) Dv))
      (wv (tensor Ty (D H Dh) Dv))
      (wo (tensor Ty (H Dh D) Dv))
      (g2 (tensor Ty (D) Dv))
      (w_gate (tensor Ty (D F) Dv))
      (w_up (tensor Ty (D F) Dv))
      (w_down (tensor Ty (F D) Dv))
      (g_final (tensor Ty (D) Dv))
      (w_out (tensor Ty (D V) Dv)))
    (returns
      (tensor Ty (1 1) Dv)
      (tensor Ty (V D) Dv) (tensor Ty (D) Dv)
      (tensor Ty (D H Dh) Dv) (tensor Ty (D H Dh) Dv) (tensor Ty (D H Dh) Dv) (tensor Ty (H Dh D) Dv)
      (tensor Ty (D) Dv) (tensor Ty (D F) Dv) (tensor Ty (D F) Dv) (tensor Ty (F D) Dv)
      (tensor Ty (D) Dv) (tensor Ty (D V) Dv))
    (let (loss d_emb d_g1 d_wq d_wk d_wv d_wo d_g2 d_gate d_up d_down d_gf d_out)
      (call nll_grad tokens targets emb g1 wq wk wv wo g2 w_gate w_up w_down g_final w_out))
    (return loss
      (sub emb (mul lr d_emb)) (sub g1 (mul lr d_g1))
      (sub wq (mul lr d_wq)) (sub wk (mul lr d_wk)) (sub wv (mul lr d_wv)) (sub wo (mul lr d_wo))
      (sub g2 (mul lr d_g2)) (sub w_gate (mul lr d_gate)) (sub w_up (mul lr d_up)) (sub w_down (mul lr d_down))
      (sub g_final (mul lr d_gf)) (sub w_out (mul lr d_out))))

  ; AdamW on one tensor (as torch.optim.AdamW): decoupled weight decay
  ; w (1 - lr wd), moments m' = b1 m + (1 - b1) g, v' = b2 v + (1 - b2) g^2,
  ; bias corrections c1 = 1 - b1^t, c2 = 1 - b2^t, then
  ; w' = w - (lr / c1) m' / (sqrt(v') / sqrt(c2) + eps).
  ; One function per rank (ranks are static); hyperparameters are rank 0.
  (func adamw1
    (dtypes (Ty floating)) (devices Dv)
    (dims A)
    (params (w (tensor Ty (A) Dv)) (g (tensor Ty (A) Dv)) (m (tensor Ty (A) Dv)) (v (tensor Ty (A) Dv))
            (lr (tensor Ty () Dv)) (b1 (tensor Ty () Dv)) (b2 (tensor Ty () Dv)) (eps (tensor Ty () Dv))
            (wd (tensor Ty () Dv)) (t (tensor Ty () Dv)))
    (returns (tensor Ty (A) Dv) (tensor Ty (A) Dv) (tensor Ty (A) Dv))
    (let m2 (add (mul b1 m) (mul (sub 1.0 b1) g)))
    (let v2 (add (mul b2 v) (mul (sub 1.0 b2) (mul g g))))
    (let denom (add (div (sqrt v2) (sqrt (sub 1.0 (pow b2 t)))) eps))
    (let decayed (mul w (sub 1.0 (mul lr wd))))
    (return (sub decayed (mul (div lr (sub 1.0 (pow b1 t))) (div m2 denom))) m2 v2))
  (func adamw2
    (dtypes (Ty floating)) (devices Dv)
    (dims A C)
    (params (w (tensor Ty (A C) Dv)) (g (tensor Ty (A C) Dv)) (m (tensor Ty (A C) Dv)) (v (tensor Ty (A C) Dv))
            (lr (tensor Ty () Dv)) (b1 (tensor Ty () Dv)) (b2 (tensor Ty () Dv)) (eps (tensor Ty () Dv))
            (wd (tensor Ty () Dv)) (t (tensor Ty () Dv)))
    (returns (tensor Ty (A C) Dv) (tensor Ty (A C) Dv) (tensor Ty (A C) Dv))
    (let m2 (add (mul b1 m) (mul (sub 1.0 b1) g)))
    (let v2 (add (mul b2 v) (mul (sub 1.0 b2) (mul g g))))
    (let denom (add (div (sqrt v2) (sqrt (sub 1.0 (pow b2 t)))) eps))
    (let decayed (mul w (sub 1.0 (mul lr wd))))
    (return (sub decayed (mul (div lr (sub 1.0 (pow b1 t))) (div m2 denom))) m2 v2))
  (func adamw3
    (dtypes (Ty floating)) (devices Dv)
    (dims A C E)
    (params (w (tensor Ty (A C E) Dv)) (g (tensor Ty (A C E) Dv)) (m (tensor Ty (A C E) Dv)) (v (tensor Ty (A C E) Dv))
            (lr (tensor Ty () Dv)) (b1 (tensor Ty () Dv)) (b2 (tensor Ty () Dv)) (eps (tensor Ty () Dv))
            (wd (tensor Ty () Dv)) (t (tensor Ty () Dv)))
    (returns (tensor Ty (A C E) Dv) (tensor Ty (A C E) Dv) (tensor Ty (A C E) Dv))
    (let m2 (add (mul b1 m) (mul (sub 1.0 b1) g)))
    (let v2 (add (mul b2 v) (mul (sub 1.0 b2) (mul g g))))
    (let denom (add (div (sqrt v2) (sqrt (sub 1.0 (pow b2 t)))) eps))
    (let decayed (mul w (sub 1.0 (mul lr wd))))
    (return (sub decayed (mul (div lr (sub 1.0 (pow b1 t))) (div m2 denom))) m2 v2))

  ; One AdamW step over every weight. `hp` = (lr b1 b2 eps wd t) as a [6]
  ; vector, t = the 1-based step number; `m_*`/`v_*` the moments.
  ; Returns the loss before the step, then the new weights, m and v.
  (func adamw_step
    (dtypes (Ty floating)) (devices Dv)
    (dims B T V D H Dh F)
    (where (= D (* H Dh)))
    (params
      (tokens (tensor i64 (B T) Dv))
      (targets (tensor i64 (B T) Dv))
      (hp (tensor Ty (6) Dv))
      (emb (tensor Ty (V D) Dv)) (g1 (tensor Ty (D) Dv))
      (wq (tensor Ty (D H Dh) Dv)) (wk (tensor Ty (D H Dh) Dv)) (wv (tensor Ty (D H Dh) Dv)) (wo (tensor Ty (H Dh D) Dv))
      (g2 (tensor Ty (D) Dv)) (w_gate (tensor Ty (D F) Dv)) (w_up (tensor Ty (D F) Dv)) (w_down (tensor Ty (F D) Dv))
      (g_final (tensor Ty (D) Dv)) (w_out (tensor Ty (D V) Dv))
      (m_emb (tensor Ty (V D) Dv)) (m_g1 (tensor Ty (D) Dv))
      (m_wq (tensor Ty (D H Dh) Dv)) (m_wk (tensor Ty (D H Dh) Dv)) (m_wv (tensor Ty (D H Dh) Dv)) (m_wo (tensor Ty (H Dh D) Dv))
      (m_g2 (tensor Ty (D) Dv)) (m_gate (tensor Ty (D F) Dv)) (m_up (tensor Ty (D F) Dv)) (m_down (tensor Ty (F D) Dv))
      (m_gf (tensor Ty (D) Dv)) (m_out (tensor Ty (D V) Dv))
      (v_emb (tensor Ty (V D) Dv)) (v_g1 (tensor Ty (D) Dv))
      (v_wq (tensor Ty (D H Dh) Dv)) (v_wk (tensor Ty (D H Dh) Dv)) (v_wv (tensor Ty (D H Dh) Dv)) (v_wo (tensor Ty (H Dh D) Dv))
      (v_g2 (tensor Ty (D) Dv)) (v_gate (tensor Ty (D F) Dv)) (v_up (tensor Ty (D F) Dv)) (v_down (tensor Ty (F D) Dv))
      (v_gf (tensor Ty (D) Dv)) (v_out (tensor Ty (D V) Dv)))
    (returns
      (tensor Ty (1 1) Dv)
      (tensor Ty (V D) Dv) (tensor Ty (D) Dv)
      (tensor Ty (D H Dh) Dv) (tensor Ty (D H Dh) Dv) (tensor Ty (D H Dh) Dv) (tensor Ty (H Dh D) Dv)
      (tensor Ty (D) Dv) (tensor Ty (D F) Dv) (tensor Ty (D F) Dv) (tensor Ty (F D) Dv)
      (tensor Ty (D) Dv) (tensor Ty (D V) Dv)
      (tensor Ty (V D) Dv) (tensor Ty (D) Dv)
      (tensor Ty (D H Dh) Dv) (tensor Ty (D H Dh) Dv) (tensor Ty (D H Dh) Dv) (tensor Ty (H Dh D) Dv)
      (tensor Ty (D) Dv) (tensor Ty (D F) Dv) (tensor Ty (D F) Dv) (tensor Ty (F D) Dv)
      (tensor Ty (D) Dv) (tensor Ty (D V) Dv)
      (tensor Ty (V D) Dv) (tensor Ty (D) Dv)
      (tensor Ty (D H Dh) Dv) (tensor Ty (D H Dh) Dv) (tensor Ty (D H Dh) Dv) (tensor Ty (H Dh D) Dv)
      (tensor Ty (D) Dv) (tensor Ty (D F) Dv) (tensor Ty (D F) Dv) (tensor Ty (F D) Dv)
      (tensor Ty (D) Dv) (tensor Ty (D V) Dv))
    (let (loss d_emb d_g1 d_wq d_wk d_wv d_wo d_g2 d_gate d_up d_down d_gf d_out)
      (call nll_grad tokens targets emb g1 wq wk wv wo g2 w_gate w_up w_down g_final w_out))
    (let lr (reshape (slice hp :axis 0 :start 0 :size 1) ()))
    (let b1 (reshape (slice hp :axis 0 :start 1 :size 1) ()))
    (let b2 (reshape (slice hp :axis 0 :start 2 :size 1) ()))
    (let eps (reshape (slice hp :axis 0 :start 3 :size 1) ()))
    (let wd (reshape (slice hp :axis 0 :start 4 :size 1) ()))
    (let t (reshape (slice hp :axis 0 :start 5 :size 1) ()))
    (let (n_emb n_m_emb n_v_emb) (call adamw2 emb d_emb m_emb v_emb lr b1 b2 eps wd t))
    (let (n_g1 n_m_g1 n_v_g1) (call adamw1 g1 d_g1 m_g1 v_g1 lr b1 b2 eps wd t))
    (let (n_wq n_m_wq n_v_wq) (call adamw3 wq d_wq m_wq v_wq lr b1 b2 eps wd t))
    (let (n_wk n_m_wk n_v_wk) (call adamw3 wk d_wk m_wk v_wk lr b1 b2 eps wd t))
    (let (n_wv n_m_wv n_v_wv) (call adamw3 wv d_wv m_wv v_wv lr b1 b2 eps wd t))
    (let (n_wo n_m_wo n_v_wo) (call adamw3 wo d_wo m_wo v_wo lr b1 b2 eps wd t))
    (let (n_g2 n_m_g2 n_v_g2) (call adamw1 g2 d_g2 m_g2 v_g2 lr b1 b2 eps wd t))
    (let (n_gate n_m_gate n_v_gate) (call adamw2 w_gate d_gate m_gate v_gate lr b1 b2 eps wd t))
    (let (n_up n_m_up n_v_up) (call adamw2 w_up d_up m_up v_up lr b1 b2 eps wd t))
    (let (n_down n_m_down n_v_down) (call adamw2 w_down d_down m_down v_down lr b1 b2 eps wd t))
    (let (n_gf n_m_gf n_v_gf) (call adamw1 g_final d_gf m_gf v_gf lr b1 b2 eps wd t))
    (let (n_out n_m_out n_v_out) (call adamw2 w_out d_out m_out v_out lr b1 b2 eps wd t))
    (return loss
      n_emb n_g1 n_wq n_wk n_wv n_wo n_g2 n_gate n_up n_down n_gf n_out
      n_m_emb n_m_g1 n_m_wq n_m_wk n_m_wv n_m_wo n_m_g2 n_m_gate n_m_up n_m_down n_m_gf n_m_out
      n_v_emb n_v_g1 n_v_wq n_v_wk n_v_wv n_v_wo n_v_g2 n_v_gate n_v_up n_v_down n_v_gf n_v_out)))
