(** * Solver.v — the solver's syntactic shortcuts are sound

    Before Z3, the checker decides a goal from normal forms alone when it
    can ([decide_syntactically] in src/smt/shape_solver.cpp), first as is,
    then after rewriting it with the definitions that the [where] clause
    gives ([defining_substitution]: [D = H·Dh]).  [decide_syn] mirrors the
    first (the constant-difference, non-negative-polynomial, and the
    constant, [1 | b] and [a | a] cases of [divides]); [decide_syn_sound]:
    when it answers true, the goal holds under every valuation.
    [definition_rewrite_sound]: rewriting with a substitution that each
    valuation satisfying Φ agrees with (as a [where] equality [x = d]
    gives) and then deciding syntactically proves the goal under Φ. *)

From Coq Require Import String List ZArith Bool Lia Permutation.
From ShapeML Require Import Syntax Normalize.
Import ListNotations.

(** Every term has a non-negative coefficient and only variables: the
    polynomial is [>= 0] when every variable is [>= 1]. *)
Definition is_var_atom (a : atom) : bool := match a with AVar _ => true | _ => false end.
Definition nonneg (p : poly) : bool :=
  forallb (fun t => Z.leb 0 (snd t) && forallb is_var_atom (fst t)) p.

Definition term_eq_dec : forall t u : term, {t = u} + {t <> u}.
Proof. decide equality; auto using mono_eq_dec, Z.eq_dec. Defined.

Definition poly_eq_dec : forall p q : poly, {p = q} + {p <> q} := list_eq_dec term_eq_dec.

Definition diff (a b : dim) : poly := psub (poly_of a) (poly_of b).

(** [(divides a a)] holds when [a >= 1] is decided. *)
Definition divides_self (a b : dim) : bool :=
  if poly_eq_dec (poly_of a) (poly_of b)
  then match constant_of (diff a (DLit 1)) with
       | Some k => Z.leb 0 k | None => nonneg (diff a (DLit 1)) end
  else false.

(** [(divides a b)] with [a = c·m], one term with [c >= 1] over variables
    only, and every term of [b] a multiple of [c·m]. *)
Fixpoint remove_one (a : atom) (l : mono) : option mono :=
  match l with
  | [] => None
  | x :: l' => if atom_eq_dec a x then Some l'
               else match remove_one a l' with Some r => Some (x :: r) | None => None end
  end.

Fixpoint remove_atoms (m l : mono) : option mono :=
  match m with
  | [] => Some l
  | a :: m' => match remove_one a l with Some l' => remove_atoms m' l' | None => None end
  end.

Definition divides_mono (a b : dim) : bool :=
  match poly_of a with
  | [(m, c)] =>
      Z.ltb 0 c && forallb is_var_atom m &&
      forallb (fun t => Z.eqb (snd t mod c) 0 &&
                        match remove_atoms m (fst t) with Some _ => true | None => false end)
              (poly_of b)
  | _ => false
  end.

Definition decide_syn (c : cstr) : bool :=
  match c with
  | CEq a b => match constant_of (diff a b) with Some k => Z.eqb k 0 | None => false end
  | CNe a b => match constant_of (diff a b) with Some k => negb (Z.eqb k 0) | None => false end
  | CGe a b => match constant_of (diff a b) with
               | Some k => Z.leb 0 k | None => nonneg (diff a b) end
  | CLe a b => match constant_of (diff a b) with
               | Some k => Z.leb k 0 | None => nonneg (psub (const 0) (diff a b)) end
  | CGt a b => match constant_of (diff a b) with
               | Some k => Z.ltb 0 k | None => nonneg (psub (diff a b) (const 1)) end
  | CLt a b => match constant_of (diff a b) with
               | Some k => Z.ltb k 0 | None => nonneg (psub (const (-1)) (diff a b)) end
  | CDivides a b =>
      (match constant_of (poly_of a), constant_of (poly_of b) with
       | Some ka, Some kb => Z.leb 1 ka && Z.eqb (kb mod ka) 0
       | Some ka, None => Z.eqb ka 1 || divides_self a b
       | None, _ => divides_self a b
       end) || divides_mono a b
  end.

