; T-RepeatInterleave (spec §4.22): dimension `axis` becomes d * repeats; the
; repeats are a literal or a polynomial in the shape variables, and a caller
; that needs the product, e.g. (* H G) heads for grouped-query attention,
; proves it by normalization.
; RUN: %shapemlc check %s
; RUN: %shapemlc --emit=typed %s | FileCheck %s
(module ri
  ; K/V heads (B Hk S Dh) repeated G times to the H = Hk * G query heads.
  (func expand_kv (dims B Hk G S Dh)
    (params (k (tensor f32 (B Hk S Dh) host)) (g (tensor f32 (G) host)))
    (returns (tensor f32 (B (* Hk G) S Dh) host))
    ; CHECK: %0 = repeat_interleave(k) {:axis 1 :repeats G} : (tensor f32 (B (* G Hk) S Dh) host)
    (return (repeat_interleave k :repeats G :axis 1)))
  (func caller (dims B H G S Dh)
    (params (q (tensor f32 (B (* H G) S Dh) host)) (k (tensor f32 (B H S Dh) host)) (g (tensor f32 (G) host)))
    (returns (tensor f32 (B (* H G) S S) host))
    (let kk (call expand_kv k g))
    (return (matmul q (transpose kk))))
  (func literal (dims N)
    (params (x (tensor i64 (N 3) host)) (b (tensor bool (N) host)))
    (returns (tensor i64 (N 6) host) (tensor bool ((* 2 N)) host) (tensor i64 ((* N N) 3) host))
    ; CHECK: %{{[0-9]+}} = repeat_interleave(x) {:axis 1 :repeats 2} : (tensor i64 (N 6) host)
    (return (repeat_interleave x :repeats 2 :axis -1) (repeat_interleave b :repeats 2 :axis 0)
            (repeat_interleave x :repeats N :axis 0))))
