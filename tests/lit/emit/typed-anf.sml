; --emit=typed prints the typed IR in A-normal form (spec §7): every
; intermediate value is named %N in order, `let` names are kept, attributes in
; braces, the type after the colon.
; RUN: %shapemlc --emit=typed %s | FileCheck %s --match-full-lines
; CHECK:      module mlp
; CHECK-EMPTY:
; CHECK-NEXT: func mlp[B, S, D, F] where (= (mod D 64) 0)
; CHECK-NEXT:   params x: (tensor f32 (B S D) host) w1: (tensor f32 (D F) host) w2: (tensor f32 (F D) host)
; CHECK-NEXT:   %0 = matmul(x, w1) : (tensor f32 (B S F) host)
; CHECK-NEXT:   h = gelu(%0) : (tensor f32 (B S F) host)
; CHECK-NEXT:   %1 = const() {:value 0.5} : (tensor f32 () host)
; CHECK-NEXT:   %2 = mul(h, %1) : (tensor f32 (B S F) host)
; CHECK-NEXT:   y = matmul(%2, w2) : (tensor f32 (B S D) host)
; CHECK-NEXT:   %3 = reduce_sum(y) {:axes (2) :keepdims true} : (tensor f32 (B S 1) host)
; CHECK-NEXT:   %4 = sub(y, %3) : (tensor f32 (B S D) host)
; CHECK-NEXT:   return %4
; CHECK-EMPTY:
; CHECK-NEXT: func split[N]
; CHECK-NEXT:   params v: (tensor f32 (N) host)
; CHECK-NEXT:   %0 = cast(v) {:to i32} : (tensor i32 (N) host)
; CHECK-NEXT:   return v %0
; CHECK-EMPTY:
; CHECK-NEXT: func pair[N]
; CHECK-NEXT:   params v: (tensor f32 (N) host)
; Temporaries are numbered per function; the numbers taken by call results
; that were then named by the `let` are skipped.
; CHECK-NEXT:   a, b = call(v) {:callee split} : (tensor f32 (N) host) (tensor i32 (N) host)
; CHECK-NEXT:   %[[C:[0-9]+]] = cast(b) {:to f32} : (tensor f32 (N) host)
; CHECK-NEXT:   %[[S:[0-9]+]] = add(a, %[[C]]) : (tensor f32 (N) host)
; CHECK-NEXT:   return %[[S]]
; CHECK-NOT: {{.}}
(module mlp
  (func mlp (dims B S D F)
    (where (= (mod D 64) 0))
    (params (x (tensor f32 (B S D) host))
            (w1 (tensor f32 (D F) host))
            (w2 (tensor f32 (F D) host)))
    (returns (tensor f32 (B S D) host))
    (let h (gelu (matmul x w1)))
    (let y (matmul (mul h 0.5) w2))
    (return (sub y (reduce_sum y :axes (-1) :keepdims true))))
  (func split (dims N)
    (params (v (tensor f32 (N) host)))
    (returns (tensor f32 (N) host) (tensor i32 (N) host))
    (return v (cast v i32)))
  (func pair (dims N)
    (params (v (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
    (let (a b) (call split v))
    (return (add a (cast b f32)))))
