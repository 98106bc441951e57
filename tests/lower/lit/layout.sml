; Layout operations: transpose/permute as linalg.transpose, reshape through a
; flat 1-D shape, concat as insert_slice into an empty tensor, slice as
; extract_slice, keepdims as expand_shape after the reduction (an f32 mean
; accumulated in f64).
; RUN: %shapemlc --emit=mlir --entry f --bind N=3,D=8 %s | FileCheck %s
; RUN: %shapemlc --emit=mlir --entry f --bind N=3,D=8 %s | %mlir-opt > /dev/null
(module l
  (func f (dims N D)
    (where (>= D 4) (divides 2 D))
    (params (x (tensor f32 (N D) host)))
    (returns (tensor f32 (D N) host) (tensor f32 (2 (* N (floordiv D 2))) host) (tensor f32 (N (* 2 D)) host) (tensor f32 (N 2) host) (tensor f32 (N 1) host))
    (return (transpose x) (reshape x (2 (* N (floordiv D 2)))) (concat x x :axis 1) (slice x :axis 1 :start 2 :size 2)
            (reduce_mean x :axes (1) :keepdims true))))
; CHECK: linalg.transpose ins(%x : tensor<3x8xf32>) outs(%{{.*}} : tensor<8x3xf32>) permutation = [1, 0]
; CHECK: tensor.collapse_shape %x {{\[\[}}0, 1]] : tensor<3x8xf32> into tensor<24xf32>
; CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [2, 12] : tensor<24xf32> into tensor<2x12xf32>
; CHECK: tensor.insert_slice %x into %{{.*}}[0, 0] [3, 8] [1, 1] : tensor<3x8xf32> into tensor<3x16xf32>
; CHECK: tensor.insert_slice %x into %{{.*}}[0, 8] [3, 8] [1, 1] : tensor<3x8xf32> into tensor<3x16xf32>
; CHECK: tensor.extract_slice %x[0, 2] [3, 2] [1, 1] : tensor<3x8xf32> to tensor<3x2xf32>
; The f32 mean accumulates in f64 and rounds once (cpu-threads.md).
; CHECK: iterator_types = ["parallel", "reduction"]{{.*}} outs(%{{.*}} : tensor<3xf64>)
; CHECK: arith.divf %{{.*}}, %{{.*}} : f64
; CHECK: arith.truncf %{{.*}} : f64 to f32
; CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [3, 1] : tensor<3xf32> into tensor<3x1xf32>
