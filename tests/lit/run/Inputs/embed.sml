; gather as an embedding lookup (run-time index checks, spec §5.3), and a
; helper that only a call with `:dims` can instantiate (spec §4.18-4.19).
(module embed
  (func embed (dims V D B S)
    (params (table (tensor f32 (V D) host)) (ids (tensor i64 (B S) host)))
    (returns (tensor f32 (B S D) host))
    (return (gather table ids)))
  (func heads (dims B S H Dh)
    (params (x (tensor f32 (B S (* H Dh)) host)))
    (returns (tensor f32 (B H S Dh) host))
    (return (permute (reshape x (B S H Dh)) (0 2 1 3))))
  (func split (dims B S)
    (params (x (tensor f32 (B S 8) host)))
    (returns (tensor f32 (B 2 S 4) host))
    (return (call heads :dims ((H 2)) x))))
