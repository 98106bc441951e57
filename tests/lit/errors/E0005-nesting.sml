; E0005: lists nested more than 256 deep. The reader stops there, so nothing
; else is reported. 256 levels are fine as far as the reader is concerned (the
; second file fails later, in the parser, because it is not a module).
; RUN: %python -c "print('(' * 257 + ')' * 257)" > %t.257.sml
; RUN: %expect-exit 1 %shapemlc check %t.257.sml 2>&1 | FileCheck %s -DFILE=%t.257.sml
; RUN: %expect-exit 1 %shapemlc check --format=json %t.257.sml 2>&1 | %diags | FileCheck %s --check-prefix=JSON
; CHECK: error[E0005]: lists are nested more than 256 levels deep
; CHECK-NEXT: --> [[FILE]]:1:257
; CHECK-NOT: error[
; JSON: E0005 1:257
; JSON-NEXT: 1 diagnostic(s)
;
; RUN: %python -c "print('(' * 256 + ')' * 256)" > %t.256.sml
; RUN: %expect-exit 1 %shapemlc check %t.256.sml 2>&1 | FileCheck %s --check-prefix=OK256
; OK256-NOT: error[E0005]
; OK256: error[E0003]: expected `(module NAME (func ...) ...)`
; OK256-NOT: error[E0005]
;
; A well-typed program whose dimension is nested to exactly 256 lists
; (module, func, params, x, tensor, the dimension list, then 250 `+`).
; RUN: %python -c "d = '1'; exec('for i in range(250): d = \'(+ \' + d + \' 1)\''); print('(module m (func f (params (x (tensor f32 (%%s) host))) (returns (tensor f32 (251) host)) (return x)))' %% d)" > %t.deep-ok.sml
; RUN: %shapemlc check %t.deep-ok.sml
