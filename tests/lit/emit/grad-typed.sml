; `(grad NAME OF)` (spec §4.26) in the typed IR: OF's body with the call
; inlined (callee values prefixed with its name, its shape variable N bound
; to the caller's (* B S)), then the reverse sweep seeded with ones, the
; broadcast operand's cotangent summed over the stretched axis and reshaped;
; results: OF's result, then one gradient per floating parameter (not ids).
; `shapemlc fmt` keeps the form.
; RUN: %shapemlc --emit=typed %s | FileCheck %s
; RUN: %shapemlc fmt %s | FileCheck %s --check-prefix=FMT
(module m
  (func scale (dims N D)
    (params (x (tensor f32 (N D) host)) (g (tensor f32 (D) host)))
    (returns (tensor f32 (N D) host))
    (return (mul x g)))
  (func loss (dims B S D)
    (params (x (tensor f32 (B S D) host)) (ids (tensor i64 (B) host)) (g (tensor f32 (D) host)))
    (returns (tensor f32 (1 1) host))
    (let y (call scale (reshape x ((* B S) D)) g))
    (return (reduce_sum y :axes (0 1) :keepdims true)))
  (grad dloss loss))
; CHECK-LABEL: func dloss[B, S, D]
; CHECK-NEXT:  params x: (tensor f32 (B S D) host) ids: (tensor i64 (B) host) g: (tensor f32 (D) host)
; CHECK-NEXT:  %0 = reshape(x) {:shape ((* B S) D)} : (tensor f32 ((* B S) D) host)
; CHECK-NEXT:  scale.%0 = mul(%0, g) : (tensor f32 ((* B S) D) host)
; CHECK-NEXT:  %2 = reduce_sum(scale.%0) {:axes (0 1) :keepdims true} : (tensor f32 (1 1) host)
; CHECK-NEXT:  %d0 = fill() {:value 1} : (tensor f32 (1 1) host)
; CHECK-NEXT:  %d1 = broadcast_to(%d0) {:shape ((* B S) D)} : (tensor f32 ((* B S) D) host)
; CHECK-DAG:   [[GX:%d[0-9]+]] = mul(%d1, g) : (tensor f32 ((* B S) D) host)
; CHECK-DAG:   [[X3:%d[0-9]+]] = reshape([[GX]]) {:shape (B S D)} : (tensor f32 (B S D) host)
; CHECK-DAG:   [[GG:%d[0-9]+]] = mul(%d1, %0) : (tensor f32 ((* B S) D) host)
; CHECK-DAG:   [[GS:%d[0-9]+]] = reduce_sum([[GG]]) {:axes (0) :keepdims true} : (tensor f32 (1 D) host)
; CHECK-DAG:   [[G1:%d[0-9]+]] = reshape([[GS]]) {:shape (D)} : (tensor f32 (D) host)
; CHECK:       return %2 [[X3]] [[G1]]
; FMT: (grad dloss loss))
