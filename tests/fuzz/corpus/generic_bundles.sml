; Bundles generic in dtype and device (spec §4.32 with §3.5): a bundle's
; `(dtypes ..)` and `(devices ..)` variables are its first arguments, so one
; declaration serves a model in any dtype on any device; a function's dtype
; and device variables are passed on to the bundles it uses, a template
; generic in its dtype maps over every field, and a bundle of floating
; dtype variables has a bundle gradient.
; RUN: %shapemlc check %s
; RUN: %shapemlc --emit=typed %s | FileCheck %s
(module gb
  (bundle Layer (dtypes Ty) (devices Dv) (dims I O) (w (tensor Ty (I O) Dv)) (b (tensor Ty (O) Dv)))
  (bundle Net (dtypes Ty) (devices Dv) (dims D) (l1 (Layer Ty Dv D D)) (l2 (Layer Ty Dv D D)))
  ; CHECK-LABEL: func apply[N, I, O] dtype T in {f32 f64 bf16} device E
  ; CHECK-NEXT: params p.w: (tensor T (I O) E) p.b: (tensor T (O) E) x: (tensor T (N I) E)
  (func apply (dtypes (T floating)) (devices E) (dims N I O)
    (params (p (Layer T E I O)) (x (tensor T (N I) E)))
    (returns (tensor T (N O) E))
    (return (add (matmul x p.w) p.b)))
  ; The layer called twice: one function, two fields of one bundle.
  ; CHECK-LABEL: func net[N, D] dtype T in {f32 bf16} device E
  ; CHECK-NEXT: params m.l1.w: (tensor T (D D) E) m.l1.b: (tensor T (D) E) m.l2.w: (tensor T (D D) E) m.l2.b: (tensor T (D) E) x: (tensor T (N D) E)
  (func net (dtypes (T f32 bf16)) (devices E) (dims N D)
    (params (m (Net T E D)) (x (tensor T (N D) E)))
    (returns (tensor T (N D) E))
    (return (call apply m.l2 (call apply m.l1 x))))
  ; A concrete use of the same declaration.
  ; CHECK-LABEL: func on_gpu[N, D]
  ; CHECK-NEXT: params m.l1.w: (tensor bf16 (D D) (cuda 0))
  (func on_gpu (dims N D)
    (params (m (Net bf16 (cuda 0) D)) (x (tensor bf16 (N D) (cuda 0))))
    (returns (tensor bf16 (N D) (cuda 0)))
    (return (call net m x)))
  (func loss (dtypes (T f32 bf16)) (devices E) (dims N D)
    (params (m (Net T E D)) (x (tensor T (N D) E)))
    (returns (tensor T () E))
    (return (reduce_sum (call net m x) :axes (0 1))))
  ; Without :wrt: T is floating, so m's gradient is a bundle (x's follows).
  ; CHECK-LABEL: func dloss[N, D] dtype T in {f32 bf16} device E
  ; CHECK: return %{{[0-9]+}} %d{{[0-9]+}} %d{{[0-9]+}} %d{{[0-9]+}} %d{{[0-9]+}} %d{{[0-9]+}}{{$}}
  (grad dloss loss)
  ; SGD once for any shape, dtype and device, mapped over the bundle.
  (func sgd_leaf (shapes S) (dtypes (T floating)) (devices E)
    (params (w (tensor T S E)) (g (tensor T S E)) (lr (tensor T () E)))
    (returns (tensor T S E))
    (return (sub w (mul lr g))))
  ; CHECK-LABEL: func step[N, D] dtype T in {f32 bf16} device E
  ; CHECK: call({{.*}}) {:callee sgd_leaf%2}
  ; CHECK: call({{.*}}) {:callee sgd_leaf%1}
  (func step (dtypes (T f32 bf16)) (devices E) (dims N D)
    (params (m (Net T E D)) (x (tensor T (N D) E)) (lr (tensor T () E)))
    (returns (tensor T () E) (Net T E D))
    (let (l g gx) (call dloss m x))
    (let m2 (map_fields sgd_leaf m g :with lr))
    (return l m2)))
