(* Extraction of the Coq normalizer (proofs/Normalize.v) for the differential
   test normalizer_diff.sh; compiled by that script, not part of proofs/. *)
From Coq Require Import String ZArith.
From ShapeML Require Import Syntax Normalize.
Require Extraction.
Extraction Language OCaml.
Definition norm_eqb (a b : dim) : bool := if dim_eq_dec (norm_dim a) (norm_dim b) then true else false.
Extraction "normx.ml" norm_eqb DLit.
