(** * Soundness.v — type soundness of the elementwise fragment

    For the fragment of Semantics.v ([fragment]: variables, let, let with
    ascription, elementwise unary/binary/compare/select with broadcasting,
    cast, device copies, reshape):
    - [type_soundness]: a well-typed expression, evaluated under a valuation
      satisfying Φ in an environment that matches Γ, evaluates, and its
      value has the evaluated type;
    - [progress]: it evaluates (never gets stuck on a run-time check);
    - [preservation]: any value it evaluates to has the type;
    - [eval_deterministic]: evaluation (of the whole core) is a function. *)

From Coq Require Import List ZArith Lia.
From ShapeML Require Import Syntax Broadcast Typing Semantics Reshape.
Import ListNotations.

(** ** Auxiliary lemmas *)
Lemma tabulate_length : forall {A : Type} s (f : list nat -> A),
  length (tabulate s f) = prod s.
Proof. intros. unfold tabulate. rewrite map_length, seq_length. reflexivity. Qed.

Lemma zipw_length : forall {A B C : Type} (f : A -> B -> C) l1 l2,
  length (zipw f l1 l2) = Nat.min (length l1) (length l2).
Proof. intros. unfold zipw. rewrite map_length, combine_length. reflexivity. Qed.

Lemma zipw3_length : forall {A B C D : Type} (f : A -> B -> C -> D) l1 l2 l3,
  length (zipw3 f l1 l2 l3) = Nat.min (Nat.min (length l1) (length l2)) (length l3).
Proof. intros. unfold zipw3. rewrite map_length, !combine_length. reflexivity. Qed.

Lemma app_last2_inj : forall {A : Type} (l1 l2 : list A) a b c d,
  l1 ++ [a; b] = l2 ++ [c; d] -> l1 = l2 /\ a = c /\ b = d.
Proof.
  intros A l1 l2 a b c d H.
  replace (l1 ++ [a; b]) with ((l1 ++ [a]) ++ [b]) in H by (rewrite <- app_assoc; reflexivity).
  replace (l2 ++ [c; d]) with ((l2 ++ [c]) ++ [d]) in H by (rewrite <- app_assoc; reflexivity).
  apply app_inj_tail in H as [H Hbd]. apply app_inj_tail in H as [H Hac]. auto.
Qed.

Lemma env_ok_cons : forall {V : Type} rho G (E : list (var * tensor V)) x ty t,
  env_ok rho G E -> val_has_type rho t ty ->
  env_ok rho ((x, ty) :: G) ((x, t) :: E).
Proof.
  intros V rho G E x ty t HE Ht y ty' Hy. simpl in *.
  destruct (String.eqb y x).
  - injection Hy as <-. exists t. auto.
  - apply HE. exact Hy.
Qed.

Lemma env_ok_nil : forall {V : Type} rho, env_ok rho [] (@nil (var * tensor V)).
Proof. intros V rho x ty H. discriminate. Qed.

