; T-CopyToDevice, T-CopyToHost (spec §4.17), and operations on a device.
; RUN: %shapemlc check %s
; RUN: %shapemlc --emit=typed %s | FileCheck %s
(module dev
  (func f (dims N M)
    (params (x (tensor f32 (N M) host)) (w (tensor f32 (M M) (cuda 0))))
    (returns (tensor f32 (N M) host) (tensor f32 (N M) (cuda 1)))
    ; CHECK: xd = copy_to_device(x) {:device (cuda 0)} : (tensor f32 (N M) (cuda 0))
    (let xd (copy_to_device x (cuda 0)))
    (let y (relu (matmul xd w)))
    ; CHECK: back = copy_to_host(y) : (tensor f32 (N M) host)
    (let back (copy_to_host y))
    ; Device to device.
    (let other (copy_to_device y (cuda 1)))
    (return (add back x) other)))
