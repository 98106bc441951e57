; T-Reshape (spec §4.12): element counts proved by normalization or by Z3
; from the `where` constraints.
; RUN: %shapemlc check %s
; RUN: %shapemlc check --stats %s | FileCheck %s
; CHECK: reshape.sml: ok, 7 function(s)
(module rs
  ; Identical normal forms: no Z3 needed.
  (func flatten (dims B S D)
    (params (x (tensor f32 (B S D) host)))
    (returns (tensor f32 ((* B S) D) host) (tensor f32 ((* B S D)) host))
    (return (reshape x ((* B S) D)) (reshape x ((* D B S)))))
  ; Heads: D = H * Dh.
  (func heads (dims B S D H Dh)
    (where (= D (* H Dh)))
    (params (dims_H_Dh (tensor f32 (H Dh) host)) (x (tensor f32 (B S D) host)))
    (returns (tensor f32 (B H S Dh) host))
    (let h (reshape x (B S H Dh)))
    (return (permute h (0 2 1 3))))
  ; Divisibility: H divides D, and the head size is written with floordiv.
  (func divides (dims S D)
    (where (divides 8 D))
    (params (x (tensor f32 (S D) host)))
    (returns (tensor f32 (S 8 (floordiv D 8)) host))
    (return (reshape x (S 8 (floordiv D 8)))))
  ; The same with mod: D mod 4 = 0.
  (func modulo (dims D)
    (where (= (mod D 4) 0))
    (params (x (tensor f32 (D) host)))
    (returns (tensor f32 ((floordiv D 4) 2 2) host))
    (return (reshape x ((floordiv D 4) 2 2))))
  ; floordiv / mod of a multiple of the divisor normalize away.
  (func normalize (dims N)
    (params (x (tensor f32 ((* 6 N)) host)))
    (returns (tensor f32 ((* 2 N) 3) host))
    (return (reshape x ((floordiv (* 6 N) 3) (+ 3 (mod (* 4 N) 2))))))
  ; Nonlinear: (N + 1)^2 = N^2 + 2N + 1, and a product of where-equalities.
  (func nonlinear (dims N A B C)
    (where (= C (* A B)))
    (params (x (tensor f32 ((+ N 1) (+ N 1)) host)) (y (tensor f32 (A B) host)))
    (returns (tensor f32 ((+ (* N N) (* 2 N) 1)) host) (tensor f32 (C) host))
    (return (reshape x ((+ (* N N) (* 2 N) 1))) (reshape y (C))))
  ; Reshape to and from rank 0 and all-ones shapes.
  (func scalars (params (x (tensor f32 (1 1) host)))
    (returns (tensor f32 () host))
    (return (reshape (reshape x (1)) ()))))
