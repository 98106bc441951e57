; T-Call (spec §4.18): shape variables inferred from lone-variable parameter
; dimensions, obligations for the other dimensions and for the callee's
; `where`, several results destructured, calls nested in expressions.
; RUN: %shapemlc check %s
; RUN: %shapemlc --emit=typed %s | FileCheck %s
(module calls
  (func split_heads (dims S D H Dh)
    (where (= D (* H Dh)))
    (params (x (tensor f32 (S D) host)) (heads (tensor f32 (H) host)) (dh (tensor f32 (Dh) host)))
    (returns (tensor f32 (H S Dh) host) (tensor f32 (S) host))
    (let h (permute (reshape x (S H Dh)) (1 0 2)))
    (return h (reduce_sum x :axes (1))))
  (func twice (dims N)
    (params (x (tensor f32 (N) host)) (y (tensor f32 ((* 2 N)) host)))
    (returns (tensor f32 ((* 2 N)) host))
    (return (add (concat x x :axis 0) y)))
  (func noargs (params) (returns (tensor f32 () host)) (return (const 1 f32)))
  (func caller (dims S E Nh Hd K)
    (where (= K (* 2 S)) (= E (* Hd Nh)))
    (params (x (tensor f32 (S E) host)) (hs (tensor f32 (Nh) host)) (hd (tensor f32 (Hd) host)) (v (tensor f32 (S) host)) (w (tensor f32 (K) host)))
    (returns (tensor f32 (Nh S Hd) host) (tensor f32 (S) host) (tensor f32 (K) host))
    ; S := S, D := E, H := Nh, Dh := Hd; the callee's `(= D (* H Dh))`
    ; becomes `(= E (* Nh Hd))`, proved from the caller's own `where`.
    ; CHECK: heads, sums = call(x, hs, hd) {:callee split_heads} : (tensor f32 (Nh S Hd) host) (tensor f32 (S) host)
    (let (heads sums) (call split_heads x hs hd))
    (let h2 (tensor f32 (Nh S Hd) host) heads)
    ; N := S from the first argument; the second must then be (* 2 S) = K.
    (let t (call twice v w))
    ; A single-result call nested in an expression.
    (let u (mul (call noargs) (call twice v w)))
    (return h2 (add sums v) (add t u))))
