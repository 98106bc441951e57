; The CPU lowering of spec §4.20-4.23 (src/lower/cpu/emit_mlir.cpp):
; log_softmax is reduce_max, exp(x - max), an f32 row sum accumulated in f64,
; one f64 log per row, then x - max - log; repeat_interleave is an
; expand_shape to [.., d, 1, ..], a broadcasting copy to [.., d, r, ..] and
; a collapse; f32 sin is libm's f64 sin rounded once; not is xor with true;
; dim_value is a constant of the binding.
; RUN: %shapemlc --emit=mlir --entry f --bind N=3,M=5 %s | FileCheck %s
; RUN: %shapemlc --emit=mlir --entry f --bind N=3,M=5 %s | %mlir-opt > /dev/null
(module sm
  (func f (dims N M)
    (params (x (tensor f32 (N M) host)) (b (tensor bool (N) host)))
    (returns (tensor f32 (N M) host) (tensor f32 (N (* 2 M)) host) (tensor bool (N) host) (tensor f32 () host))
    (return (log_softmax x) (repeat_interleave (sin x) :repeats 2 :axis 1) (not b) (dim_value (+ M 1) f32))))
; CHECK: %t0_max_red = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%x : tensor<3x5xf32>)
; CHECK: arith.maximumf
; CHECK: %t0_exp = linalg.generic
; CHECK: arith.subf
; CHECK: math.exp
; CHECK: %t0_sum_red = linalg.generic {{.*}} outs(%t0_sum_init : tensor<3xf64>)
; CHECK: arith.extf %{{.*}} : f32 to f64
; CHECK: arith.addf %{{.*}} : f64
; CHECK: %t0_logsum = linalg.generic {{.*}} ins(%t0_sum : tensor<3x1xf64>) outs(%{{.*}} : tensor<3x1xf32>)
; CHECK: math.log %{{.*}} : f64
; CHECK: %t0 = linalg.generic
; CHECK: math.sin %{{.*}} : f64
; CHECK: arith.truncf %{{.*}} : f64 to f32
; CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [3, 5, 1] : tensor<3x5xf32> into tensor<3x5x1xf32>
; CHECK: affine_map<(d0, d1, d2) -> (d0, d1, 0)>
; CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2]] : tensor<3x5x2xf32> into tensor<3x10xf32>
; CHECK: arith.xori %{{.*}}, %{{.*}} : i1
; CHECK: arith.constant 6.0 : f32