Lemma eval_mono_vars_pos : forall rho l, forallb is_var_atom l = true -> (1 <= eval_mono rho l)%Z.
Proof.
  intros rho l H. unfold eval_mono. induction l as [|a l IH]; cbn [fold_right]; [lia|].
  simpl in H. apply andb_true_iff in H as [Ha Hl].
  destruct a as [x| |]; try discriminate. cbn [atom_dim eval_dim]. specialize (IH Hl).
  pose proof (Pos2Z.is_pos (rho x)). nia.
Qed.

Lemma nonneg_sound : forall rho p, nonneg p = true -> (0 <= eval_poly rho p)%Z.
Proof.
  intros rho p H. induction p as [|t p IH]; [simpl; lia|].
  simpl in H. apply andb_true_iff in H as [Ht Hp]. apply andb_true_iff in Ht as [Hc Hv].
  apply Z.leb_le in Hc. pose proof (eval_mono_vars_pos rho _ Hv).
  change (eval_poly rho (t :: p)) with (eval_term rho t + eval_poly rho p)%Z.
  unfold eval_term. specialize (IH Hp). unfold term, mono in *. nia.
Qed.

Lemma eval_diff : forall rho a b, eval_poly rho (diff a b) = (eval_dim rho a - eval_dim rho b)%Z.
Proof. intros. unfold diff. rewrite eval_psub, !eval_poly_of. reflexivity. Qed.

