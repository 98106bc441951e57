; Generic bundles (spec §4.32), misused: E0107 for an application missing
; its dtype and device arguments (the message counts each kind), a dtype
; variable given a set in the bundle (sets belong to the using function), a
; parameter clause after the fields, and a name declared twice.
; RUN: %expect-exit 1 %shapemlc check %s 2>&1 | FileCheck %s -DFILE=%s
(module m
  (bundle L (dtypes Ty) (devices Dv) (dims I O) (w (tensor Ty (I O) Dv)))
  (func f (dims I O)
; CHECK: error[E0107]: bundle `L` takes 1 dtype(s), 1 device(s), 2 dimension(s), in that order (Ty Dv I O), given 2 argument(s)
; CHECK-NEXT: --> [[FILE]]:[[@LINE+1]]:16
    (params (p (L I O)))
    (returns (tensor f32 (I O) host))
    (return p.w))
; CHECK: error[E0107]: a dtype variable of bundle `S` must be a name
; CHECK: = help: the dtypes a variable may take are the using function's `(dtypes (T ...))`, not the bundle's
  (bundle S (dtypes (Ty f32 bf16)) (w (tensor f32 (2) host)))
; CHECK: error[E0107]: bundle `A`: its `(dtypes ..)`, `(devices ..)` and `(dims ..)` come first, in that order, once each
  (bundle A (dims I) (dtypes Ty) (w (tensor f32 (I) host)))
; CHECK: error[E0107]: bundle `R` declares `I` twice
  (bundle R (dtypes I) (dims I) (w (tensor f32 (I) host))))
