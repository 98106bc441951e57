; Dtype and device variables (spec §3.5): a generic function is checked once
; for every dtype its variable ranges over and every device; a call binds the
; variables from its arguments (the caller's own variables included), and
; literals, `const`, `dim_value`, `fill` and `iota` take a variable's dtype.
; RUN: %shapemlc check %s
; RUN: %shapemlc --emit=typed %s | FileCheck %s
(module generic
  ; CHECK-LABEL: func norm[N, D] dtype T in {f32 f64 bf16} device Dv
  ; CHECK: params x: (tensor T (N D) Dv) g: (tensor T (D) Dv)
  (func norm
    (dtypes (T floating)) (devices Dv)
    (dims N D)
    (params (x (tensor T (N D) Dv)) (g (tensor T (D) Dv)))
    (returns (tensor T (N D) Dv))
    ; CHECK: const{{.*}}: (tensor T () Dv)
    (let ms (reduce_mean (mul x x) :axes (-1) :keepdims true))
    (let scale (rsqrt (add ms 1e-5)))
    ; CHECK: dim_value{{.*}}: (tensor T () Dv)
    (let n (dim_value D T Dv))
    (return (mul (mul x scale) (mul g (div n n)))))

  ; A caller generic in its own variables passes them on; an integer tensor
  ; on the same device variable is fine.
  ; CHECK-LABEL: func twice[N, D] dtype U in {f32 bf16} device E
  (func twice
    (dtypes (U f32 bf16)) (devices E)
    (dims N D)
    (params (x (tensor U (N D) E)) (g (tensor U (D) E)))
    (returns (tensor U (N D) E) (tensor i64 (N D) E))
    ; CHECK: call(x, g) {:callee norm} : (tensor U (N D) E)
    (let y (call norm x g))
    (let pos (iota (tensor i64 (N D) E) :axis 1))
    (return (call norm y g) pos))

  ; A concrete caller: T = bf16, Dv = (cuda 0) here, f32 on the host below.
  ; CHECK-LABEL: func on_gpu[N]
  ; CHECK: call(x, g) {:callee norm} : (tensor bf16 (N 8) (cuda 0))
  (func on_gpu
    (dims N)
    (params (x (tensor bf16 (N 8) (cuda 0))) (g (tensor bf16 (8) (cuda 0))))
    (returns (tensor bf16 (N 8) (cuda 0)))
    (return (call norm x g)))
  (func on_host
    (dims N)
    (params (x (tensor f32 (N 8) host)) (g (tensor f32 (8) host)))
    (returns (tensor f32 (N 8) host))
    (return (call norm x g)))

  ; Casts to and from a dtype variable; a comparison of T values is bool.
  ; CHECK-LABEL: func clamp_count[N]
  (func clamp_count
    (dtypes (T numeric)) (devices Dv)
    (dims N)
    (params (x (tensor T (N) Dv)))
    (returns (tensor i64 () Dv) (tensor T (N) Dv))
    (let pos (gt x (const 0 T)))
    (return (reduce_sum (cast pos i64)) (max x (cast pos T))))

  ; grad of a generic function is generic.
  (func loss
    (dtypes (T floating)) (devices Dv)
    (dims N)
    (params (x (tensor T (N) Dv)))
    (returns (tensor T () Dv))
    (return (reduce_sum (mul x x))))
  ; CHECK-LABEL: func dloss[N] dtype T in {f32 f64 bf16} device Dv
  (grad dloss loss))
