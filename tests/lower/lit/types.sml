; bool buffers are bytes (i8 at the boundary, i1 inside); bf16 is stored as
; its i16 bit pattern and computed in f32 with integer rounding code.
; RUN: %shapemlc --emit=mlir --entry f %s | FileCheck %s
; RUN: %shapemlc --emit=mlir --entry f %s | %mlir-opt > /dev/null
(module t
  (func f
    (params (c (tensor bool (4) host)) (x (tensor bf16 (4) host)))
    (returns (tensor bf16 (4) host) (tensor bool (4) host))
    (return (select c (exp x) x) (gt x 0))))
; CHECK: func.func @shapeml_f(%c_buf: memref<4xi8> {llvm.noalias},
; CHECK-NEXT: %x_buf: memref<4xi16> {llvm.noalias}
; CHECK-NEXT: %out0: memref<4xi16> {llvm.noalias},
; CHECK-NEXT: %out1: memref<4xi8> {llvm.noalias})
; CHECK: arith.cmpi ne, %{{.*}}, %{{.*}} : i8
; CHECK: math.exp %{{.*}} : f32
; CHECK: arith.cmpf uno
; CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : i16
; CHECK: arith.extui %{{.*}} : i1 to i8
; CHECK-NOT: bf16
