(module affine
  (func affine (dims N D)
    (where (<= D 10))
    (params (x (tensor f32 (N D) host)))
    (returns (tensor f32 (N D) host))
    (return (add (mul x 2.0) 1.0))))
