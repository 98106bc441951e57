; The operations of spec §4.27-4.30 and the elementwise `erf`, `floordiv`,
; `mod` (§4.4, §4.6): their result types, and the primitive bindings the
; derived ones (squeeze, unsqueeze, pad, argmax, argmin) are written as.
; RUN: %shapemlc check %s
; RUN: %shapemlc --emit=typed %s | FileCheck %s
(module ops
  (func f (dims B S K)
    (params (x (tensor f32 (B 1 S) host)) (n (tensor i64 (B S) host)) (k (tensor f32 (K) host)))
    (returns (tensor f32 (B 1 S) host) (tensor i64 (B S) host) (tensor f32 (B S) host) (tensor f32 (1 B 1 S) host)
             (tensor f32 (B 1 (+ S 3)) host) (tensor f32 (B 1 (+ S (- K 1))) host) (tensor i64 (B 1) host) (tensor i64 (B) host)
             (tensor f32 (B 1 S) host))
    ; CHECK: e = erf(x) : (tensor f32 (B 1 S) host)
    (let e (erf x))
    ; CHECK: q = floordiv(n, %{{[0-9]+}}) : (tensor i64 (B S) host)
    (let q (floordiv n 3))
    ; CHECK: r = mod(q, n) : (tensor i64 (B S) host)
    (let r (mod q n))
    ; CHECK: s = reshape(x) {:shape (B S)} : (tensor f32 (B S) host)
    (let s (squeeze x :axis -2))
    ; CHECK: u = reshape(x) {:shape (1 B 1 S)} : (tensor f32 (1 B 1 S) host)
    (let u (unsqueeze x :axis 0))
    ; literal widths: one concat of the pads and x
    ; CHECK: [[LO:%[0-9]+]] = fill() {:value 0} : (tensor f32 (B 1 1) host)
    ; CHECK-NEXT: [[HI:%[0-9]+]] = fill() {:value 0} : (tensor f32 (B 1 2) host)
    ; CHECK-NEXT: p = concat([[LO]], x, [[HI]]) {:axis 2} : (tensor f32 (B 1 (+ S 3)) host)
    (let p (pad x :axis -1 :low 1 :high 2))
    ; a width that may be 0: two pads of width K and the window
    ; CHECK: [[W:%[0-9]+]] = fill() {:value -1.5} : (tensor f32 (B 1 K) host)
    ; CHECK-NEXT: [[BOTH:%[0-9]+]] = concat([[W]], x, [[W]]) {:axis 2} : (tensor f32 (B 1 (+ (* 2 K) S)) host)
    ; CHECK-NEXT: c = slice([[BOTH]]) {:axis 2 :start 1 :size (- (+ K S) 1)} : (tensor f32 (B 1 (- (+ K S) 1)) host)
    (let c (pad x :axis 2 :low (- K 1) :high 0 :value -1.5))
    ; the first position that attains the maximum (or is NaN)
    ; CHECK: [[M:%[0-9]+]] = reduce_max(x) {:axes (2) :keepdims true} : (tensor f32 (B 1 1) host)
    ; CHECK-NEXT: [[HIT:%[0-9]+]] = eq(x, [[M]]) : (tensor bool (B 1 S) host)
    ; CHECK-NEXT: [[NAN:%[0-9]+]] = ne(x, x) : (tensor bool (B 1 S) host)
    ; CHECK-NEXT: [[ANY:%[0-9]+]] = or([[HIT]], [[NAN]]) : (tensor bool (B 1 S) host)
    ; CHECK-NEXT: [[POS:%[0-9]+]] = iota() {:axis 2} : (tensor i64 (B 1 S) host)
    ; CHECK-NEXT: [[END:%[0-9]+]] = dim_value() {:dim S} : (tensor i64 () host)
    ; CHECK-NEXT: [[CAND:%[0-9]+]] = select([[ANY]], [[POS]], [[END]]) : (tensor i64 (B 1 S) host)
    ; CHECK-NEXT: i = reduce_min([[CAND]]) {:axes (2) :keepdims true} : (tensor i64 (B 1 1) host)
    (let i (argmax x :axis 2 :keepdims true))
    ; integers have no NaN: no `ne` test
    ; CHECK: reduce_min(n) {:axes (1) :keepdims true}
    ; CHECK-NOT: ne(
    ; CHECK: j = reduce_min(%{{[0-9]+}}) {:axes (1)} : (tensor i64 (B) host)
    (let j (argmin n :axis 1))
    ; CHECK: z = cumsum(x) {:axis 2 :reverse true} : (tensor f32 (B 1 S) host)
    (let z (cumsum x :axis -1 :reverse true))
    (return e r s u p c (reshape i (B 1)) j z)))
