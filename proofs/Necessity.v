(** * Necessity.v — the obligations cannot be dropped, and the soundness
    theorem is not vacuous

    - [reshape_obligation_needed]: if Φ does not entail the reshape
      obligation, then it is not the case that the reshape evaluates in
      every environment (some valuation satisfying Φ and some value of the
      source type make it stuck).
    - [slice_obligation_needed]: a negative start, or start + size past the
      axis, makes the slice of a well-formed value stuck.
    - [broadcast_obligation_needed]: for operands [N] and [M], B-Shape
      demands [Φ ⊨ N = M]; without that premise the rule would type [x + y]
      as [N], and a valuation ([N = 1], [M = 3]) evaluates it to a value of
      shape [3]: preservation fails (a symbolic dimension stretched).
    - [example_sound] and [example_runs]: [type_soundness] instantiated on a
      concrete program (matmul, a broadcast bias add, a slice), and its
      hypotheses satisfied by concrete values (a guard against vacuity). *)

From Coq Require Import String List ZArith Bool Lia.
From ShapeML Require Import Syntax Broadcast Typing Semantics Bounds Reshape Constructs Soundness.
Import ListNotations.
Open Scope string_scope.

(** ** Reshape *)
Theorem reshape_obligation_needed : forall {V : Type} (P : prims V) (Phi : constraint)
                                           ds ds' dt dev x (v : V),
  entails Phi (fun rho => Forall (fun d => (0 <= eval_dim rho d)%Z) ds) ->
  entails Phi (fun rho => Forall (fun d => (0 <= eval_dim rho d)%Z) ds') ->
  ~ reshape_obl Phi ds ds' ->
  ~ (forall rho, Phi rho -> forall t, val_has_type rho t (TTensor dt ds dev) ->
       exists t', eval P rho [(x, t)] (EReshape (EVar x) ds') t').
Proof.
  intros V P Phi ds ds' dt dev x v Hnn Hnn' Hnot Hall. apply Hnot. intros rho HPhi.
  set (t := mkT dt (shape_at rho ds) dev (repeat v (prod (shape_at rho ds)))).
  assert (Ht : val_has_type rho t (TTensor dt ds dev)).
  { simpl. repeat split. - apply shape_at_of_nat. exact (Hnn rho HPhi).
    - apply repeat_length. }
  destruct (Hall rho HPhi t Ht) as [t' Ev].
  inversion Ev; subst.
  match goal with Ev0 : eval _ _ _ (EVar _) _ |- _ => inversion Ev0; subst end.
  match goal with Hl : lookup _ _ = Some _ |- _ =>
    simpl in Hl; rewrite String.eqb_refl in Hl; injection Hl as <- end.
  match goal with Hr : reshape_val _ _ = Some _ |- _ => unfold reshape_val in Hr; simpl in Hr end.
  destruct (Nat.eqb_spec (prod (shape_at rho ds')) (prod (shape_at rho ds))) as [Heq|];
    [|discriminate].
  rewrite <- (shape_at_of_nat rho ds (Hnn rho HPhi)), <- (shape_at_of_nat rho ds' (Hnn' rho HPhi)).
  rewrite !prodZ_of_nat, Heq. reflexivity.
Qed.

(** ** Broadcasting *)
Definition dN := DVar "N".
Definition dM := DVar "M".

Theorem broadcast_obligation_needed :
  (forall Phi s, bshape Phi [dN] [dM] s -> dim_eq_obl Phi dN dM) /\
  exists (rho : valuation) E t,
    env_ok rho [("x", TTensor DF32 [dN] Host); ("y", TTensor DF32 [dM] Host)] E /\
    eval nat_prims rho E (EBinary BAdd (EVar "x") (EVar "y")) t /\
    ~ val_has_type rho t (TTensor DF32 [dN] Host).
Proof.
  split.
  - intros Phi s H. unfold bshape in H. simpl in H.
    inversion H as [| |a b c xs ys zs Hd _ Ha Hb Hc]; subst.
    inversion Hd; subst; try discriminate; assumption.
  - set (rho := fun v : dvar => if String.eqb v "N" then 1%positive else 3%positive).
    exists rho, [("x", mkT DF32 [1] Host [10]); ("y", mkT DF32 [3] Host [1; 2; 3])].
    exists (mkT DF32 [3] Host [11; 12; 13]). split; [|split].
    + intros v ty Hv. simpl in Hv |- *.
      destruct (String.eqb v "x"); [injection Hv as <-|].
      * eexists. split; [reflexivity|]. simpl. repeat split.
      * destruct (String.eqb v "y"); [injection Hv as <-|discriminate].
        eexists. split; [reflexivity|]. simpl. repeat split.
    + apply (E_Binary nat_prims rho _ BAdd _ _ (mkT DF32 [1] Host [10])
                      (mkT DF32 [3] Host [1; 2; 3]) [3] [10; 10; 10] [1; 2; 3]);
        try reflexivity; constructor; reflexivity.
    + intros (_ & _ & Hsh & _). simpl in Hsh. discriminate.
Qed.

(** ** An end-to-end instance of [type_soundness]
    [(let h (matmul x w)) (let y (add h b)) (slice y :axis 1 :start 0 :size 2)]
    with [x : (B D)], [w : (D F)], [b : (F)] and [(where (>= F 2))]. *)
Definition dB := DVar "B".
Definition dD := DVar "D".
Definition dF := DVar "F".

Definition ex_phi : constraint := where_constraint [CGe dF (DLit 2)].
Definition ex_ctx : ctx :=
  [("x", TTensor DF32 [dB; dD] Host); ("w", TTensor DF32 [dD; dF] Host);
   ("b", TTensor DF32 [dF] Host)].
Definition ex_prog : expr :=
  ELet "h" (EMatmul (EVar "x") (EVar "w"))
    (ELet "y" (EBinary BAdd (EVar "h") (EVar "b"))
       (ESlice (EVar "y") 1 (DLit 0) (DLit 2))).
Definition ex_ty : ty := TTensor DF32 [dB; DLit 2] Host.

Lemma ex_typed : synth ["B"; "D"; "F"] ex_phi ex_ctx ex_prog ex_ty.
Proof.
  unfold ex_prog, ex_ty.
  apply (T_Let _ _ _ _ _ _ (TTensor DF32 [dB; dF] Host)); [reflexivity| |].
  - apply (T_Matmul _ _ _ _ _ DF32 [] [] [] dB dD dD dF Host);
      [constructor; reflexivity | constructor; reflexivity | reflexivity
      | intros rho _; reflexivity | constructor].
  - apply (T_Let _ _ _ _ _ _ (TTensor DF32 [dB; dF] Host)); [reflexivity| |].
    + apply (T_Binary _ _ _ _ _ _ DF32 [dB; dF] [dF]); [constructor; reflexivity
        | constructor; reflexivity | reflexivity | ].
      unfold bshape, bshape_n. simpl. apply BR_Cons; [apply BD_Same; reflexivity | apply BR_NilR].
    + change [dB; DLit 2] with (replace_at 1 (DLit 2) [dB; dF]).
      apply (T_Slice _ _ _ _ DF32 [dB; dF] Host 1 1 (DLit 0) (DLit 2) dF);
        [constructor; reflexivity | reflexivity | reflexivity | | | |
         intros x Hx; destruct Hx];
        intros rho Hphi; simpl; try lia.
      unfold ex_phi, where_constraint in Hphi. inversion Hphi as [|c cs Hc _]; subst.
      simpl in Hc. lia.
Qed.

Theorem example_sound : forall {V : Type} (P : prims V) rho E,
  ex_phi rho -> env_ok rho ex_ctx E ->
  exists t, eval P rho E ex_prog t /\ val_has_type rho t ex_ty.
Proof. intros. eapply type_soundness; [exact ex_typed | eassumption | eassumption]. Qed.

(** The hypotheses are satisfiable: B = 2, D = 3, F = 4 and concrete tensors. *)
Definition ex_rho : valuation :=
  fun v => if String.eqb v "B" then 2%positive
           else if String.eqb v "D" then 3%positive else 4%positive.

Definition ex_env : list (var * tensor nat) :=
  [("x", mkT DF32 [2; 3] Host (seq 0 6)); ("w", mkT DF32 [3; 4] Host (seq 0 12));
   ("b", mkT DF32 [4] Host (seq 0 4))].

Theorem example_runs : exists t, eval nat_prims ex_rho ex_env ex_prog t /\
                                 val_has_type ex_rho t ex_ty /\ t_shape t = [2; 2].
Proof.
  destruct (example_sound nat_prims ex_rho ex_env) as [t [Ev Ht]].
  - unfold ex_phi, where_constraint. apply Forall_cons; [|apply Forall_nil].
    compute. discriminate.
  - intros v ty Hv. unfold ex_ctx in Hv. unfold ex_env. simpl in Hv |- *.
    destruct (String.eqb v "x"); [injection Hv as <-; eexists; split; [reflexivity|];
                                  simpl; repeat split|].
    destruct (String.eqb v "w"); [injection Hv as <-; eexists; split; [reflexivity|];
                                  simpl; repeat split|].
    destruct (String.eqb v "b"); [injection Hv as <-; eexists; split; [reflexivity|];
                                  simpl; repeat split | discriminate].
  - exists t. split; [exact Ev|]. split; [exact Ht|].
    destruct Ht as (_ & _ & Hsh & _). simpl in Hsh.
    destruct (t_shape t) as [|a [|c [|]]]; try discriminate.
    cbn in Hsh. injection Hsh as Ha Hc. f_equal; [lia | f_equal; lia].
Qed.

(** ** Slice: the obligations are needed
    If the start is negative, or start + size exceeds the axis, slicing a
    value of a well-formed type is stuck (some read is out of bounds). *)
Lemma unravel_ravel : forall s idx, in_bounds idx s -> unravel s (ravel s idx) = idx.
Proof.
  intros s idx H. induction H as [|k d idx s Hk Hb IH]; [reflexivity|].
  simpl. pose proof (ravel_in_bounds s idx Hb) as Hr.
  assert (Hp : prod s <> 0) by lia.
  rewrite Nat.div_add_l by exact Hp. rewrite Nat.div_small by exact Hr.
  rewrite Nat.add_0_r.
  replace (k * prod s + ravel s idx) with (ravel s idx + k * prod s) by lia.
  rewrite Nat.mod_add by exact Hp.
  rewrite Nat.mod_small by exact Hr. rewrite IH. reflexivity.
Qed.

Lemma all_some_none : forall {A B : Type} (g : A -> option B) l x,
  In x l -> g x = None -> all_some (map g l) = None.
Proof.
  intros A B g l x Hin Hx. induction l as [|y l IH]; [destruct Hin|].
  simpl. destruct Hin as [->|Hin]; [rewrite Hx; reflexivity|].
  destruct (g y); [|reflexivity]. rewrite (IH Hin). reflexivity.
Qed.

Lemma tabulate_opt_none : forall {A : Type} s (f : list nat -> option A) idx,
  in_bounds idx s -> f idx = None -> tabulate_opt s f = None.
Proof.
  intros A s f idx Hb Hf. unfold tabulate_opt.
  apply (all_some_none _ _ (ravel s idx)).
  - apply in_seq. split; [lia|]. simpl. apply ravel_in_bounds. exact Hb.
  - rewrite unravel_ravel by exact Hb. exact Hf.
Qed.

Lemma in_bounds_z_mid : forall l1 c l2 s1 x s2,
  length l1 = length s1 ->
  in_bounds_z (l1 ++ c :: l2) (s1 ++ x :: s2) =
  (in_bounds_z l1 s1 && (Z.leb 0 c && Z.ltb c (Z.of_nat x)) && in_bounds_z l2 s2).
Proof.
  induction l1 as [|a l1 IH]; intros c l2 [|d s1] x s2 Hl; simpl in Hl; try discriminate.
  - simpl. destruct (Z.leb 0 c && Z.ltb c (Z.of_nat x)); reflexivity.
  - simpl. rewrite IH by lia.
    destruct (Z.leb 0 a && Z.ltb a (Z.of_nat d)); reflexivity.
Qed.

Lemma in_bounds_zeros : forall s, Forall (fun d => 1 <= d) s -> in_bounds (repeat 0 (length s)) s.
Proof. intros s H. induction H; simpl; constructor; [lia | assumption]. Qed.

Theorem slice_obligation_needed : forall {V : Type} rho (t : tensor V) dt ds dev k st sz dk,
  val_has_type rho t (TTensor dt ds dev) ->
  Forall (fun d => (1 <= eval_dim rho d)%Z) ds ->
  nth_error ds k = Some dk ->
  (1 <= eval_dim rho sz)%Z ->
  (eval_dim rho st < 0 \/ eval_dim rho st + eval_dim rho sz > eval_dim rho dk)%Z ->
  slice_data (t_shape t) k (eval_dim rho st) (Z.to_nat (eval_dim rho sz)) (t_data t) = None.
Proof.
  intros V rho t dt ds dev k st sz dk (_ & _ & Hsh & _) Hpos Hk Hsz Hbad.
  destruct (Constructs.split_typed_shape _ _ _ _ _ Hsh Hk)
    as (ds1 & ds2 & sh1 & x & sh2 & -> & -> & Hl1 & Hl2 & H1 & Hx & H2).
  apply Forall_app in Hpos as [P1 P2]. inversion P2 as [|? ? Px P2']; subst.
  assert (Q : forall sh ds', map Z.of_nat sh = eval_shape rho ds' ->
             Forall (fun d => (1 <= eval_dim rho d)%Z) ds' -> Forall (fun d => 1 <= d) sh).
  { intros sh ds' Hm Hf. revert sh Hm. induction Hf as [|d ds' Hd _ IH]; intros [|y sh] Hm;
      try discriminate; constructor.
    - simpl in Hm. injection Hm as Hy _. lia.
    - simpl in Hm. injection Hm as _ Hm. apply IH. exact Hm. }
  pose proof (Q _ _ H1 P1) as Z1. pose proof (Q _ _ H2 P2') as Z2.
  set (j := if (eval_dim rho st <? 0)%Z then 0 else Z.to_nat (eval_dim rho sz) - 1).
  unfold slice_data. rewrite <- Hl2, replace_at_app.
  apply (tabulate_opt_none _ _ (repeat 0 (length sh1) ++ j :: repeat 0 (length sh2))).
  - apply Constructs.in_bounds_mid; [apply in_bounds_zeros; exact Z1| |apply in_bounds_zeros; exact Z2].
    unfold j. destruct (Z.ltb_spec (eval_dim rho st) 0); lia.
  - rewrite (Constructs.nth_mid _ _ _ _ _ (repeat_length 0 (length sh1))), map_app. cbn [map].
    rewrite <- (repeat_length 0 (length sh1)) at 1.
    rewrite <- (map_length Z.of_nat (repeat 0 (length sh1))), replace_at_app.
    unfold read_at. rewrite in_bounds_z_mid by (rewrite map_length, repeat_length; reflexivity).
    replace (Z.leb 0 (Z.of_nat j + eval_dim rho st) && Z.ltb (Z.of_nat j + eval_dim rho st) (Z.of_nat x))
      with false; [rewrite andb_false_r, andb_false_l; reflexivity|].
    symmetry. apply andb_false_iff. unfold j.
    destruct (Z.ltb_spec (eval_dim rho st) 0).
    + left. apply Z.leb_gt. lia.
    + right. apply Z.ltb_ge. lia.
Qed.
