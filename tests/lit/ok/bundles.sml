; Parameter bundles (spec §4.32): a bundle parameter is its fields, named
; by their dotted paths in declared order (nested bundles included); a bundle
; value built field by field, returned whole, passed to a call whole and bound
; from a call's results; `:wrt` of a bundle differentiates all its fields, and
; without `:wrt` a bundle parameter of floating fields has a bundle gradient.
; RUN: %shapemlc check %s
; RUN: %shapemlc --emit=typed %s | FileCheck %s
(module b
  (bundle Layer (dims I O) (w (tensor f32 (I O) host)) (b (tensor f32 (O) host)))
  (bundle Two (dims D) (first (Layer D D)) (second (Layer D D)) (scale (tensor f32 () host)))
  ; CHECK-LABEL: func apply[N, I, O]
  ; CHECK-NEXT: params p.w: (tensor f32 (I O) host) p.b: (tensor f32 (O) host) x: (tensor f32 (N I) host)
  (func apply (dims N I O)
    (params (p (Layer I O)) (x (tensor f32 (N I) host)))
    (returns (tensor f32 (N O) host))
    (return (add (matmul x p.w) p.b)))
  ; CHECK-LABEL: func both[N, D]
  ; CHECK-NEXT: params t.first.w: (tensor f32 (D D) host) t.first.b: (tensor f32 (D) host) t.second.w: (tensor f32 (D D) host) t.second.b: (tensor f32 (D) host) t.scale: (tensor f32 () host) x: (tensor f32 (N D) host)
  ; CHECK: = call(t.first.w, t.first.b, x) {:callee apply}
  ; CHECK: = call(t.second.w, t.second.b, %0) {:callee apply}
  (func both (dims N D)
    (params (t (Two D)) (x (tensor f32 (N D) host)))
    (returns (tensor f32 (N D) host))
    (return (mul (call apply t.second (call apply t.first x)) t.scale)))
  ; CHECK-LABEL: func halve[D]
  ; CHECK: return first.w first.b t.second.w t.second.b t.scale
  (func halve (dims D)
    (params (t (Two D)))
    (returns (Two D))
    (let first (Layer (w (mul t.first.w 0.5)) (b t.first.b)))
    (return (Two (first first) (second t.second) (scale t.scale))))
  ; CHECK-LABEL: func twice[D]
  ; CHECK: h.first.w, h.first.b, h.second.w, h.second.b, h.scale = call(t.first.w, t.first.b, t.second.w, t.second.b, t.scale) {:callee halve}
  ; CHECK: return r.first.w r.first.b r.second.w r.second.b r.scale
  (func twice (dims D)
    (params (t (Two D)))
    (returns (Two D))
    (let h (call halve t))
    (let r (call halve h))
    (return r))
  (func loss (dims N D)
    (params (t (Two D)) (x (tensor f32 (N D) host)))
    (returns (tensor f32 () host))
    (return (reduce_sum (call both t x) :axes (0 1))))
  ; The loss, then the gradient of every field of t.
  ; CHECK-LABEL: func dloss[N, D]
  ; CHECK-NEXT: params t.first.w: {{.*}} x: (tensor f32 (N D) host)
  ; CHECK: return %{{[0-9]+}} %d{{[0-9]+}} %d{{[0-9]+}} %d{{[0-9]+}} %d{{[0-9]+}} %d{{[0-9]+}}{{$}}
  (grad dloss loss :wrt (t))
  ; Without :wrt: every floating parameter's gradient in order, a bundle's as
  ; a bundle (g below) when its fields are all floating; the i64 ids have none.
  (func loss2 (dims N D)
    (params (ids (tensor i64 (N) host)) (t (Two D)) (x (tensor f32 (N D) host)))
    (returns (tensor f32 () host))
    (return (call loss t x)))
  (grad dloss2 loss2)
  ; CHECK-LABEL: func step2[N, D]
  ; CHECK: l, g.first.w, g.first.b, g.second.w, g.second.b, g.scale, gx = call(ids, t.first.w, t.first.b, t.second.w, t.second.b, t.scale, x) {:callee dloss2}
  ; CHECK: return g.first.w g.first.b g.second.w g.second.b g.scale gx
  (func step2 (dims N D)
    (params (ids (tensor i64 (N) host)) (t (Two D)) (x (tensor f32 (N D) host)))
    (returns (Two D) (tensor f32 (N D) host))
    (let (l g gx) (call dloss2 ids t x))
    (return g gx)))
