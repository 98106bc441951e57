; given-heads.sml on (cuda 0): a device entry with a shape variable given at
; the call (spec §4.19) lowers to a dispatch plan at a binding that names it.
(module given_heads_gpu
  (func head_sums (dims B S H Dh) (given H)
    (where (<= H 8))
    (params (x (tensor f32 (B S (* H Dh)) (cuda 0))))
    (returns (tensor f32 (B H S) (cuda 0)))
    (let y (reshape x (B S H Dh)))
    (let z (reduce_sum y :axes (3)))
    (return (permute z (0 2 1)))))