(** §4.3 T-Sub is sound: equal dimensions under Φ give equal concrete shapes. *)
Lemma sub_sound : forall {V : Type} (Phi : constraint) rho (t : tensor V) dt (ds ds' : shape) dev,
  Phi rho ->
  val_has_type rho t (TTensor dt ds dev) ->
  Forall2 (dim_eq_obl Phi) ds ds' ->
  val_has_type rho t (TTensor dt ds' dev).
Proof.
  intros V Phi rho t dt ds ds' dev HPhi (Hdt & Hdev & Hsh & Hlen) Hall.
  simpl. repeat split; try assumption.
  rewrite Hsh. unfold eval_shape. clear Hsh.
  induction Hall as [|d d' ds ds' Hd _ IH]; [reflexivity|].
  simpl. rewrite IH. specialize (Hd rho HPhi). cbv beta in Hd. rewrite Hd. reflexivity.
Qed.

Section Soundness.
Context {V : Type} (P : prims V).

Lemma expand_length : forall src tgt (d : list V),
  length (expand P src tgt d) = prod tgt.
Proof. intros. unfold expand. apply tabulate_length. Qed.

(** ** Type soundness (progress and preservation together, big-step) *)
Theorem type_soundness_mut : forall Delta (Phi : constraint) rho, Phi rho ->
  (forall G e ty, synth Delta Phi G e ty -> fragment e ->
     forall E, env_ok rho G E ->
     exists t, eval P rho E e t /\ val_has_type rho t ty) /\
  (forall G e ty, check Delta Phi G e ty -> fragment e ->
     forall E, env_ok rho G E ->
     exists t, eval P rho E e t /\ val_has_type rho t ty).
Proof.
  intros Delta Phi rho HPhi.
  assert (Hsyn : forall G e ty, synth Delta Phi G e ty -> fragment e ->
            forall E, env_ok rho G E ->
            exists t, eval P rho E e t /\ val_has_type rho t ty).
  { apply (synth_mut Delta Phi
             (fun G e ty => fragment e -> forall E, env_ok rho G E ->
                exists t, eval P rho E e t /\ val_has_type rho t ty)
             (fun G e ty => fragment e -> forall E, env_ok rho G E ->
                exists t, eval P rho E e t /\ val_has_type rho t ty));
      simpl; intros.
    - (* T-Var *)
      destruct (H1 _ _ H) as [t' [Hl Ht]]. exists t'. split; [constructor|]; assumption.
    - (* T-Let *)
      destruct H4 as [F1 F2].
      destruct (H1 F1 E H5) as [t1' [Ev1 Ht1]].
      destruct (H3 F2 ((x, t1') :: E) (env_ok_cons _ _ _ _ _ _ H5 Ht1)) as [t2' [Ev2 Ht2]].
      exists t2'. split; [econstructor; eassumption | assumption].
    - (* T-LetAsc *)
      destruct H5 as [F1 F2].
      destruct (H2 F1 E H6) as [t1' [Ev1 Ht1]].
      destruct (H4 F2 ((x, t1') :: E) (env_ok_cons _ _ _ _ _ _ H6 Ht1)) as [t2' [Ev2 Ht2]].
      exists t2'. split; [econstructor; eassumption | assumption].
    - (* T-Unary *)
      destruct (H0 H2 E H3) as [t [Ev (Hdt & Hdev & Hsh & Hlen)]].
      eexists. split.
      + apply E_Unary; [exact Ev | rewrite Hdt; exact H1].
      + simpl. rewrite map_length. auto.
    - (* T-Binary *)
      destruct H5 as [F1 F2].
      destruct (H0 F1 E H6) as [t1 [Ev1 (Hdt1 & Hdev1 & Hsh1 & Hlen1)]].
      destruct (H2 F2 E H6) as [t2 [Ev2 (Hdt2 & Hdev2 & Hsh2 & Hlen2)]].
      destruct (bshape_runtime _ _ _ _ _ _ _ H4 HPhi Hsh1 Hsh2) as [s [Hs Hsm]].
      eexists. split.
      + apply E_Binary; try eassumption; congruence.
      + simpl. rewrite zipw_length, !expand_length, Nat.min_id. auto.
    - (* T-Compare: any dtype, bool included (spec §4.7) *)
      destruct H4 as [F1 F2].
      destruct (H0 F1 E H5) as [t1 [Ev1 (Hdt1 & Hdev1 & Hsh1 & Hlen1)]].
      destruct (H2 F2 E H5) as [t2 [Ev2 (Hdt2 & Hdev2 & Hsh2 & Hlen2)]].
      destruct (bshape_runtime _ _ _ _ _ _ _ H3 HPhi Hsh1 Hsh2) as [s [Hs Hsm]].
      eexists. split.
      + apply E_Compare; try eassumption; congruence.
      + simpl. rewrite zipw_length, !expand_length, Nat.min_id. auto.
    - (* T-Select *)
      destruct H7 as (F1 & F2 & F3).
      destruct (H0 F1 E H8) as [tc [Evc (Hdtc & Hdevc & Hshc & Hlenc)]].
      destruct (H2 F2 E H8) as [ta [Eva (Hdta & Hdeva & Hsha & Hlena)]].
      destruct (H4 F3 E H8) as [tb [Evb (Hdtb & Hdevb & Hshb & Hlenb)]].
      destruct (bshape_runtime _ _ _ _ _ _ _ H5 HPhi Hshc Hsha) as [s1 [Hs1 Hsm1]].
      destruct (bshape_runtime _ _ _ _ _ _ _ H6 HPhi Hsm1 Hshb) as [s [Hs Hsm]].
      eexists. split.
      + eapply E_Select; try eassumption; congruence.
      + simpl. rewrite zipw3_length, !expand_length, !Nat.min_id. auto.
    - (* T-Cast *)
      destruct (H0 H1 E H2) as [t [Ev (Hdt & Hdev & Hsh & Hlen)]].
      eexists. split; [apply E_Cast; exact Ev|].
      simpl. rewrite map_length. auto.
    - (* T-Matmul: not in the fragment *) contradiction.
    - (* T-Transpose: not in the fragment *) contradiction.
    - (* T-Reshape *)
      destruct (H0 H3 E H4) as [t [Ev Ht]].
      destruct (reshape_obligation_sound_wf _ _ _ _ _ _ _ _ H1 H2 HPhi Ht)
        as [t' [Hr [Ht' _]]].
      exists t'. split; [eapply E_Reshape; eassumption | exact Ht'].
    - (* T-Reduce: not in the fragment *) contradiction.
    - (* T-CopyToDevice *)
      destruct (H0 H1 E H2) as [t [Ev (Hdt & Hdev & Hsh & Hlen)]].
      eexists. split; [apply E_CopyToDevice; exact Ev|]. simpl. auto.
    - (* T-CopyToHost *)
      destruct (H0 H1 E H2) as [t [Ev (Hdt & Hdev & Hsh & Hlen)]].
      eexists. split; [apply E_CopyToHost; exact Ev|]. simpl. auto.
    - (* T-Sub *)
      destruct (H0 H2 E H3) as [t [Ev Ht]].
      exists t. split; [exact Ev | eapply sub_sound; eassumption]. }
  split; [exact Hsyn|].
  intros G e ty Hc Hf E HE. destruct Hc as [G e dt ds ds' dev Hs Hall].
  destruct (Hsyn _ _ _ Hs Hf E HE) as [t [Ev Ht]].
  exists t. split; [exact Ev | eapply sub_sound; eassumption].
Qed.

(** (a) Type soundness for the synthesis judgment. *)
Theorem type_soundness : forall Delta (Phi : constraint) G e ty rho E,
  synth Delta Phi G e ty -> fragment e -> Phi rho -> env_ok rho G E ->
  exists t, eval P rho E e t /\ val_has_type rho t ty.
Proof.
  intros Delta Phi G e ty rho E Hs Hf HPhi HE.
  exact (proj1 (type_soundness_mut Delta Phi rho HPhi) G e ty Hs Hf E HE).
Qed.

(** ... and for the checking judgment. *)
Theorem type_soundness_check : forall Delta (Phi : constraint) G e ty rho E,
  check Delta Phi G e ty -> fragment e -> Phi rho -> env_ok rho G E ->
  exists t, eval P rho E e t /\ val_has_type rho t ty.
Proof.
  intros Delta Phi G e ty rho E Hs Hf HPhi HE.
  exact (proj2 (type_soundness_mut Delta Phi rho HPhi) G e ty Hs Hf E HE).
Qed.

(** Closed form: empty context and environment. *)
Corollary type_soundness_closed : forall Delta (Phi : constraint) e ty rho,
  synth Delta Phi [] e ty -> fragment e -> Phi rho ->
  exists t, eval P rho [] e t /\ val_has_type rho t ty.
Proof.
  intros. eapply type_soundness; try eassumption. apply env_ok_nil.
Qed.

(** (a) Progress: a well-typed fragment expression never gets stuck. *)
Theorem progress : forall Delta (Phi : constraint) G e ty rho E,
  synth Delta Phi G e ty -> fragment e -> Phi rho -> env_ok rho G E ->
  exists t, eval P rho E e t.
Proof.
  intros. destruct (type_soundness Delta Phi G e ty rho E) as [t [Ev _]]; auto.
  exists t. exact Ev.
Qed.

(** ** Determinism of evaluation (whole core) *)
Theorem eval_deterministic : forall rho E e t1 t2,
  eval P rho E e t1 -> eval P rho E e t2 -> t1 = t2.
Proof.
  intros rho E e t1 t2 H1. revert t2.
  induction H1; intros t2' Hev2; inversion Hev2; subst;
    repeat match goal with
    | IH : forall t, eval P ?r ?E0 ?e0 t -> ?t0 = t, H : eval P ?r ?E0 ?e0 ?t3 |- _ =>
        specialize (IH _ H); subst
    end;
    repeat match goal with
    | Ha : t_shape ?t = ?l1 ++ [?a; ?b], Hb : t_shape ?t = ?l2 ++ [?c; ?d] |- _ =>
        rewrite Ha in Hb; apply app_last2_inj in Hb as (? & ? & ?); subst
    end;
    congruence.
Qed.

(** (a) Preservation (subject reduction): every value a well-typed fragment
    expression evaluates to has its type. *)
Theorem preservation : forall Delta (Phi : constraint) G e ty rho E t,
  synth Delta Phi G e ty -> fragment e -> Phi rho -> env_ok rho G E ->
  eval P rho E e t -> val_has_type rho t ty.
Proof.
  intros Delta Phi G e ty rho E t Hs Hf HPhi HE Ev.
  destruct (type_soundness Delta Phi G e ty rho E Hs Hf HPhi HE) as [t' [Ev' Ht']].
  rewrite (eval_deterministic _ _ _ _ _ Ev Ev'). exact Ht'.
Qed.

Theorem preservation_check : forall Delta (Phi : constraint) G e ty rho E t,
  check Delta Phi G e ty -> fragment e -> Phi rho -> env_ok rho G E ->
  eval P rho E e t -> val_has_type rho t ty.
Proof.
  intros Delta Phi G e ty rho E t Hs Hf HPhi HE Ev.
  destruct (type_soundness_check Delta Phi G e ty rho E Hs Hf HPhi HE) as [t' [Ev' Ht']].
  rewrite (eval_deterministic _ _ _ _ _ Ev Ev'). exact Ht'.
Qed.

End Soundness.
