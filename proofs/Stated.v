(** * Stated.v — statements only (proofs Admitted)

    The rest of the core: the non-elementwise constructs (§4.10 matmul,
    §4.11 transpose, §4.16 reductions), type soundness for the whole core,
    and a data-level property of broadcasting.  Every theorem in this file
    ends in [Admitted]; nothing in the proven files depends on this file
    (proofs/check.sh enforces both).  The list is kept in
    docs/design/proofs.md. *)

From Coq Require Import List ZArith.
From ShapeML Require Import Syntax Broadcast Typing Semantics.
Import ListNotations.

Section Stated.
Context {V : Type} (P : prims V).

(** ** Value-level soundness of the remaining rules *)

(** §4.11 T-Transpose: a tensor of type [T(dt, ds ++ [a; b], dev)] has a
    shape [pre ++ [x; y]], and its transpose has type [T(dt, ds ++ [b; a], dev)]. *)
Theorem transpose_sound : forall rho (t : tensor V) dt ds a b dev,
  val_has_type rho t (TTensor dt (ds ++ [a; b]) dev) ->
  exists pre x y,
    t_shape t = pre ++ [x; y] /\
    val_has_type rho
      (mkT (t_dtype t) (pre ++ [y; x]) (t_device t) (transpose_data P pre x y (t_data t)))
      (TTensor dt (ds ++ [b; a]) dev).
Admitted.

(** §4.10 T-Matmul: under a valuation satisfying Φ, the run-time checks of
    [E_Matmul] hold (contraction dims equal, batch shapes broadcast) and
    the product has type [T(dt, dc ++ [m; n], dev)]. *)
Theorem matmul_sound : forall (Phi : constraint) rho (t1 t2 : tensor V)
                              dt da db dc m k k' n dev,
  Phi rho ->
  val_has_type rho t1 (TTensor dt (da ++ [m; k]) dev) ->
  val_has_type rho t2 (TTensor dt (db ++ [k'; n]) dev) ->
  dim_eq_obl Phi k k' ->
  bshape Phi da db dc ->
  exists pa pb pc mm kk nn,
    t_shape t1 = pa ++ [mm; kk] /\
    t_shape t2 = pb ++ [kk; nn] /\
    rbcast pa pb = Some pc /\
    val_has_type rho
      (mkT (t_dtype t1) (pc ++ [mm; nn]) (t_device t1)
           (matmul_data P pa pb pc mm kk nn (t_data t1) (t_data t2)))
      (TTensor dt (dc ++ [m; n]) dev).
Admitted.

(** §4.16 T-Reduce: the axes resolve identically at run time, and the
    reduced tensor has type [T(dt, reduce_dims 1 axs kd 0 ds, dev)]. *)
Theorem reduce_sound : forall rho (t : tensor V) op axes kd dt ds dev axs,
  val_has_type rho t (TTensor dt ds dev) ->
  resolve_axes (length ds) axes = Some axs ->
  resolve_axes (length (t_shape t)) axes = Some axs /\
  val_has_type rho
    (mkT (t_dtype t) (reduce_dims 1 axs kd 0 (t_shape t)) (t_device t)
         (reduce_data P op axs kd (t_shape t) (t_data t)))
    (TTensor dt (reduce_dims (DLit 1) axs kd 0 ds) dev).
Admitted.

(** ** Derivation-level preservation for the remaining constructs *)
Theorem preservation_matmul : forall Delta (Phi : constraint) G e1 e2 ty rho E t,
  synth Delta Phi G (EMatmul e1 e2) ty -> Phi rho -> env_ok rho G E ->
  eval P rho E (EMatmul e1 e2) t -> val_has_type rho t ty.
Admitted.

Theorem preservation_transpose : forall Delta (Phi : constraint) G e ty rho E t,
  synth Delta Phi G (ETranspose e) ty -> Phi rho -> env_ok rho G E ->
  eval P rho E (ETranspose e) t -> val_has_type rho t ty.
Admitted.

Theorem preservation_reduce : forall Delta (Phi : constraint) G op axes kd e ty rho E t,
  synth Delta Phi G (EReduce op axes kd e) ty -> Phi rho -> env_ok rho G E ->
  eval P rho E (EReduce op axes kd e) t -> val_has_type rho t ty.
Admitted.

(** ** Type soundness for the whole core (no [fragment] restriction) *)
Theorem type_soundness_core : forall Delta (Phi : constraint) G e ty rho E,
  synth Delta Phi G e ty -> Phi rho -> env_ok rho G E ->
  exists t, eval P rho E e t /\ val_has_type rho t ty.
Admitted.

Theorem preservation_core : forall Delta (Phi : constraint) G e ty rho E t,
  synth Delta Phi G e ty -> Phi rho -> env_ok rho G E ->
  eval P rho E e t -> val_has_type rho t ty.
Admitted.

(** ** Data level: broadcasting reads only existing elements *)
Theorem expand_reads_in_bounds : forall s1 s2 s i,
  rbcast s1 s2 = Some s ->
  i < prod s ->
  ravel s1 (bidx s1 (unravel s i)) < prod s1 /\
  ravel s2 (bidx s2 (unravel s i)) < prod s2.
Admitted.

End Stated.
