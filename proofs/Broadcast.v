(** * Broadcast.v — §4.5 broadcasting (rule B-Shape)

    The type-level broadcast relation, parametric in a normalizer [norm]
    (≡ is equality of normal forms, §3.3), the function computing it (shape
    inference), determinism, and its agreement with run-time broadcasting
    of concrete shapes under any valuation satisfying the constraints, for
    every normalizer that is sound ([norm_ok norm]: a dimension and its
    normal form have the same value).  The typing rules use the instance
    [bshape := bshape_n norm_dim] (Normalize.v, proven sound). *)

From Coq Require Import List ZArith Lia.
From ShapeML Require Import Syntax Normalize.
Import ListNotations.

(** A normalizer is sound when it preserves values. *)
Definition norm_ok (norm : dim -> dim) : Prop :=
  forall rho d, eval_dim rho (norm d) = eval_dim rho d.

Section Generic.
Context (norm : dim -> dim).

(** ** B-Shape on one aligned pair of dimensions [a], [b] *)
Inductive bdim_n (Phi : constraint) : dim -> dim -> dim -> Prop :=
(* §4.5 B-Shape, case a ≡ b: result a *)
| BD_Same : forall a b, norm a = norm b -> bdim_n Phi a b a
(* §4.5 B-Shape, case a ≡ 1 (the literal one): result b *)
| BD_LeftOne : forall a b, norm a <> norm b -> norm a = DLit 1 -> bdim_n Phi a b b
(* §4.5 B-Shape, case b ≡ 1: result a *)
| BD_RightOne : forall a b, norm a <> norm b -> norm a <> DLit 1 -> norm b = DLit 1 ->
    bdim_n Phi a b a
(* §4.5 B-Shape, otherwise: result a, under the obligation Φ ⊨ a = b (E0302) *)
| BD_Oblig : forall a b,
    norm a <> norm b -> norm a <> DLit 1 -> norm b <> DLit 1 ->
    dim_eq_obl Phi a b ->
    bdim_n Phi a b a.

(** ** B-Shape on shapes
    Shapes are aligned from the right, so the relation is stated on
    reversed shapes (innermost dimension first); a missing leading
    dimension counts as the literal 1, which combines with [b] to [b]. *)
Inductive bshape_rev_n (Phi : constraint) : list dim -> list dim -> list dim -> Prop :=
(* §4.5 B-Shape: left shape exhausted, its missing dims count as 1 *)
| BR_NilL : forall ys, bshape_rev_n Phi [] ys ys
(* §4.5 B-Shape: right shape exhausted, its missing dims count as 1 *)
| BR_NilR : forall xs, bshape_rev_n Phi xs [] xs
(* §4.5 B-Shape: combine the innermost aligned pair *)
| BR_Cons : forall a b c xs ys zs,
    bdim_n Phi a b c ->
    bshape_rev_n Phi xs ys zs ->
    bshape_rev_n Phi (a :: xs) (b :: ys) (c :: zs).

(** [bshape_n Phi s1 s2 s] : under Φ, shapes [s1] and [s2] broadcast to [s]. *)
Definition bshape_n (Phi : constraint) (s1 s2 s : shape) : Prop :=
  bshape_rev_n Phi (rev s1) (rev s2) (rev s).

(** ** Shape inference: the broadcast as a function *)
Definition bcast_dim (a b : dim) : dim :=
  if dim_eq_dec (norm a) (norm b) then a
  else if dim_eq_dec (norm a) (DLit 1) then b
  else a.

Fixpoint bcast_rev (xs ys : list dim) : list dim :=
  match xs, ys with
  | [], _ => ys
  | _, [] => xs
  | a :: xs', b :: ys' => bcast_dim a b :: bcast_rev xs' ys'
  end.

Definition bcast (s1 s2 : shape) : shape := rev (bcast_rev (rev s1) (rev s2)).

