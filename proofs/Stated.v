(** * Stated.v — statements only (proofs Admitted)

    Results that are stated but not yet proven.  Every theorem in this file
    ends in [Admitted]; nothing in the proven files depends on this file
    (proofs/check.sh enforces both).  The list is kept in
    docs/design/proofs.md.  It is empty at present: every statement it held
    is proven (see docs/design/proofs.md for where). *)

From Coq Require Import List.
