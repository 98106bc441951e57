; The same program with a shape bug: w is declared (F D), so x w contracts
; D with F -- true only when D = F, which nothing guarantees.
(module affine
  (func affine
    (dims B D F)
    (params
      (x (tensor f32 (B D) host))
      (w (tensor f32 (F D) host))
      (b (tensor f32 (F) host)))
    (returns (tensor f32 (B F) host))
    (return (add (matmul x w) b))))
