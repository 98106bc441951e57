; Constants written without a device, `(const V DTYPE)` and
; `(dim_value d DTYPE)`, take the device their context expects (spec §4.9,
; §4.23): the other operand's of an elementwise operation, through unary
; operations such as rsqrt, or the expected type's in checking mode; the
; host otherwise. So a device function needs no `(cuda 0)` on its scalars.
; RUN: %shapemlc check %s
; RUN: %shapemlc --emit=typed %s | FileCheck %s
(module consts
  (func scaled (dims B S Dh)
    (params (q (tensor f32 (B S Dh) (cuda 0))))
    (returns (tensor f32 (B S Dh) (cuda 0)) (tensor f32 () (cuda 0)))
    ; CHECK: dim_value() {:dim Dh} : (tensor f32 () (cuda 0))
    ; CHECK-NEXT: rsqrt(%{{[0-9]+}}) : (tensor f32 () (cuda 0))
    (let s (mul q (rsqrt (dim_value Dh f32))))
    ; CHECK: const() {:value 10000} : (tensor f32 () (cuda 0))
    (let t (div s (const 10000.0 f32)))
    ; Checking mode: the expected result type's device.
    ; CHECK: const() {:value 2} : (tensor f32 () (cuda 0))
    (return t (const 2.0 f32)))
  ; What a copy moves stays where it was written: the host.
  (func moved (dims N)
    (params (q (tensor f32 (N) (cuda 0))))
    (returns (tensor f32 (N) (cuda 0)))
    ; CHECK-LABEL: func moved
    ; CHECK: const() {:value 4} : (tensor f32 () host)
    ; CHECK-NEXT: copy_to_device(%0) {:device (cuda 0)} : (tensor f32 () (cuda 0))
    (return (mul q (copy_to_device (const 4.0 f32) (cuda 0)))))
  (func on_host (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
    ; With no context (a let without a type), the host.
    ; CHECK: dim_value() {:dim N} : (tensor f32 () host)
    (let n (dim_value N f32))
    ; CHECK: const() {:value 3} : (tensor f32 () host)
    (return (mul (mul x (const 3.0 f32)) n))))