Lemma remove_one_perm : forall a l r, remove_one a l = Some r -> Permutation l (a :: r).
Proof.
  intros a l. induction l as [|x l IH]; intros r H; simpl in H; [discriminate|].
  destruct (atom_eq_dec a x) as [->|]; [injection H as <-; reflexivity|].
  destruct (remove_one a l) as [r'|] eqn:E; [|discriminate]. injection H as <-.
  rewrite (IH r' eq_refl). apply perm_swap.
Qed.

Lemma remove_atoms_perm : forall m l r, remove_atoms m l = Some r -> Permutation l (m ++ r).
Proof.
  induction m as [|a m IH]; intros l r H; simpl in H; [injection H as <-; reflexivity|].
  destruct (remove_one a l) as [l'|] eqn:E; [|discriminate].
  rewrite (remove_one_perm _ _ _ E). simpl. apply perm_skip. apply IH. exact H.
Qed.

Lemma divides_mono_sound : forall a b, divides_mono a b = true ->
  forall rho, cstr_holds rho (CDivides a b).
Proof.
  intros a b H rho. unfold divides_mono in H. simpl.
  pose proof (eval_poly_of rho a) as Ha. pose proof (eval_poly_of rho b) as Hb.
  destruct (poly_of a) as [|[m c] [|t0 p0]]; try discriminate.
  apply andb_true_iff in H as [H Hall]. apply andb_true_iff in H as [Hc Hv].
  apply Z.ltb_lt in Hc.
  pose proof (eval_mono_vars_pos rho m Hv) as HM.
  assert (Hea : eval_dim rho a = (c * eval_mono rho m)%Z).
  { rewrite <- Ha. change (eval_poly rho [(m, c)]) with (c * eval_mono rho m + 0)%Z. lia. }
  assert (Hq : forall p, forallb (fun t => Z.eqb (snd t mod c) 0 &&
                          match remove_atoms m (fst t) with Some _ => true | None => false end) p = true ->
            exists q, eval_poly rho p = (c * eval_mono rho m * q)%Z).
  { induction p as [|t p IH]; intros Hp; [exists 0%Z; simpl; lia|].
    simpl in Hp. apply andb_true_iff in Hp as [Ht Hp]. apply andb_true_iff in Ht as [Hk Hr].
    apply Z.eqb_eq in Hk.
    destruct (remove_atoms m (fst t)) as [r|] eqn:Er; [|discriminate].
    destruct (IH Hp) as [q Hq].
    exists (snd t / c * eval_mono rho r + q)%Z.
    change (eval_poly rho (t :: p)) with (eval_term rho t + eval_poly rho p)%Z.
    rewrite Hq. unfold eval_term.
    rewrite (eval_mono_perm rho _ _ (remove_atoms_perm _ _ _ Er)), eval_mono_app.
    rewrite (Z_div_exact_2 (snd t) c) at 1 by lia. unfold mono, term in *. ring. }
  destruct (Hq _ Hall) as [q Hbq]. rewrite Hb in Hbq.
  rewrite Hea, Hbq. split; [nia|].
  rewrite Z.mul_comm. apply Z.mod_mul. nia.
Qed.

(** The syntactic decisions are sound: a goal decided true holds under
    every valuation (all variables [>= 1]). *)
Theorem decide_syn_sound : forall c, decide_syn c = true -> forall rho, cstr_holds rho c.
Proof.
  intros c H rho. destruct c as [a b|a b|a b|a b|a b|a b|a b]; simpl in H |- *;
    pose proof (eval_diff rho a b) as Hd.
  - destruct (constant_of (diff a b)) as [k|] eqn:Hk; [|discriminate].
    apply Z.eqb_eq in H. subst k. rewrite (constant_of_spec rho _ _ Hk) in Hd. lia.
  - destruct (constant_of (diff a b)) as [k|] eqn:Hk; [|discriminate].
    apply negb_true_iff, Z.eqb_neq in H. rewrite (constant_of_spec rho _ _ Hk) in Hd. lia.
  - destruct (constant_of (diff a b)) as [k|] eqn:Hk.
    + apply Z.ltb_lt in H. rewrite (constant_of_spec rho _ _ Hk) in Hd. lia.
    + apply (nonneg_sound rho) in H. rewrite eval_psub, eval_const, Hd in H. lia.
  - destruct (constant_of (diff a b)) as [k|] eqn:Hk.
    + apply Z.leb_le in H. rewrite (constant_of_spec rho _ _ Hk) in Hd. lia.
    + apply (nonneg_sound rho) in H. rewrite eval_psub, eval_const, Hd in H. lia.
  - destruct (constant_of (diff a b)) as [k|] eqn:Hk.
    + apply Z.ltb_lt in H. rewrite (constant_of_spec rho _ _ Hk) in Hd. lia.
    + apply (nonneg_sound rho) in H. rewrite eval_psub, eval_const, Hd in H. lia.
  - destruct (constant_of (diff a b)) as [k|] eqn:Hk.
    + apply Z.leb_le in H. rewrite (constant_of_spec rho _ _ Hk) in Hd. lia.
    + apply (nonneg_sound rho) in H. rewrite Hd in H. lia.
  - apply orb_true_iff in H as [H|H]; [|exact (divides_mono_sound a b H rho)].
    pose proof (eval_poly_of rho a) as Ha. pose proof (eval_poly_of rho b) as Hb.
    assert (Hself : divides_self a b = true -> cstr_holds rho (CDivides a b)).
    { unfold divides_self. intros Hs.
      destruct (poly_eq_dec (poly_of a) (poly_of b)) as [E|]; [|discriminate].
      assert (Hab : eval_dim rho a = eval_dim rho b) by (rewrite <- Ha, <- Hb, E; reflexivity).
      pose proof (eval_diff rho a (DLit 1)) as Hd1. simpl in Hd1.
      assert (H1 : (1 <= eval_dim rho a)%Z).
      { destruct (constant_of (diff a (DLit 1))) as [k|] eqn:Hk.
        - apply Z.leb_le in Hs. rewrite (constant_of_spec rho _ _ Hk) in Hd1. lia.
        - apply (nonneg_sound rho) in Hs. lia. }
      simpl. split; [exact H1|]. rewrite <- Hab. apply Z.mod_same. lia. }
    destruct (constant_of (poly_of a)) as [ka|] eqn:Hka;
      [destruct (constant_of (poly_of b)) as [kb|] eqn:Hkb|].
    + apply andb_true_iff in H as [H1 H2]. apply Z.leb_le in H1. apply Z.eqb_eq in H2.
      rewrite (constant_of_spec rho _ _ Hka) in Ha. rewrite (constant_of_spec rho _ _ Hkb) in Hb.
      rewrite <- Ha, <- Hb. split; assumption.
    + apply orb_true_iff in H as [H|H]; [|exact (Hself H)].
      apply Z.eqb_eq in H. subst ka. rewrite (constant_of_spec rho _ _ Hka) in Ha.
      rewrite <- Ha. split; [lia|]. apply Z.mod_1_r.
    + exact (Hself H).
Qed.

(** Rewriting with the [where] clause's definitions first.  [s] is a
    substitution that agrees with every valuation satisfying Φ (each [x] is
    mapped to a [d] with [Φ ⊨ x = d]); deciding the rewritten goal
    syntactically proves the goal under Φ. *)
Lemma subst_eval_agree : forall rho s d,
  (forall y, eval_dim rho (s y) = eval_dim rho (DVar y)) ->
  eval_dim rho (subst_dim s d) = eval_dim rho d.
Proof. intros rho s d Hs. induction d; simpl; try congruence. apply Hs. Qed.

Theorem definition_rewrite_sound : forall (Phi : constraint) s g,
  (forall rho, Phi rho -> forall y, eval_dim rho (s y) = eval_dim rho (DVar y)) ->
  decide_syn (subst_cstr s g) = true ->
  entails Phi (fun rho => cstr_holds rho g).
Proof.
  intros Phi s g Hs Hdec rho HPhi.
  pose proof (decide_syn_sound _ Hdec rho) as H.
  specialize (Hs rho HPhi).
  destruct g; simpl in *; rewrite !subst_eval_agree in H by exact Hs; exact H.
Qed.

(** The substitution a [where] equality [(= x d)] gives. *)
Definition single (x : dvar) (d : dim) : dvar -> dim :=
  fun y => if String.eqb y x then d else DVar y.

Corollary where_definition_sound : forall cs x d g,
  In (CEq (DVar x) d) cs ->
  decide_syn (subst_cstr (single x d) g) = true ->
  entails (where_constraint cs) (fun rho => cstr_holds rho g).
Proof.
  intros cs x d g Hin Hdec. apply (definition_rewrite_sound _ (single x d)); [|exact Hdec].
  intros rho HPhi y. unfold single. destruct (String.eqb_spec y x) as [->|]; [|reflexivity].
  unfold where_constraint in HPhi. rewrite Forall_forall in HPhi.
  specialize (HPhi _ Hin). simpl in HPhi. symmetry. exact HPhi.
Qed.

(** Definitions with a witness: [(divides H D)] is read as [D = H·w] and
    [(= (mod v C) 0)] as [v = C·w], [w] a fresh variable.  Under Φ the
    witness exists ([w = D / H >= 1]), so deciding the rewritten goal
    syntactically (for every [w]) proves the goal under Φ. *)
Definition cvars (c : cstr) : list dvar :=
  match c with
  | CEq x y | CNe x y | CLt x y | CLe x y | CGt x y | CGe x y | CDivides x y =>
      dim_vars x ++ dim_vars y
  end.

Lemma eval_agree : forall (r1 r2 : valuation) d,
  (forall y, In y (dim_vars d) -> r1 y = r2 y) -> eval_dim r1 d = eval_dim r2 d.
Proof.
  intros r1 r2 d H. induction d; simpl in *;
    try (rewrite IHd1, IHd2 by (intros y Hy; apply H; apply in_or_app; auto); reflexivity);
    try (rewrite IHd by exact H; reflexivity).
  - reflexivity.
  - rewrite (H x (or_introl eq_refl)). reflexivity.
Qed.

Theorem witness_rewrite_sound : forall (Phi : constraint) x a w g,
  entails Phi (fun rho => 1 <= eval_dim rho a /\ eval_dim rho (DVar x) mod eval_dim rho a = 0)%Z ->
  ~ In w (dim_vars a) -> w <> x -> ~ In w (cvars g) ->
  decide_syn (subst_cstr (single x (DMul a (DVar w))) g) = true ->
  entails Phi (fun rho => cstr_holds rho g).
Proof.
  intros Phi x a w g Hdef Hwa Hwx Hwg Hdec rho HPhi.
  destruct (Hdef rho HPhi) as [Ha Hm].
  set (q := (eval_dim rho (DVar x) / eval_dim rho a)%Z).
  assert (Hx : eval_dim rho (DVar x) = (eval_dim rho a * q)%Z) by (apply Z_div_exact_2; lia).
  assert (Hq : (1 <= q)%Z).
  { pose proof (eval_var_pos rho x). destruct (Z_lt_le_dec q 1); [|lia]. nia. }
  set (rho' := fun y => if String.eqb y w then Z.to_pos q else rho y).
  assert (Hoff : forall d, ~ In w (dim_vars d) -> eval_dim rho' d = eval_dim rho d).
  { intros d Hd. apply eval_agree. intros y Hy. unfold rho'.
    destruct (String.eqb_spec y w) as [->|]; [contradiction|reflexivity]. }
  assert (Hsub : forall d, ~ In w (dim_vars d) ->
            eval_dim rho' (subst_dim (single x (DMul a (DVar w))) d) = eval_dim rho d).
  { induction d; intros Hd; simpl in Hd |- *;
      try (rewrite IHd1, IHd2 by (intro; apply Hd; apply in_or_app; auto); reflexivity);
      try (rewrite IHd by exact Hd; reflexivity).
    - reflexivity.
    - unfold single. destruct (String.eqb_spec x0 x) as [->|Hne].
      + simpl. rewrite (Hoff a Hwa). unfold rho'. rewrite String.eqb_refl.
        rewrite Z2Pos.id by lia. simpl in Hx. lia.
      + simpl. unfold rho'. destruct (String.eqb_spec x0 w) as [->|]; [|reflexivity].
        exfalso. apply Hd. left. reflexivity. }
  pose proof (decide_syn_sound _ Hdec rho') as H.
  destruct g; simpl in Hwg, H |- *;
    rewrite !Hsub in H by (intro; apply Hwg; apply in_or_app; auto); exact H.
Qed.

Local Open Scope string_scope.

(** Examples: [2·K + 1 >= K] is decided syntactically; [D = H·Dh] makes
    the reshape obligation [B·D = B·H·Dh] syntactic. *)
Example decide_ge : decide_syn (CGe (DAdd (DMul (DLit 2) (DVar "K")) (DLit 1)) (DVar "K")) = true.
Proof. reflexivity. Qed.

Example decide_reshape_by_definition :
  decide_syn (subst_cstr (single "D" (DMul (DVar "H") (DVar "Dh")))
                (CEq (DMul (DVar "B") (DVar "D"))
                     (DMul (DMul (DVar "B") (DVar "H")) (DVar "Dh")))) = true.
Proof. reflexivity. Qed.

(** [(where (divides 64 D))] read as [D = 64·w] makes [D mod 64 = 0]
    syntactic. *)
Example decide_by_witness :
  decide_syn (subst_cstr (single "D" (DMul (DLit 64) (DVar "#w0")))
                (CEq (DMod (DVar "D") 64) (DLit 0))) = true.
Proof. reflexivity. Qed.

(** [2·H] divides [4·H·Dh + 2·H]: one monomial that divides every term. *)
Example decide_divides_monomial :
  decide_syn (CDivides (DMul (DLit 2) (DVar "H"))
                       (DAdd (DMul (DMul (DLit 4) (DVar "H")) (DVar "Dh"))
                             (DMul (DLit 2) (DVar "H")))) = true.
Proof. reflexivity. Qed.
