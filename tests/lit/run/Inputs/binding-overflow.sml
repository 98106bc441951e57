; Entries whose dimension arithmetic overflows 64 bits at some bindings
; (N^5 at N >= 6209): tests/lit/run/binding-overflow.test.
(module m
  (func f (dims N) (where (>= N 2))
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (1) host))
    (return (slice x :axis 0 :start (mod (* N N N N N) 2) :size 1)))
  (func g (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 () host))
    (return (dim_value (* N N N N N) f32 host))))
