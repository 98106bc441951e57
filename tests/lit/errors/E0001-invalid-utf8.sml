; E0001: bytes that are not UTF-8, outside and inside a comment. The source
; line is echoed with `?` in their place.
; RUN: %python -c "import sys; sys.stdout.buffer.write(open(sys.argv[1], 'rb').read().replace(b'\x40FF\x40', b'\xff').replace(b'\x40C3\x40', b'\xc3'))" %s > %t.sml
; RUN: %expect-exit 1 %shapemlc check %t.sml 2>&1 | FileCheck %s -DFILE=%t.sml
; RUN: %expect-exit 1 %shapemlc check --format=json %t.sml 2>&1 | %diags | FileCheck %s --check-prefix=JSON
(module m
  (func f (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
; CHECK: error[E0001]: invalid UTF-8 byte
; CHECK-NEXT: --> [[FILE]]:[[@LINE+7]]:17
; CHECK: {{^}} {{[0-9]+}} |     (let y (neg ?x))
; CHECK: error[E0001]: invalid UTF-8 byte in a comment
; CHECK-NEXT: --> [[FILE]]:[[@LINE+5]]:12
; CHECK-NOT: error[
; JSON: E0001 [[@LINE+2]]:17
; JSON-NEXT: E0001 [[@LINE+2]]:12
    (let y (neg @FF@x))
    ; cafe @C3@ truncated sequence
; JSON-NEXT: 2 diagnostic(s)
    (return y)))
