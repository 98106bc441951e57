; An entry with a shape variable given at the call (spec §4.19): the number
; of heads H is in no input shape, so every call supplies it; Dh is then
; solved from (* H Dh). Per head, the sum over its Dh features.
(module given_heads
  (func head_sums (dims B S H Dh) (given H)
    (where (<= H 8))
    (params (x (tensor f32 (B S (* H Dh)) host)))
    (returns (tensor f32 (B H S) host))
    (let y (reshape x (B S H Dh)))
    (let z (reduce_sum y :axes (3)))
    (return (permute z (0 2 1)))))
