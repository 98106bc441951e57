; Broadcasting lives in the indexing maps: a literal-1 operand dimension
; reads index 0, a missing leading dimension is dropped from the map.
; Literals become scalar constants inside the generic.
; RUN: %shapemlc --emit=mlir --entry f --bind N=5 %s | FileCheck %s
; RUN: %shapemlc --emit=mlir --entry f --bind N=5 %s | %mlir-opt > /dev/null
(module ew
  (func f (dims N)
    (params (a (tensor f32 (2 1 N) host)) (b (tensor f32 (3 1) host)) (k (tensor i32 (N) host)))
    (returns (tensor f32 (2 3 N) host) (tensor i32 (N) host))
    (return (add a b) (div k 2))))
; CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, 0, d2)>, affine_map<(d0, d1, d2) -> (d1, 0)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%a, %b : tensor<2x1x5xf32>, tensor<3x1xf32>) outs(%{{.*}} : tensor<2x3x5xf32>)
; CHECK: arith.addf
; Integer division is made total: x / 0 = 0, MIN / -1 = MIN.
; CHECK: arith.constant 2 : i32
; CHECK: arith.divsi
; CHECK: arith.select
