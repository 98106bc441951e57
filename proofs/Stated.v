(** * Stated.v — statements only (proofs Admitted)

    Results that are stated but not yet proven.  Every theorem in this file
    ends in [Admitted]; nothing in the proven files depends on this file
    (proofs/check.sh enforces both).  The list is kept in
    docs/design/proofs.md. *)

From Coq Require Import List ZArith.
From ShapeML Require Import Syntax Broadcast Typing Semantics.
Import ListNotations.

Section Stated.
Context {V : Type} (P : prims V).

(** ** Data level: broadcasting reads only existing elements *)
Theorem expand_reads_in_bounds : forall s1 s2 s i,
  rbcast s1 s2 = Some s ->
  i < prod s ->
  ravel s1 (bidx s1 (unravel s i)) < prod s1 /\
  ravel s2 (bidx s2 (unravel s i)) < prod s2.
Admitted.

End Stated.
