; StoryLM-0: a tiny decoder-only language model that shapeml trains and
; samples from. Token embedding by `gather`, two pre-norm decoder blocks
; (RMSNorm, causal multi-head attention with rank-4 batched matmuls, SwiGLU,
; residuals) -- one block function called with each block's weights -- a
; final RMSNorm and the output projection to logits [B T V]. The weights are
; one bundle (spec §4.32): `Model` holds the embedding, two `Block`s and the
; output side; its gradient is a `Model` too, and SGD and AdamW are each
; written once for a weight of any shape and mapped over all of them (§4.33).
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
; At the C ABI a Model is its 22 tensors in declared order: m.emb, m.b1.g1
; .. m.b1.w_down, m.b2.g1 .. m.b2.w_down, m.g_final, m.w_out.
(module storylm0
  ; One decoder block's weights.
  (bundle Block (dtypes Ty) (devices Dv) (dims D H Dh F)
    (g1 (tensor Ty (D) Dv))
    (wq (tensor Ty (D H Dh) Dv)) (wk (tensor Ty (D H Dh) Dv)) (wv (tensor Ty (D H Dh) Dv)) (wo (tensor Ty (H Dh D) Dv))
    (g2 (tensor Ty (D) Dv))
    (w_gate (tensor Ty (D F) Dv)) (w_up (tensor Ty (D F) Dv)) (w_down (tensor Ty (F D) Dv)))
  ; The model: the embedding, two blocks, the final norm and the output projection.
  (bundle Model (dtypes Ty) (devices Dv) (dims V D H Dh F)
    (emb (tensor Ty (V D) Dv))
    (b1 (Block Ty Dv D H Dh F))
    (b2 (Block Ty Dv D H Dh F))
    (g_final (tensor Ty (D) Dv))
    (w_out (tensor Ty (D V) Dv)))

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
    (params (x (tensor Ty (N D) Dv)) (ctx (tensor Ty (N D) Dv)) (p (Block Ty Dv D H Dh F)))
    (returns (tensor Ty (N D) Dv))
    (let h (add x (matmul ctx (reshape p.wo (D D)))))
    (let n2 (call rmsnorm h p.g2))
    (return (add h (matmul (mul (silu (matmul n2 p.w_gate)) (matmul n2 p.w_up)) p.w_down))))

  ; A decoder block on [B*T, D] rows: x + attention(norm(x)), then
  ; h + SwiGLU(norm(h)). Also returns the keys, transposed [B H Dh T], and
  ; the values [B H T Dh]: generation's KV cache.
  (func block
    (dtypes (Ty floating)) (devices Dv)
    (dims B T D H Dh F)
    (where (= D (* H Dh)))
    (params (x (tensor Ty ((* B T) D) Dv)) (p (Block Ty Dv D H Dh F)))
    (returns (tensor Ty ((* B T) D) Dv) (tensor Ty (B H Dh T) Dv) (tensor Ty (B H T Dh) Dv))
    (let (q k v) (call qkv :dims ((B B) (T T)) (call rmsnorm x p.g1) p.wq p.wk p.wv))
    (let ctx (reshape (permute (call attend q k v) (0 2 1 3)) ((* B T) D)))
    (return (call block_tail x ctx p) (transpose k) v))

  ; tokens [B T] -> logits [B T V]: the two blocks, one after the other.
  (func logits
    (dtypes (Ty floating)) (devices Dv)
    (dims B T V D H Dh F)
    (where (= D (* H Dh)))
    (params (tokens (tensor i64 (B T) Dv)) (m (Model Ty Dv V D H Dh F)))
    (returns (tensor Ty (B T V) Dv))
    (let x (reshape (gather m.emb tokens) ((* B T) D)))
    (let (h1 kt1 v1) (call block :dims ((B B) (T T)) x m.b1))
    (let (h2 kt2 v2) (call block :dims ((B B) (T T)) h1 m.b2))
    (return (reshape (matmul (call rmsnorm h2 m.g_final) m.w_out) (B T V))))

  ; Generation, part 1: the prompt [1 T] -> its logits [1 T V] and each
  ; block's KV cache, keys transposed [1 H Dh T] and values [1 H T Dh]. The
  ; host takes the last position's logits and pads the caches to T_max for
  ; `decode`.
  (func prefill
    (dtypes (Ty floating)) (devices Dv)
    (dims T V D H Dh F)
    (where (= D (* H Dh)))
    (params (tokens (tensor i64 (1 T) Dv)) (m (Model Ty Dv V D H Dh F)))
    (returns (tensor Ty (1 T V) Dv) (tensor Ty (1 H Dh T) Dv) (tensor Ty (1 H T Dh) Dv) (tensor Ty (1 H Dh T) Dv) (tensor Ty (1 H T Dh) Dv))
    (let x (reshape (gather m.emb tokens) (T D)))
    (let (h1 kt1 v1) (call block :dims ((B 1) (T T)) x m.b1))
    (let (h2 kt2 v2) (call block :dims ((B 1) (T T)) h1 m.b2))
    (return (reshape (matmul (call rmsnorm h2 m.g_final) m.w_out) (1 T V)) kt1 v1 kt2 v2))

  ; Generation, part 2, one block: the new token's row x [1 D] against a
  ; cache of static length Tm that holds `live` positions (0 .. live-1; the
  ; rest is zero padding). The token attends to the live positions and to
  ; itself -- its key and value appended to the cache by `concat` -- and the
  ; padding is masked out, so every token runs the same specialization.
  ; Returns the block's output row and the cache with the new key and value
  ; at position `live` (a select: a new value, not an in-place write).
  (func decode_block
    (dtypes (Ty floating)) (devices Dv)
    (dims Tm D H Dh F)
    (where (= D (* H Dh)))
    (params
      (x (tensor Ty (1 D) Dv))
      (live (tensor i64 () Dv))
      (kt_cache (tensor Ty (1 H Dh Tm) Dv))
      (v_cache (tensor Ty (1 H Tm Dh) Dv))
      (p (Block Ty Dv D H Dh F)))
    (returns (tensor Ty (1 D) Dv) (tensor Ty (1 H Dh Tm) Dv) (tensor Ty (1 H Tm Dh) Dv))
    (let (q k v) (call qkv :dims ((B 1) (T 1)) (call rmsnorm x p.g1) p.wq p.wk p.wv))
    (let kt_all (concat kt_cache (transpose k) :axis 3))
    (let v_all (concat v_cache v :axis 2))
    (let pos (iota (tensor i64 ((+ Tm 1)) Dv) :axis 0))
    (let visible (or (lt pos live) (eq pos (dim_value Tm i64 Dv))))
    (let scores (mul (matmul q kt_all) (rsqrt (dim_value Dh Ty Dv))))
    (let ctx (reshape (permute (matmul (softmax (select visible scores -inf) :axis -1) v_all) (0 2 1 3)) (1 D)))
    (let at (eq (iota (tensor i64 (Tm) Dv) :axis 0) live))
    (return
      (call block_tail x ctx p)
      (select at (transpose k) kt_cache)
      (select (reshape at (Tm 1)) v v_cache)))

  ; Generation, part 2: one token through both blocks, each with its cache.
  ; Returns the logits [1 1 V] and both updated caches. With Tm = live + 1
  ; and one-wide pads this is the unpadded, growing cache (one specialization
  ; per length).
  (func decode
    (dtypes (Ty floating)) (devices Dv)
    (dims Tm V D H Dh F)
    (where (= D (* H Dh)))
    (params
      (token (tensor i64 (1 1) Dv))
      (live (tensor i64 () Dv))
      (kt1 (tensor Ty (1 H Dh Tm) Dv)) (v1 (tensor Ty (1 H Tm Dh) Dv))
      (kt2 (tensor Ty (1 H Dh Tm) Dv)) (v2 (tensor Ty (1 H Tm Dh) Dv))
      (m (Model Ty Dv V D H Dh F)))
    (returns (tensor Ty (1 1 V) Dv) (tensor Ty (1 H Dh Tm) Dv) (tensor Ty (1 H Tm Dh) Dv) (tensor Ty (1 H Dh Tm) Dv) (tensor Ty (1 H Tm Dh) Dv))
    (let x (reshape (gather m.emb token) (1 D)))
    (let (h1 nkt1 nv1) (call decode_block x live kt1 v1 m.b1))
    (let (h2 nkt2 nv2) (call decode_block h1 live kt2 v2 m.b2))
    (return (reshape (matmul (call rmsnorm h2 m.g_final) m.w_out) (1 1 V)) nkt1 nv1 nkt2 nv2))

  ; The summed negative log-likelihood of the targets, shape (1 1):
  ; -sum log softmax(logits)[target]. Its gradients are those of the sum; the
  ; host scales the learning rate by 1/(B*T) for the mean.
  (func nll
    (dtypes (Ty floating)) (devices Dv)
    (dims B T V D H Dh F)
    (where (= D (* H Dh)))
    (params (tokens (tensor i64 (B T) Dv)) (targets (tensor i64 (B T) Dv)) (m (Model Ty Dv V D H Dh F)))
    (returns (tensor Ty (1 1) Dv))
    (let z (call logits tokens m))
    (let picked (take_along_axis (log_softmax z :axis -1) targets :axis -1))
    (return (reduce_sum (neg picked) :axes (0 1) :keepdims true)))

  ; (loss, d loss / d m): the gradient a Model, field by field
  (grad nll_grad nll :wrt (m))

  ; SGD on one weight of any shape: w - lr g.
  (func sgd_leaf (shapes S)
    (dtypes (Ty floating)) (devices Dv)
    (params (w (tensor Ty S Dv)) (g (tensor Ty S Dv)) (lr (tensor Ty () Dv)))
    (returns (tensor Ty S Dv))
    (return (sub w (mul lr g))))

  ; One SGD step over every weight; returns the loss before it and the new model.
  (func sgd_step
    (dtypes (Ty floating)) (devices Dv)
    (dims B T V D H Dh F)
    (where (= D (* H Dh)))
    (params (tokens (tensor i64 (B T) Dv)) (targets (tensor i64 (B T) Dv)) (lr (tensor Ty () Dv)) (m (Model Ty Dv V D H Dh F)))
    (returns (tensor Ty (1 1) Dv) (Model Ty Dv V D H Dh F))
    (let (loss g) (call nll_grad tokens targets m))
    (let m2 (map_fields sgd_leaf m g :with lr))
    (return loss m2))

  ; AdamW on one weight of any shape (as torch.optim.AdamW): decoupled
  ; weight decay w (1 - lr wd), moments m' = b1 m + (1 - b1) g,
  ; v' = b2 v + (1 - b2) g^2, bias corrections c1 = 1 - b1^t, c2 = 1 - b2^t,
  ; then w' = w - (lr / c1) m' / (sqrt(v') / sqrt(c2) + eps).
  (func adamw_leaf (shapes S)
    (dtypes (Ty floating)) (devices Dv)
    (params (w (tensor Ty S Dv)) (g (tensor Ty S Dv)) (m (tensor Ty S Dv)) (v (tensor Ty S Dv))
            (lr (tensor Ty () Dv)) (b1 (tensor Ty () Dv)) (b2 (tensor Ty () Dv)) (eps (tensor Ty () Dv))
            (wd (tensor Ty () Dv)) (t (tensor Ty () Dv)))
    (returns (tensor Ty S Dv) (tensor Ty S Dv) (tensor Ty S Dv))
    (let m2 (add (mul b1 m) (mul (sub 1.0 b1) g)))
    (let v2 (add (mul b2 v) (mul (sub 1.0 b2) (mul g g))))
    (let denom (add (div (sqrt v2) (sqrt (sub 1.0 (pow b2 t)))) eps))
    (let decayed (mul w (sub 1.0 (mul lr wd))))
    (return (sub decayed (mul (div lr (sub 1.0 (pow b1 t))) (div m2 denom))) m2 v2))

  ; One AdamW step over every weight. `hp` = (lr b1 b2 eps wd t) as a [6]
  ; vector, t = the 1-based step number; `mm`/`vv` the moments, one Model
  ; each. Returns the loss before the step, then the new weights, m and v.
  (func adamw_step
    (dtypes (Ty floating)) (devices Dv)
    (dims B T V D H Dh F)
    (where (= D (* H Dh)))
    (params
      (tokens (tensor i64 (B T) Dv))
      (targets (tensor i64 (B T) Dv))
      (hp (tensor Ty (6) Dv))
      (w (Model Ty Dv V D H Dh F))
      (mm (Model Ty Dv V D H Dh F))
      (vv (Model Ty Dv V D H Dh F)))
    (returns (tensor Ty (1 1) Dv) (Model Ty Dv V D H Dh F) (Model Ty Dv V D H Dh F) (Model Ty Dv V D H Dh F))
    (let (loss g) (call nll_grad tokens targets w))
    (let lr (reshape (slice hp :axis 0 :start 0 :size 1) ()))
    (let b1 (reshape (slice hp :axis 0 :start 1 :size 1) ()))
    (let b2 (reshape (slice hp :axis 0 :start 2 :size 1) ()))
    (let eps (reshape (slice hp :axis 0 :start 3 :size 1) ()))
    (let wd (reshape (slice hp :axis 0 :start 4 :size 1) ()))
    (let t (reshape (slice hp :axis 0 :start 5 :size 1) ()))
    (let (w2 m2 v2) (map_fields adamw_leaf w g mm vv :with lr b1 b2 eps wd t))
    (return loss w2 m2 v2)))
