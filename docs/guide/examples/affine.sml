; The guide's first program: y = x w + b, for any batch B and sizes D, F.
(module affine
  (func affine
    (dims B D F)
    (params
      (x (tensor f32 (B D) host))
      (w (tensor f32 (D F) host))
      (b (tensor f32 (F) host)))
    (returns (tensor f32 (B F) host))
    (return (add (matmul x w) b))))
