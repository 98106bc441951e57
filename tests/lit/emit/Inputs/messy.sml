; header comment
;; second header, with UTF-8 in a comment: café, ∀ N ≥ 1

(module m ; after the module head
  ; before func
  (func f (dims N) ; trailing on dims
    (params (x (tensor f32 (N) host))) (returns (tensor f32 (N 1) host))
    (let y (reduce_sum x :axes ; between a keyword and its value
       (0) :keepdims true))
    (let
       z
    (slice x :axis 0 :start 0 :size N))
    ; before return
    (return (reshape (add y z) (N 1))) ; after return
    ; end of func
  )
  (func g (params) (returns (tensor f32 () host)) (return (const 1 f32)))
  ; end of module
)
; trailing file comment
