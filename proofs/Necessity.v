(** * Necessity.v — the obligations cannot be dropped, and the soundness
    theorem is not vacuous

    - [reshape_obligation_needed]: if Φ does not entail the reshape
      obligation, then it is not the case that the reshape evaluates in
      every environment (some valuation satisfying Φ and some value of the
      source type make it stuck).
    - [broadcast_obligation_needed]: for operands [N] and [M], B-Shape
      demands [Φ ⊨ N = M]; without that premise the rule would type [x + y]
      as [N], and a valuation ([N = 1], [M = 3]) evaluates it to a value of
      shape [3]: preservation fails (a symbolic dimension stretched).
    - [example_sound] and [example_runs]: [type_soundness] instantiated on a
      concrete program (matmul, a broadcast bias add, a slice), and its
      hypotheses satisfied by concrete values (a guard against vacuity). *)

From Coq Require Import String List ZArith Lia.
From ShapeML Require Import Syntax Broadcast Typing Semantics Reshape Soundness.
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
        [constructor; reflexivity | reflexivity | reflexivity | | | ];
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
