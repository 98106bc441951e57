; The MLP of the language spec at B=2 S=4 D=64 F=32: inputs through
; to_tensor, shared-weight matmuls collapsed to 2-D, the gelu in erf form, the
; result written in place into the output buffer; each matmul names its
; strategy. The text parses with a stock mlir-opt.
; RUN: %shapemlc --emit=mlir --entry mlp --bind B=2,S=4,D=64,F=32 %s | FileCheck %s
; RUN: %shapemlc --emit=mlir --entry mlp --bind B=2,S=4,D=64,F=32 %s | %mlir-opt > /dev/null
; RUN: %shapemlc --emit=llvm --entry mlp --bind B=2,S=4,D=64,F=32 %s | FileCheck %s --check-prefix=LLVM
(module mlp
  (func mlp (dims B S D F)
    (where (= (mod D 64) 0))
    (params (x (tensor f32 (B S D) host))
            (w1 (tensor f32 (D F) host))
            (w2 (tensor f32 (F D) host)))
    (returns (tensor f32 (B S D) host))
    (let h (gelu (matmul x w1)))
    (let y (matmul h w2))
    (return y)))
; CHECK: // shapeml: entry `mlp` of module `mlp` specialized to B=2 D=64 F=32 S=4
; CHECK: func.func @shapeml_mlp(%x_buf: memref<2x4x64xf32> {llvm.noalias},
; CHECK: %out0: memref<2x4x64xf32> {llvm.noalias})
; CHECK: %x = bufferization.to_tensor %x_buf restrict : memref<2x4x64xf32>
; The returned product is written through a collapsed view of its buffer.
; CHECK: %out0_flat = memref.collapse_shape %out0 {{\[\[}}0, 1], [2]] : memref<2x4x64xf32> into memref<8x64xf32>
; CHECK: tensor.collapse_shape %x {{\[\[}}0, 1], [2]] : tensor<2x4x64xf32> into tensor<8x64xf32>
; CHECK: // matmul strategy: tile [8, 32, 64] then [{{[0-9]+}}, {{[0-9]+}}, 1] + vectorize (8x32x64)
; CHECK: linalg.matmul {shapeml.strategy = "tile {{.*}}", shapeml.tile_outer = array<i64: 8, 32, 64>, shapeml.tile_inner = array<i64: {{.*}}>}
; gelu runs in place in the first product's buffer.
; CHECK: %h = linalg.generic {{.*}} ins(%t0 : tensor<2x4x32xf32>) outs(%t0 : tensor<2x4x32xf32>)
; CHECK: math.erf
; CHECK: linalg.yield
; CHECK: bufferization.materialize_in_destination %y_mm in restrict writable %out0_flat : (tensor<8x64xf32>, memref<8x64xf32>) -> ()
; LLVM: define void @shapeml_mlp(ptr nocapture readonly %0)
; LLVM-NOT: declare {{.*}}@__truncsfbf2