(** The obligation a pair generates (trivial in the syntactic cases). *)
Definition bdim_obl (Phi : constraint) (a b : dim) : Prop :=
  if dim_eq_dec (norm a) (norm b) then True
  else if dim_eq_dec (norm a) (DLit 1) then True
  else if dim_eq_dec (norm b) (DLit 1) then True
  else dim_eq_obl Phi a b.

Fixpoint bcast_rev_obl (Phi : constraint) (xs ys : list dim) : Prop :=
  match xs, ys with
  | a :: xs', b :: ys' => bdim_obl Phi a b /\ bcast_rev_obl Phi xs' ys'
  | _, _ => True
  end.

Definition bcast_obl (Phi : constraint) (s1 s2 : shape) : Prop :=
  bcast_rev_obl Phi (rev s1) (rev s2).

(** ** Determinism *)
Lemma bdim_function : forall Phi a b c, bdim_n Phi a b c -> c = bcast_dim a b.
Proof.
  intros Phi a b c H; unfold bcast_dim; destruct H as [a b E|a b N O|a b N O R|a b N O R _].
  - destruct (dim_eq_dec (norm a) (norm b)); congruence.
  - destruct (dim_eq_dec (norm a) (norm b)); [congruence|].
    destruct (dim_eq_dec (norm a) (DLit 1)); congruence.
  - destruct (dim_eq_dec (norm a) (norm b)); [congruence|].
    destruct (dim_eq_dec (norm a) (DLit 1)); congruence.
  - destruct (dim_eq_dec (norm a) (norm b)); [congruence|].
    destruct (dim_eq_dec (norm a) (DLit 1)); congruence.
Qed.

Theorem bdim_deterministic : forall Phi a b c1 c2,
  bdim_n Phi a b c1 -> bdim_n Phi a b c2 -> c1 = c2.
Proof.
  intros. rewrite (bdim_function _ _ _ _ H), (bdim_function _ _ _ _ H0). reflexivity.
Qed.

Lemma bshape_rev_function : forall Phi xs ys zs,
  bshape_rev_n Phi xs ys zs -> zs = bcast_rev xs ys.
Proof.
  intros Phi xs ys zs H; induction H; simpl.
  - reflexivity.
  - destruct xs; reflexivity.
  - rewrite (bdim_function _ _ _ _ H), IHbshape_rev_n. reflexivity.
Qed.

(** B-Shape computes a function of the two shapes (shape inference). *)
Theorem bshape_function : forall Phi s1 s2 s,
  bshape_n Phi s1 s2 s -> s = bcast s1 s2.
Proof.
  unfold bshape_n, bcast. intros Phi s1 s2 s H.
  apply bshape_rev_function in H. rewrite <- H, rev_involutive. reflexivity.
Qed.

(** (b) Determinism of shape inference for broadcasting: the broadcast
    relation yields a unique shape. *)
Theorem bshape_deterministic : forall Phi s1 s2 s s',
  bshape_n Phi s1 s2 s -> bshape_n Phi s1 s2 s' -> s = s'.
Proof.
  intros. rewrite (bshape_function _ _ _ _ H), (bshape_function _ _ _ _ H0).
  reflexivity.
Qed.

(** ** B-Shape holds exactly when its obligations are proved *)
Lemma bdim_complete : forall Phi a b,
  bdim_obl Phi a b -> bdim_n Phi a b (bcast_dim a b).
Proof.
  intros Phi a b H; unfold bdim_obl, bcast_dim in *.
  destruct (dim_eq_dec (norm a) (norm b)) as [E|Hab]; [apply BD_Same; exact E|].
  destruct (dim_eq_dec (norm a) (DLit 1)) as [E1|Ha1]; [apply BD_LeftOne; assumption|].
  destruct (dim_eq_dec (norm b) (DLit 1)) as [E2|Hb1]; [apply BD_RightOne; assumption|].
  apply BD_Oblig; assumption.
Qed.

