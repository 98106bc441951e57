; `(divides (- K 2) N)` holds only for K >= 3 (the divisor must be >= 1).
(module m
  (func h (dims K N)
    (where (divides (- K 2) N))
    (params (x (tensor f32 (K N) host)))
    (returns (tensor f32 ((- K 2)) host))
    (return (fill 1.0))))
