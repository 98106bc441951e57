; top_k (spec §4.31): its form (E0003, reported by the parser first), two
; results bound by one let (E0205 otherwise), k at most the axis' extent for
; every shape (E0304 with a counterexample), a numeric operand (E0202).
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
(module m
; CHECK: error[E0003]: `top_k` needs `:k` (an integer literal) and `:axis`
  (func g (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)) (let (v i) (top_k x :axis 0)) (return x))
; CHECK: error[E0003]: `:k` takes an integer literal >= 1
  (func h (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)) (let (v i) (top_k x :k 0 :axis 0)) (return x))
  (func f (dims A B)
    (params (x (tensor f32 (A B) host)) (c (tensor bool (A B) host)))
    (returns (tensor f32 (A B) host))
; CHECK: error[E0304]: `top_k` :k 2 may exceed the extent B of axis 1
; CHECK-NEXT: --> [[FILE]]:[[@LINE+3]]:16
; CHECK: = counterexample: A={{[0-9]+}}, B=1
; CHECK: = note: k values are taken from the axis, which must have at least k for every shape
    (let (v i) (top_k x :k 2 :axis 1))
; CHECK: error[E0205]: `top_k` gives two results (the values and their indices); bind them with `(let (VALUES INDICES) (top_k ...))`
    (let w (top_k x :k 1 :axis 0))
; CHECK: error[E0205]: `top_k` gives 2 results, the values and their indices; 3 names are bound
    (let (p q r) (top_k x :k 1 :axis 0))
; CHECK: error[E0202]: `top_k` needs a numeric operand, not bool
    (let (s t) (top_k c :k 1 :axis 0))
    (return x))
  (func ok (dims N) (where (>= N 2)) (params (x (tensor f32 (N) host))) (returns (tensor f32 (2) host) (tensor i64 (2) host))
    (let (v i) (top_k x :k 2 :axis 0))
    (return v i)))
; CHECK-NOT: error[