Lemma bdim_sound_obl : forall Phi a b c, bdim_n Phi a b c -> bdim_obl Phi a b.
Proof.
  intros Phi a b c H; unfold bdim_obl; destruct H as [a b E|a b N O|a b N O R|a b N O R Ob].
  - destruct (dim_eq_dec (norm a) (norm b)); [exact I|congruence].
  - destruct (dim_eq_dec (norm a) (norm b)); [exact I|].
    destruct (dim_eq_dec (norm a) (DLit 1)); [exact I|congruence].
  - destruct (dim_eq_dec (norm a) (norm b)); [exact I|].
    destruct (dim_eq_dec (norm a) (DLit 1)); [exact I|].
    destruct (dim_eq_dec (norm b) (DLit 1)); [exact I|congruence].
  - destruct (dim_eq_dec (norm a) (norm b)); [exact I|].
    destruct (dim_eq_dec (norm a) (DLit 1)); [exact I|].
    destruct (dim_eq_dec (norm b) (DLit 1)); [exact I|assumption].
Qed.

Lemma bshape_rev_complete : forall Phi xs ys,
  bcast_rev_obl Phi xs ys -> bshape_rev_n Phi xs ys (bcast_rev xs ys).
Proof.
  intros Phi xs; induction xs as [|a xs IH]; intros ys H; simpl.
  - constructor.
  - destruct ys as [|b ys].
    + constructor.
    + destruct H. constructor; [apply bdim_complete | apply IH]; assumption.
Qed.

Lemma bshape_rev_obl : forall Phi xs ys zs,
  bshape_rev_n Phi xs ys zs -> bcast_rev_obl Phi xs ys.
Proof.
  intros Phi xs ys zs H; induction H; simpl.
  - exact I.
  - destruct xs; exact I.
  - split; [eapply bdim_sound_obl; eassumption | assumption].
Qed.

Theorem bshape_iff_obligations : forall Phi s1 s2,
  bcast_obl Phi s1 s2 <-> bshape_n Phi s1 s2 (bcast s1 s2).
Proof.
  unfold bcast_obl, bshape_n, bcast. intros Phi s1 s2. rewrite rev_involutive.
  split; [apply bshape_rev_complete | apply bshape_rev_obl].
Qed.

End Generic.

(** ** Run-time broadcasting of concrete shapes
    Right-aligned; a dimension of 1 stretches; otherwise the two
    dimensions must be equal. *)
Definition rbdim (a b : nat) : option nat :=
  if Nat.eqb a b then Some a
  else if Nat.eqb a 1 then Some b
  else if Nat.eqb b 1 then Some a
  else None.

Fixpoint rbcast_rev (xs ys : list nat) : option (list nat) :=
  match xs, ys with
  | [], _ => Some ys
  | _, [] => Some xs
  | a :: xs', b :: ys' =>
      match rbdim a b, rbcast_rev xs' ys' with
      | Some c, Some r => Some (c :: r)
      | _, _ => None
      end
  end.

Definition rbcast (s1 s2 : list nat) : option (list nat) :=
  match rbcast_rev (rev s1) (rev s2) with
  | Some r => Some (rev r)
  | None => None
  end.

Lemma map_of_nat_nil : forall (l : list nat), map Z.of_nat l = [] -> l = [].
Proof. intros [|x l] H; [reflexivity | discriminate]. Qed.

Lemma bshape_rev_runtime : forall norm Phi rho xs ys zs,
  norm_ok norm ->
  bshape_rev_n norm Phi xs ys zs -> Phi rho ->
  forall n1 n2,
  map Z.of_nat n1 = map (eval_dim rho) xs ->
  map Z.of_nat n2 = map (eval_dim rho) ys ->
  exists n3, rbcast_rev n1 n2 = Some n3 /\ map Z.of_nat n3 = map (eval_dim rho) zs.
