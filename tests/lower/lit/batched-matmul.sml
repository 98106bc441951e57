; A batched matmul's micro-kernel is vector FMAs, as a 2-D matmul's: the
; batch tile of 1 is cast away only after the contraction absorbed its
; operands' broadcasts (docs/design/cpu-codegen.md, "Batched matmuls"); cast
; away first, the product and the sum stayed apart in scalar code.
; RUN: %shapemlc --emit=llvm --bind B=16,M=128,K=64,N=128 --target x86-64-v3 %s | FileCheck %s
; CHECK: define internal void @__shapeml_par{{[0-9]+}}_shapeml_bmm_body_task(
; CHECK: call <16 x float> @llvm.fmuladd.v16f32(
; CHECK: call <16 x float> @llvm.fmuladd.v16f32(
; CHECK: call <16 x float> @llvm.fmuladd.v16f32(
; CHECK: call <16 x float> @llvm.fmuladd.v16f32(
(module bmm
  (func bmm (dims B M K N)
    (params (a (tensor f32 (B M K) host)) (b (tensor f32 (B K N) host)))
    (returns (tensor f32 (B M N) host))
    (return (matmul a b))))
