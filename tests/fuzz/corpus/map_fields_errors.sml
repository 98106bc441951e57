; map_fields and shape-generic functions (spec §4.33), misused: E0107.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s
(module m
  (bundle L (dims I O) (w (tensor f32 (I O) host)) (b (tensor f32 (O) host)))
  (bundle K (dims I) (w (tensor f32 (I I) host)))
  (func step (shapes S)
    (params (w (tensor f32 S host)) (g (tensor f32 S host)) (lr (tensor f32 () host)))
    (returns (tensor f32 S host))
    (return (sub w (mul lr g))))
  (func plain (dims I O)
    (params (w (tensor f32 (I O) host)))
    (returns (tensor f32 (I O) host))
    (return w))
; CHECK: error[E0107]: shape-generic function `late`: its parameters of shape S come first
  (func late (shapes S)
    (params (lr (tensor f32 () host)) (w (tensor f32 S host)))
    (returns (tensor f32 S host))
    (return w))
; CHECK: error[E0107]: a shape-generic function declares one shape pack: `(shapes S)`
  (func two (shapes S T)
    (params (w (tensor f32 S host)))
    (returns (tensor f32 S host))
    (return w))
; CHECK: error[E0107]: shape-generic function `none` has no parameter of shape S
  (func none (shapes S)
    (params (w (tensor f32 (2) host)))
    (returns (tensor f32 (2) host))
    (return w))
  (func f1 (dims I O)
    (params (p (L I O)) (g (L I O)) (lr (tensor f32 () host)))
    (returns (L I O))
; CHECK: error[E0107]: `plain` is not a shape-generic function
; CHECK: = help: declare it with `(shapes S)` and parameters of type `(tensor DTYPE S DEVICE)`
    (return (map_fields plain p g :with lr)))
  (func f2 (dims I O)
    (params (p (L I O)) (g (L I O)) (lr (tensor f32 () host)))
    (returns (L I O))
; CHECK: error[E0107]: `step` takes 2 bundle(s) and 1 :with argument(s); given 1 and 1
    (return (map_fields step p :with lr)))
  (func f3 (dims I O)
    (params (p (L I O)) (g (L I O)) (lr (tensor f32 () host)))
    (returns (L I O))
; CHECK: error[E0107]: `step` has 1 result(s), so map_fields gives as many bundles; 2 name(s) bound
    (let (a b) (map_fields step p g :with lr))
    (return p))
  (func f4 (dims I)
    (params (p (L I I)) (k (K I)) (lr (tensor f32 () host)))
    (returns (L I I))
; CHECK: error[E0107]: map_fields over bundles of one type: `k` is a K, `p` a L
    (return (map_fields step p k :with lr)))
  (func f5 (dims I O)
    (params (p (L I O)) (x (tensor f32 (I O) host)) (lr (tensor f32 () host)))
    (returns (L I O))
; CHECK: error[E0107]: map_fields maps over bundles; `x` is not one
    (return (map_fields step p x :with lr)))
  (func f6 (dims I O)
    (params (w (tensor f32 (I O) host)) (b (tensor f32 (O) host)) (lr (tensor f32 () host)))
    (returns (L I O))
    (let q (L (w w) (b b)))
; CHECK: error[E0107]: map_fields needs the dimensions of bundle `q`, which are known for a bundle parameter (or a name bound to one)
; CHECK: = help: map over the bundles in a function that takes them as parameters, and call it
    (return (map_fields step q q :with lr)))
  (func f7 (dims I O)
    (params (w (tensor f32 (I O) host)) (lr (tensor f32 () host)))
    (returns (tensor f32 (I O) host))
; CHECK: error[E0107]: `step` is shape-generic: a call gives its first 2 argument(s) as names whose types are written here, of one rank
; CHECK: = help: or apply it to every field of bundles: `(map_fields step BUNDLE ... :with ...)`
    (return (call step (add w w) w lr)))
  (func f7b (dims I O)
    (params (w (tensor f32 (I O) host)) (b (tensor f32 (O) host)) (lr (tensor f32 () host)))
    (returns (tensor f32 (I O) host))
; CHECK: error[E0107]: `step` is shape-generic: a call gives its first 2 argument(s) as names whose types are written here, of one rank
    (return (call step w b lr)))
  (func f8 (dims I O)
    (params (p (L I O)) (lr (tensor f32 () host)))
    (returns (tensor f32 (I O) host))
; CHECK: error[E0107]: map_fields gives bundles: bind it with `let` or return it, not as an operand
    (return (add p.w (map_fields step p p :with lr)))))
; CHECK-NOT: error[E0103]
