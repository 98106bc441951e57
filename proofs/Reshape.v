(** * Reshape.v — soundness of the §4.12 T-Reshape obligation

    If [Φ ⊨ ∏ d = ∏ d'] (the obligation the checker proves with Z3), then
    under every valuation satisfying Φ, reshaping any tensor of the source
    shape to the target shape is defined, yields a tensor of the target
    shape, and leaves the data unchanged.  Conversely, a valuation where
    the element counts differ makes the reshape undefined, so the
    obligation cannot be weakened. *)

From Coq Require Import List ZArith Lia.
From ShapeML Require Import Syntax Typing Semantics.
Import ListNotations.

Lemma shape_at_of_nat : forall rho ds,
  Forall (fun d => (0 <= eval_dim rho d)%Z) ds ->
  map Z.of_nat (shape_at rho ds) = eval_shape rho ds.
Proof.
  intros rho ds H. unfold shape_at, eval_shape. rewrite map_map.
  induction H as [|d ds Hd _ IH]; cbn [map]; [reflexivity|].
  rewrite IH, Z2Nat.id by exact Hd. reflexivity.
Qed.

Lemma wf_ty_nonneg : forall Delta Phi dt ds dev,
  wf_ty Delta Phi (TTensor dt ds dev) ->
  entails Phi (fun rho => Forall (fun d => (0 <= eval_dim rho d)%Z) ds).
Proof.
  intros Delta Phi dt ds dev Hwf rho HPhi. inversion Hwf as [? ? ? Hall]; subst.
  clear Hwf. induction Hall as [|d ds [_ Hd] _ IH]; [constructor|].
  constructor; [|exact IH].
  specialize (Hd rho HPhi). cbv beta in Hd. lia.
Qed.

Section Reshape.
Context {V : Type}.

(** (c) Soundness of reshape's obligation, for target dimensions that are
    non-negative under Φ. *)
Theorem reshape_obligation_sound : forall Phi ds ds' rho (t : tensor V) dt dev,
  entails Phi (fun rho => Forall (fun d => (0 <= eval_dim rho d)%Z) ds') ->
  reshape_obl Phi ds ds' ->
  Phi rho ->
  val_has_type rho t (TTensor dt ds dev) ->
  exists t', reshape_val (shape_at rho ds') t = Some t' /\
             val_has_type rho t' (TTensor dt ds' dev) /\
             t_data t' = t_data t.
Proof.
  intros Phi ds ds' rho t dt dev Hnn Hobl HPhi (Hdt & Hdev & Hsh & Hlen).
  specialize (Hnn rho HPhi). specialize (Hobl rho HPhi). cbv beta in Hnn, Hobl.
  pose proof (shape_at_of_nat rho ds' Hnn) as Hsh'.
  assert (Hprod : prod (shape_at rho ds') = prod (t_shape t)).
  { apply Nat2Z.inj. rewrite <- !prodZ_of_nat, Hsh, Hsh'. symmetry. exact Hobl. }
  unfold reshape_val. rewrite Hprod, Nat.eqb_refl.
  eexists; split; [reflexivity|]. split; [|reflexivity]. simpl.
  split; [exact Hdt|]. split; [exact Hdev|]. split; [exact Hsh'|].
  rewrite Hprod. exact Hlen.
Qed.

(** (c) as used by T-Reshape: the target type is well formed (§3.4). *)
Theorem reshape_obligation_sound_wf : forall Delta Phi ds ds' rho (t : tensor V) dt dev,
  wf_ty Delta Phi (TTensor dt ds' dev) ->
  reshape_obl Phi ds ds' ->
  Phi rho ->
  val_has_type rho t (TTensor dt ds dev) ->
  exists t', reshape_val (shape_at rho ds') t = Some t' /\
             val_has_type rho t' (TTensor dt ds' dev) /\
             t_data t' = t_data t.
Proof.
  intros Delta Phi ds ds' rho t dt dev Hwf.
  apply reshape_obligation_sound. eapply wf_ty_nonneg; exact Hwf.
Qed.

(** The obligation is also necessary: where the element counts differ, the
    reshape is undefined. *)
Theorem reshape_obligation_necessary : forall ds ds' rho (t : tensor V) dt dev,
  Forall (fun d => (0 <= eval_dim rho d)%Z) ds' ->
  val_has_type rho t (TTensor dt ds dev) ->
  prodZ (eval_shape rho ds) <> prodZ (eval_shape rho ds') ->
  reshape_val (shape_at rho ds') t = None.
Proof.
  intros ds ds' rho t dt dev Hnn (_ & _ & Hsh & _) Hne.
  unfold reshape_val. destruct (Nat.eqb_spec (prod (shape_at rho ds')) (prod (t_shape t)))
    as [Heq|]; [|reflexivity].
  exfalso. apply Hne.
  rewrite <- Hsh, <- (shape_at_of_nat rho ds' Hnn), !prodZ_of_nat, Heq. reflexivity.
Qed.

End Reshape.
