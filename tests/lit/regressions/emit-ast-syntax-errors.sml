; REGRESSION (fixed): `--emit=ast` prints a partial AST and exits 0 when the reader or the
; parser reported errors (tools/shapemlc/main.cpp cmd_emit only looks at
; whether an AST exists; a parse error drops the function, an E0001 byte is
; skipped). Diagnostics are not printed.
; Expected: the E0001 and E0003 diagnostics on stderr, exit 1.
; RUN: %expect-exit 1 %shapemlc --emit=ast %s 2>&1 | FileCheck %s
; CHECK: error[E0001]: unexpected character `#`
; CHECK: error[E0003]: `let` is
(module m
  (func f (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
    (return (neg x #)))
  (func g (dims N)
    (params (x (tensor f32 (N) host)))
    (returns (tensor f32 (N) host))
    (let y)
    (return x)))
