(module g
  (func sq (dims N D)
    (params (x (tensor f32 (N D) host)) (w (tensor f32 (D) host)) (ids (tensor i64 (N) host)))
    (returns (tensor f32 (1) host))
    (let y (softmax (add (mul x w) (slice x :axis 0 :start 0 :size 1)) :axis -1))
    (return (reduce_sum (neg (take_along_axis (log y) ids :axis -1)) :axes (0) :keepdims true)))
  (grad dsq sq :wrt (x w)))
