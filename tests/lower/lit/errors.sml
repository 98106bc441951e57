; Bindings are checked against dims and `where`; device programs are not CPU
; programs (they lower to a GPU dispatch plan). Errors go to stderr.
; RUN: not %shapemlc --emit=mlir --entry f --bind N=6 %s 2>&1 | FileCheck %s --check-prefix=WHERE
; RUN: not %shapemlc --emit=mlir --entry f %s 2>&1 | FileCheck %s --check-prefix=UNBOUND
; RUN: not %shapemlc --emit=mlir --entry g %s 2>&1 | FileCheck %s --check-prefix=DEVICE
(module e
  (func f (dims N) (where (divides 4 N))
    (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)) (return x))
  (func g (params (x (tensor f32 (4) host))) (returns (tensor f32 (4) (cuda 0))) (return (copy_to_device x (cuda 0)))))
; WHERE: the binding N=6 of `f` violates its constraint (divides 4 N)
; UNBOUND: the binding of `f` does not give shape variable `N`
; DEVICE: `g` is a device function: it lowers to a dispatch plan (--emit=gpu-plan), not to CPU code
