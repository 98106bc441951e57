; T-Reduce (spec §4.16): the three reductions, default axes, explicit and
; negative axes, keepdims.
; RUN: %shapemlc check %s
; RUN: %shapemlc --emit=typed %s | FileCheck %s
(module red
  (func f (dims A B C)
    (params (x (tensor f32 (A B C) host)) (i (tensor i64 (A B) host)))
    (returns (tensor f32 () host) (tensor f32 (A 1 1) host) (tensor f32 (B) host) (tensor i64 (B) host) (tensor f32 (A B 1) host))
    ; CHECK: all = reduce_sum(x) {:axes (0 1 2)} : (tensor f32 () host)
    (let all (reduce_sum x))
    ; CHECK: kd = reduce_max(x) {:axes (1 2) :keepdims true} : (tensor f32 (A 1 1) host)
    (let kd (reduce_max x :axes (-1 1) :keepdims true))
    ; CHECK: mid = reduce_mean(x) {:axes (0 2)} : (tensor f32 (B) host)
    (let mid (reduce_mean x :axes (0 -1) :keepdims false))
    (let ints (reduce_sum i :axes (0)))
    (let last (reduce_mean x :axes (-1) :keepdims true))
    ; No axes: nothing is reduced.
    ; CHECK: none = reduce_sum(x) {:axes ()} : (tensor f32 (A B C) host)
    (let none (reduce_sum x :axes ()))
    (return all kd mid (reduce_max ints :axes ()) (add last (reduce_sum none :axes (2) :keepdims true)))))
