; Shape-generic functions and map_fields (spec §4.33): `(shapes S)` makes a
; template whose S stands for a whole shape; map_fields calls one instance per
; rank (fresh shape variables S%0 ..) for every leaf field of the bundles, in
; declared order, and binds its results as bundles of the first one's type;
; a direct call takes the instance at its arguments' rank. The template
; itself is no function of the module.
; RUN: %shapemlc check %s
; RUN: %shapemlc --emit=typed %s | FileCheck %s
(module mf
  (bundle Layer (dims I O) (w (tensor f32 (I O) host)) (b (tensor f32 (O) host)))
  (bundle Net (dims D) (l (Layer D D)) (s (tensor f32 () host)))
  (func scale (shapes S)
    (params (x (tensor f32 S host)) (y (tensor f32 S host)) (k (tensor f32 () host)))
    (returns (tensor f32 S host) (tensor f32 S host))
    (return (mul k x) (add x y)))
  ; CHECK-NOT: func scale[
  ; CHECK-LABEL: func scale%2[S%0, S%1]
  ; CHECK-NEXT: params x: (tensor f32 (S%0 S%1) host) y: (tensor f32 (S%0 S%1) host) k: (tensor f32 () host)
  ; CHECK-LABEL: func scale%1[S%0]
  ; CHECK-LABEL: func scale%0[]
  ; CHECK-NEXT: params x: (tensor f32 () host) y: (tensor f32 () host) k: (tensor f32 () host)
  ; CHECK-LABEL: func f[D]
  ; CHECK-NEXT: params a.l.w: (tensor f32 (D D) host) a.l.b: (tensor f32 (D) host) a.s: (tensor f32 () host) b.l.w: {{.*}} k: (tensor f32 () host)
  ; CHECK: = call(a.l.w, b.l.w, k) {:callee scale%2}
  ; CHECK: = call(a.l.b, b.l.b, k) {:callee scale%1}
  ; CHECK: = call(a.s, b.s, k) {:callee scale%0}
  (func f (dims D)
    (params (a (Net D)) (b (Net D)) (k (tensor f32 () host)))
    (returns (Net D) (Net D))
    (let (p q) (map_fields scale a b :with k))
    (return p q))
  ; A bundle bound to a parameter keeps its dimensions; a map_fields returned directly.
  ; CHECK-LABEL: func g[D]
  ; CHECK: = call(c.l.w, a.l.w, k) {:callee scale%2}
  (func g (dims D)
    (params (a (Net D)) (k (tensor f32 () host)))
    (returns (Net D) (Net D))
    (let c a)
    (return (map_fields scale c a :with k)))
  ; A template called on one tensor: the instance at its rank (a parameter,
  ; a field of a bundle parameter, a let with a type).
  ; CHECK-LABEL: func h[D]
  ; CHECK: = call(x, x, k) {:callee scale%1}
  ; CHECK: = call(a.l.w, y, k) {:callee scale%2}
  (func h (dims D)
    (params (a (Net D)) (x (tensor f32 (D) host)) (k (tensor f32 () host)))
    (returns (tensor f32 (D) host) (tensor f32 (D D) host))
    (let (u1 u2) (call scale x x k))
    (let y (tensor f32 (D D) host) (mul a.l.w 2))
    (let (v1 v2) (call scale a.l.w y k))
    (return u1 v2)))