Proof.
  intros norm Phi rho xs ys zs Hn H HPhi; induction H; intros n1 n2 H1 H2.
  - apply map_of_nat_nil in H1; subst n1. exists n2; split; auto.
  - apply map_of_nat_nil in H2; subst n2.
    exists n1; split; auto. destruct n1; reflexivity.
  - destruct n1 as [|x n1]; [discriminate|]. destruct n2 as [|y n2]; [discriminate|].
    simpl in H1, H2. injection H1 as Hx H1. injection H2 as Hy H2.
    destruct (IHbshape_rev_n n1 n2 H1 H2) as [n3 [Hr Hm]].
    simpl. rewrite Hr.
    assert (Hc : exists z, rbdim x y = Some z /\ Z.of_nat z = eval_dim rho c).
    { unfold rbdim. destruct H as [a b E|a b _ O|a b _ _ R|a b _ _ _ Hob].
      - assert (Hab : eval_dim rho a = eval_dim rho b) by (rewrite <- (Hn rho a), E; apply Hn).
        assert (x = y) by lia. subst y. rewrite Nat.eqb_refl.
        exists x; split; [reflexivity | assumption].
      - assert (Ha1 : eval_dim rho a = 1%Z) by (rewrite <- (Hn rho a), O; reflexivity).
        assert (x = 1%nat) by lia. subst x.
        destruct (Nat.eqb_spec 1 y) as [<-|_].
        + exists 1%nat; split; [reflexivity | lia].
        + exists y; split; [reflexivity | assumption].
      - assert (Hb1 : eval_dim rho b = 1%Z) by (rewrite <- (Hn rho b), R; reflexivity).
        assert (y = 1%nat) by lia. subst y.
        destruct (Nat.eqb_spec x 1) as [->|Hx1].
        + exists 1%nat; split; [reflexivity | assumption].
        + exists x; split; [reflexivity | assumption].
      - specialize (Hob rho HPhi). cbv beta in Hob. assert (x = y) by lia. subst y.
        rewrite Nat.eqb_refl. exists x; split; [reflexivity | assumption]. }
    destruct Hc as [z [Hz Hze]]. rewrite Hz.
    exists (z :: n3). simpl. split; [reflexivity|]. rewrite Hze, Hm. reflexivity.
Qed.

(** Type-level broadcasting is sound for run-time broadcasting: under a
    valuation satisfying Φ, concrete shapes of the operand types broadcast
    (no run-time failure) to the concrete shape of the inferred type. *)
Theorem bshape_n_runtime : forall norm Phi rho s1 s2 s n1 n2,
  norm_ok norm ->
  bshape_n norm Phi s1 s2 s -> Phi rho ->
  map Z.of_nat n1 = eval_shape rho s1 ->
  map Z.of_nat n2 = eval_shape rho s2 ->
  exists n, rbcast n1 n2 = Some n /\ map Z.of_nat n = eval_shape rho s.
Proof.
  unfold bshape_n, eval_shape, rbcast. intros norm Phi rho s1 s2 s n1 n2 Hn H HPhi H1 H2.
  destruct (bshape_rev_runtime norm Phi rho _ _ _ Hn H HPhi (rev n1) (rev n2))
    as [n3 [Hr Hm]].
  - rewrite map_rev, H1, map_rev. reflexivity.
  - rewrite map_rev, H2, map_rev. reflexivity.
  - rewrite Hr. exists (rev n3). split; [reflexivity|].
    rewrite map_rev, Hm, map_rev, rev_involutive. reflexivity.
Qed.

(** ** The instance the typing rules use: ≡ is equality of the normal forms
    computed by [norm_dim] (Normalize.v, §3.3). *)
Definition bshape (Phi : constraint) (s1 s2 s : shape) : Prop := bshape_n norm_dim Phi s1 s2 s.

Lemma norm_dim_ok : norm_ok norm_dim.
Proof. exact norm_sound. Qed.

(** Type-level broadcasting is sound for run-time broadcasting. *)
Theorem bshape_runtime : forall Phi rho s1 s2 s n1 n2,
  bshape Phi s1 s2 s -> Phi rho ->
  map Z.of_nat n1 = eval_shape rho s1 ->
  map Z.of_nat n2 = eval_shape rho s2 ->
  exists n, rbcast n1 n2 = Some n /\ map Z.of_nat n = eval_shape rho s.
Proof. intros. eapply bshape_n_runtime; [exact norm_dim_ok | eassumption ..]. Qed.
