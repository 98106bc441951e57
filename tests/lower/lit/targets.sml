; The shipping targets choose the matmul micro-tile for their vector width
; (issue 23 item 5): the x86-64 baseline 128-bit (SSE2), x86-64-v3 256-bit
; (AVX2 + FMA), x86-64-v4 512-bit (AVX-512), and the manifest names them.
; RUN: %shapemlc --emit=mlir --bind M=512,K=512,N=512 --target x86-64 %s | FileCheck %s --check-prefix=BASE
; RUN: %shapemlc --emit=mlir --bind M=512,K=512,N=512 --target x86-64-v3 %s | FileCheck %s --check-prefix=V3
; RUN: %shapemlc --emit=mlir --bind M=512,K=512,N=512 --target x86-64-v4 %s | FileCheck %s --check-prefix=V4
; RUN: %shapemlc --emit=llvm --bind M=8,K=8,N=8 --target x86-64-v3 %s | FileCheck %s --check-prefix=V3IR
; RUN: not %shapemlc --emit=mlir --bind M=8,K=8,N=8 --target x86-64-v5 %s 2>&1 | FileCheck %s --check-prefix=BAD
; BASE: matmul strategy: tile [60, 128, 64] then [6, 8, 1]
; V3: matmul strategy: tile [60, 128, 64] then [6, 16, 1]
; V4: matmul strategy: tile [64, 128, 64] then [8, 32, 1]
; V3IR: "target-cpu"="x86-64-v3"
; BAD: x86-64-v5
(module m
  (func mm (dims M K N)
    (params (a (tensor f32 (M K) host)) (b (tensor f32 (K N) host)))
    (returns (tensor f32 (M N) host))
    (return (matmul a b))))
