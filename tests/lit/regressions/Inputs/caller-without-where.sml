; Input of caller-where-in-call-inference.sml: the caller states no `where`,
; so H over Hk is not exact for all of its values: E0306.
(module m
  (func expand_kv (dims B H Hk G S Dh)
    (where (= H (* Hk G)))
    (params (q (tensor f32 (B H S Dh) host)) (k (tensor f32 (B Hk S Dh) host)))
    (returns (tensor f32 (B H S Dh) host))
    (return (repeat_interleave k :repeats G :axis 1)))
  (func attend (dims B H Hk S Dh)
    (params (q (tensor f32 (B H S Dh) host)) (k (tensor f32 (B Hk S Dh) host)))
    (returns (tensor f32 (B H S Dh) host))
    (return (add q (call expand_kv q k)))))
