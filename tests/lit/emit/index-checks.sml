; Index checks in the CPU code (docs/design/index-checks.md): an entry with
; gather/take_along_axis (calls inlined) takes the error record after its
; outputs, clamps every index before it reads, and writes the first bad one;
; an entry without index operations has no record and no check (zero cost).
; RUN: %shapemlc --emit=mlir %s --entry lookup --bind V=5,D=3,N=4 | FileCheck %s
; RUN: %shapemlc --emit=mlir %s --entry outer --bind V=5,D=3,N=4 | FileCheck %s --check-prefix=OUTER
; RUN: %shapemlc --emit=mlir %s --entry plain --bind N=4 | FileCheck %s --check-prefix=PLAIN
(module ix
  (func lookup (dims V D N)
    (params (t (tensor f32 (V D) host)) (i (tensor i32 (N) host)))
    (returns (tensor f32 (N D) host))
    (return (gather t i)))
  (func outer (dims V D N)
    (params (t (tensor f32 (V D) host)) (i (tensor i32 (N) host)))
    (returns (tensor f32 (N D) host))
    (return (add (call lookup t i) (gather t i))))
  (func plain (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
    (return (neg x))))
; CHECK: %out0: memref<4x3xf32> {llvm.noalias},
; CHECK-NEXT: %error_record: memref<4xi64> {llvm.noalias}) {
; CHECK: arith.maxsi
; CHECK: arith.minsi %{{.*}}, %{{.*}} : i64
; CHECK: tensor.extract %t[
; CHECK: arith.cmpi uge, %{{.*}}, %{{.*}} : i64
; CHECK: tensor.from_elements {{.*}} : tensor<4xi64>
; CHECK: bufferization.materialize_in_destination %error_rec in restrict writable %error_record
; Two sites (the inlined call's, then this function's): two checks.
; OUTER: %error_record: memref<4xi64>
; OUTER-COUNT-2: arith.cmpi uge
; PLAIN-NOT: error_record
; PLAIN-NOT: arith.cmpi uge
