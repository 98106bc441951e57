(module m
  (func f (dims c d)
    (where (>= (- c (* 2 d)) -4) (>= d 3))
    (params (x (tensor f32 (c) host)) (y (tensor f32 (d) host)))
    (returns (tensor f32 ((- (* 2 d) 4)) host))
    (return (slice x :axis 0 :start 0 :size (- (* 2 d) 4)))))
