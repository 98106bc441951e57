(module m (func f (dims S D) (params (x (tensor f32 (S D) host))) (returns (tensor f32 (2 D) host)) (return (slice x :axis 0 :start 0 :size 2))))
