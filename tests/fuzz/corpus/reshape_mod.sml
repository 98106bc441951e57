(module m (func f (dims N) (where (divides 4 N)) (params (x (tensor f32 (N) host))) (returns (tensor f32 ((floordiv N 4) 4) host)) (return (reshape x ((floordiv N 4) 4)))))
