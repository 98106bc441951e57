(** * Denote.v — data semantics: reference denotations by coordinates

    The evaluator of Semantics.v builds every result with [tabulate_opt]
    (a loop over the linear indices [0 .. prod s - 1], each unravelled to a
    multi-index) and reads its operands at linear indices with
    [nth_error].  This file states what the result of an operation is,
    coordinate by coordinate, and proves that the evaluator computes it:

    - [elem_at t idx]: the element of [t] at the multi-index [idx], read
      per coordinate: [None] unless [idx] has the rank of [t] and every
      coordinate is below its dimension ([elem_at_in_bounds]);
    - [bcast_ref src idx]: the operand coordinate that broadcasting reads
      for the result coordinate [idx] (right alignment, a dimension of 1
      read at 0), written without the evaluator's [bidx];
    - per operation, a functional-correctness theorem: whenever the
      evaluator returns a result, every in-bounds coordinate of the result
      holds the reference value, computed from operand elements read by
      [elem_at] (hence at in-bounds coordinates), and the result has the
      stated shape and [prod shape] elements.

    Element values stay abstract ([prims V]): "sum" is the fold of
    [p_add] from [p_zero] over [k = 0 .. K-1] (matmul), a reduction is
    [p_red_fin op N (fold_left (p_red_step op) xs (p_red_init op))] over the
    reduced coordinates in increasing order, softmax and log_softmax are the
    spec's formula over those primitives ([softmax_ref]).  The theorems hold for every
    instance of [prims]; nothing is claimed about floating-point rounding. *)

From Coq Require Import List Arith Bool ZArith Lia.
From ShapeML Require Import Syntax Broadcast Typing Semantics Bounds Soundness.
Import ListNotations.

(** ** Per-coordinate reads *)

Fixpoint in_boundsb (idx s : list nat) : bool :=
  match idx, s with
  | [], [] => true
  | i :: idx', d :: s' => Nat.ltb i d && in_boundsb idx' s'
  | _, _ => false
  end.

Lemma in_boundsb_spec : forall idx s, in_boundsb idx s = true <-> in_bounds idx s.
Proof.
  unfold in_bounds. induction idx as [|i idx IH]; intros [|d s]; simpl.
  - split; intros _; [constructor | reflexivity].
  - split; intro H; [discriminate | inversion H].
  - split; intro H; [discriminate | inversion H].
  - rewrite andb_true_iff, Nat.ltb_lt, IH. split.
    + intros [H1 H2]. constructor; assumption.
    + intro H. inversion H; subst. auto.
Qed.

(** The element of [t] at the multi-index [idx] (row-major). *)
Definition elem_at {V : Type} (t : tensor V) (idx : list nat) : option V :=
  if in_boundsb idx (t_shape t) then nth_error (t_data t) (ravel (t_shape t) idx) else None.

(** A successful read is at an in-bounds coordinate tuple. *)
Lemma elem_at_in_bounds : forall {V : Type} (t : tensor V) idx v,
  elem_at t idx = Some v -> in_bounds idx (t_shape t).
Proof.
  unfold elem_at. intros V t idx v H.
  destruct (in_boundsb idx (t_shape t)) eqn:E; [|discriminate].
  apply in_boundsb_spec. exact E.
Qed.

Lemma elem_at_read : forall {V : Type} (t : tensor V) idx,
  in_bounds idx (t_shape t) -> elem_at t idx = nth_error (t_data t) (ravel (t_shape t) idx).
Proof.
  unfold elem_at. intros V t idx H. apply in_boundsb_spec in H. rewrite H. reflexivity.
Qed.

(** ** Row-major offsets are a bijection between in-bounds tuples and
    [0 .. prod s - 1] *)

Lemma unravel_ravel : forall s idx, in_bounds idx s -> unravel s (ravel s idx) = idx.
Proof.
  unfold in_bounds. intros s idx H.
  induction H as [|k d idx s Hk Hr IH]; simpl; [reflexivity|].
  assert (Hlt : ravel s idx < prod s) by (apply ravel_in_bounds; exact Hr).
  assert (Hq : k = (k * prod s + ravel s idx) / prod s).
  { apply (Nat.div_unique _ _ _ (ravel s idx)); [exact Hlt | lia]. }
  assert (Hm : ravel s idx = (k * prod s + ravel s idx) mod prod s).
  { apply (Nat.mod_unique _ _ k); [exact Hlt | lia]. }
  rewrite <- Hq, <- Hm, IH. reflexivity.
Qed.

Lemma ravel_unravel : forall s i, i < prod s -> ravel s (unravel s i) = i.
Proof.
  induction s as [|d s IH]; intros i Hi; simpl in *; [lia|].
  assert (Hp : prod s <> 0) by (intro H0; rewrite H0 in Hi; lia).
  rewrite IH by (apply Nat.mod_upper_bound; exact Hp).
  pose proof (Nat.div_mod i (prod s) Hp). lia.
Qed.

(** Every linear index the evaluator reads at, [ravel s idx] for an
    in-bounds [idx], is the row-major offset of exactly that coordinate
    tuple. *)
Lemma ravel_injective : forall s i1 i2, in_bounds i1 s -> in_bounds i2 s ->
  ravel s i1 = ravel s i2 -> i1 = i2.
Proof.
  intros s i1 i2 H1 H2 H. rewrite <- (unravel_ravel s i1 H1), <- (unravel_ravel s i2 H2), H.
  reflexivity.
Qed.

(** ** What [tabulate_opt] computes, coordinate by coordinate *)

Lemma all_some_length : forall {A : Type} (l : list (option A)) r,
  all_some l = Some r -> length r = length l.
Proof.
  induction l as [|[x|] l IH]; intros r H; simpl in H; [injection H as <-; reflexivity| |discriminate].
  destruct (all_some l) as [r'|] eqn:E; [|discriminate]. injection H as <-. simpl. f_equal. auto.
Qed.

Lemma all_some_nth : forall {A : Type} (l : list (option A)) r n,
  all_some l = Some r -> n < length l ->
  exists v, nth_error l n = Some (Some v) /\ nth_error r n = Some v.
Proof.
  induction l as [|[x|] l IH]; intros r n H Hn; simpl in *; [lia| |discriminate].
  destruct (all_some l) as [r'|] eqn:E; [|discriminate]. injection H as <-.
  destruct n as [|n]; simpl; [eauto|]. apply IH; [reflexivity | lia].
Qed.

Lemma all_some_In : forall {A B : Type} (g : A -> option B) l r x,
  all_some (map g l) = Some r -> In x l -> exists v, g x = Some v.
Proof.
  induction l as [|y l IH]; intros r x H Hx; [destruct Hx|]. simpl in H.
  destruct (g y) as [v|] eqn:Ey; [|discriminate].
  destruct (all_some (map g l)) as [r'|] eqn:E; [|discriminate].
  destruct Hx as [Hx|Hx]; [subst y; eauto | exact (IH r' x eq_refl Hx)].
Qed.

Lemma all_some_map_eq : forall {A B : Type} (g : A -> option B) (h : A -> B) l,
  (forall x, In x l -> g x = Some (h x)) -> all_some (map g l) = Some (map h l).
Proof.
  induction l as [|y l IH]; intros H; simpl; [reflexivity|].
  rewrite (H y (or_introl eq_refl)), IH; [reflexivity|]. intros x Hx. apply H. right. exact Hx.
Qed.

Lemma nth_error_seq : forall n k, k < n -> nth_error (seq 0 n) k = Some k.
Proof.
  intros n k Hk. rewrite nth_error_nth' with (d := 0) by (rewrite seq_length; exact Hk).
  rewrite seq_nth by exact Hk. reflexivity.
Qed.

(** If [tabulate_opt s f] returns [l], then [l] has [prod s] elements, and
    at every in-bounds coordinate [idx] of [s], [f idx] succeeded and the
    element of [l] at [idx] is its value. *)
Theorem tabulate_opt_at : forall {A : Type} s (f : list nat -> option A) l,
  tabulate_opt s f = Some l ->
  length l = prod s /\
  forall idx, in_bounds idx s -> exists v, f idx = Some v /\ nth_error l (ravel s idx) = Some v.
Proof.
  unfold tabulate_opt. intros A s f l H.
  pose proof (all_some_length _ _ H) as Hl. rewrite map_length, seq_length in Hl.
  split; [exact Hl|]. intros idx Hidx.
  assert (Hr : ravel s idx < prod s) by (apply ravel_in_bounds; exact Hidx).
  destruct (all_some_nth _ _ (ravel s idx) H) as (v & Hv & Hn);
    [rewrite map_length, seq_length; exact Hr|].
  rewrite nth_error_map, nth_error_seq in Hv by exact Hr. simpl in Hv.
  injection Hv as Hv. rewrite unravel_ravel in Hv by exact Hidx. eauto.
Qed.

Lemma tabulate_opt_elem_at : forall {V : Type} (f : list nat -> option V) dt s dev l idx,
  tabulate_opt s f = Some l -> in_bounds idx s ->
  exists v, f idx = Some v /\ elem_at (mkT dt s dev l) idx = Some v.
Proof.
  intros V f dt s dev l idx H Hidx. destruct (tabulate_opt_at _ _ _ H) as [_ Hat].
  destruct (Hat idx Hidx) as (v & Hf & Hn). exists v. split; [exact Hf|].
  rewrite elem_at_read by exact Hidx. exact Hn.
Qed.

(** ** Broadcasting, by coordinates
    For a result coordinate [idx] and an operand of shape [src] (rank at
    most [length idx]), the operand is read at coordinate [a] from
    [idx]'s coordinate [length idx - length src + a] (right alignment), or
    at 0 where the operand's dimension is 1. *)
Definition bcast_ref (src idx : list nat) : list nat :=
  map (fun a => if Nat.eqb (nth a src 0) 1 then 0 else nth (length idx - length src + a) idx 0)
      (seq 0 (length src)).

Lemma map_combine_seq : forall (src l : list nat), length l = length src ->
  map (fun p => if Nat.eqb (fst p) 1 then 0 else snd p) (combine src l) =
  map (fun a => if Nat.eqb (nth a src 0) 1 then 0 else nth a l 0) (seq 0 (length src)).
Proof.
  induction src as [|x src IH]; intros [|y l] Hl; simpl in *; try reflexivity; try discriminate.
  f_equal. rewrite IH by lia. rewrite <- seq_shift, map_map. reflexivity.
Qed.

Lemma nth_skipn' : forall (l : list nat) off a, nth a (skipn off l) 0 = nth (off + a) l 0.
Proof.
  induction l as [|x l IH]; intros [|off] a; simpl; try reflexivity.
  - destruct a; reflexivity.
  - apply IH.
Qed.

Lemma bidx_ref : forall src idx, length src <= length idx -> bidx src idx = bcast_ref src idx.
Proof.
  intros src idx H. unfold bidx, bcast_ref.
  rewrite map_combine_seq by (rewrite skipn_length; lia).
  apply map_ext. intros a. rewrite nth_skipn'. reflexivity.
Qed.

Lemma bcast_into_length : forall src tgt, bcast_into src tgt -> length src <= length tgt.
Proof.
  intros src tgt (pre & tl & -> & H). rewrite app_length, (Forall2_len _ _ _ H). lia.
Qed.

(** The reference reads in bounds of the operand, per coordinate. *)
Theorem bcast_ref_in_bounds : forall src tgt idx,
  bcast_into src tgt -> in_bounds idx tgt -> in_bounds (bcast_ref src idx) src.
Proof.
  intros src tgt idx Hb Hidx. rewrite <- bidx_ref.
  - eapply bidx_in_bounds; eassumption.
  - rewrite (in_bounds_length _ _ Hidx). apply bcast_into_length. exact Hb.
Qed.

(** Reading a broadcast operand: what [expand] computes at [idx] is the
    operand's element at [bcast_ref src idx]. *)
Lemma expand_at : forall {V : Type} (t : tensor V) tgt d idx,
  bcast_into (t_shape t) tgt -> expand (t_shape t) tgt (t_data t) = Some d ->
  in_bounds idx tgt ->
  exists a, elem_at t (bcast_ref (t_shape t) idx) = Some a /\
            nth_error d (ravel tgt idx) = Some a.
Proof.
  intros V t tgt d idx Hb He Hidx. unfold expand in He.
  destruct (tabulate_opt_at _ _ _ He) as [_ Hat]. destruct (Hat idx Hidx) as (a & Ha & Hn).
  exists a. split; [|exact Hn].
  rewrite elem_at_read by (eapply bcast_ref_in_bounds; eassumption).
  rewrite <- bidx_ref; [exact Ha|].
  rewrite (in_bounds_length _ _ Hidx). apply bcast_into_length. exact Hb.
Qed.

Lemma expand_length : forall {V : Type} src tgt (data d : list V),
  expand src tgt data = Some d -> length d = prod tgt.
Proof. intros V src tgt data d H. unfold expand in H. apply (tabulate_opt_at _ _ _ H). Qed.

Lemma nth_error_zipw : forall {A B C : Type} (f : A -> B -> C) l1 l2 n a b,
  nth_error l1 n = Some a -> nth_error l2 n = Some b -> nth_error (zipw f l1 l2) n = Some (f a b).
Proof.
  unfold zipw. induction l1 as [|x l1 IH]; intros [|y l2] [|n] a b H1 H2; simpl in *;
    try discriminate.
  - injection H1 as <-. injection H2 as <-. reflexivity.
  - apply (IH l2 n a b H1 H2).
Qed.

Lemma zipw_length : forall {A B C : Type} (f : A -> B -> C) l1 l2,
  length l1 = length l2 -> length (zipw f l1 l2) = length l1.
Proof.
  intros. unfold zipw. rewrite map_length, combine_length. lia.
Qed.

Lemma nth_middle_len : forall (l1 l2 : list nat) y k, length l1 = k -> nth k (l1 ++ y :: l2) 0 = y.
Proof. intros l1 l2 y k <-. apply nth_middle. Qed.

Lemma replace_at_app_len : forall (l1 l2 : list nat) x y,
  replace_at (length l1) x (l1 ++ y :: l2) = l1 ++ x :: l2.
Proof. intros. apply replace_at_app. Qed.

Section Denote.
Context {V : Type} (P : prims V).

(** ** Elementwise binary operations with broadcasting (§4.6) *)

(** If both operands evaluate and the operation evaluates, its result has
    the broadcast shape, [prod] of it elements, and at every in-bounds
    coordinate [idx] it holds [op a b], where [a] and [b] are the operands'
    elements at the coordinates broadcasting maps [idx] to. *)
Definition binop_spec (op : binop) (t1 t2 t : tensor V) : Prop :=
  rbcast (t_shape t1) (t_shape t2) = Some (t_shape t) /\
  t_dtype t = t_dtype t1 /\ t_device t = t_device t1 /\
  length (t_data t) = prod (t_shape t) /\
  forall idx, in_bounds idx (t_shape t) ->
    exists a b, elem_at t1 (bcast_ref (t_shape t1) idx) = Some a /\
                elem_at t2 (bcast_ref (t_shape t2) idx) = Some b /\
                elem_at t idx = Some (p_binary P op a b).

Theorem eval_broadcast_binop_correct : forall rho E op e1 e2 t1 t2 t,
  eval P rho E e1 t1 -> eval P rho E e2 t2 -> eval P rho E (EBinary op e1 e2) t ->
  binop_spec op t1 t2 t.
Proof.
  intros rho E op e1 e2 t1 t2 t H1 H2 H.
  inversion H; subst;
    repeat match goal with
    | H : eval P _ _ (ENum _) _ |- _ => inversion H
    end.
  match goal with
  | Ha : eval P _ _ e1 ?u1, Hb : eval P _ _ e2 ?u2 |- _ =>
      rewrite (eval_deterministic P _ _ _ _ _ Ha H1) in *;
      rewrite (eval_deterministic P _ _ _ _ _ Hb H2) in *
  end.
  match goal with
  | Hs : rbcast _ _ = Some ?s, Hd1 : expand _ _ (t_data t1) = Some ?d1,
    Hd2 : expand _ _ (t_data t2) = Some ?d2 |- _ =>
      unfold binop_spec; destruct (rbcast_into _ _ _ Hs) as [Hb1 Hb2];
      pose proof (expand_length _ _ _ _ Hd1) as Hl1;
      pose proof (expand_length _ _ _ _ Hd2) as Hl2;
      simpl; split; [exact Hs|]; split; [reflexivity|]; split; [reflexivity|];
      split; [rewrite zipw_length; lia|];
      intros idx Hidx;
      destruct (expand_at t1 _ _ idx Hb1 Hd1 Hidx) as (a & Ha & Hna);
      destruct (expand_at t2 _ _ idx Hb2 Hd2 Hidx) as (b & Hb & Hnb)
  end.
  exists a, b. split; [exact Ha|]. split; [exact Hb|].
  rewrite elem_at_read by exact Hidx. simpl. apply nth_error_zipw; assumption.
Qed.

(** ** Matmul (§4.10), batched with broadcast batch dimensions *)

Definition vsum (xs : list V) : V := fold_left (p_add P) xs (p_zero P).

(** If both operands evaluate and the product evaluates, the operands have
    shapes [pa ++ [m; k]] and [pb ++ [k; n]], the batch shapes broadcast to
    [pc], the result has shape [pc ++ [m; n]] and [prod] of it elements,
    and at every in-bounds coordinate [b ++ [i; j]] it holds
    [Σ_{kk < k} A(kk) * B(kk)] (summed in the order kk = 0, 1, ...), where
    [A(kk)] is the left operand's element at [bcast_ref pa b ++ [i; kk]]
    and [B(kk)] the right operand's at [bcast_ref pb b ++ [kk; j]]. *)
Definition matmul_spec (t1 t2 t : tensor V) : Prop :=
  exists pa pb pc m k n,
    t_shape t1 = pa ++ [m; k] /\ t_shape t2 = pb ++ [k; n] /\
    rbcast pa pb = Some pc /\ t_shape t = pc ++ [m; n] /\
    t_dtype t = t_dtype t1 /\ t_device t = t_device t1 /\
    length (t_data t) = prod (t_shape t) /\
    forall b i j, in_bounds b pc -> i < m -> j < n ->
      exists A B : nat -> V,
        (forall kk, kk < k -> elem_at t1 (bcast_ref pa b ++ [i; kk]) = Some (A kk)) /\
        (forall kk, kk < k -> elem_at t2 (bcast_ref pb b ++ [kk; j]) = Some (B kk)) /\
        elem_at t (b ++ [i; j]) = Some (vsum (map (fun kk => p_mul P (A kk) (B kk)) (seq 0 k))).

Theorem eval_matmul_correct : forall rho E e1 e2 t1 t2 t,
  eval P rho E e1 t1 -> eval P rho E e2 t2 -> eval P rho E (EMatmul e1 e2) t ->
  matmul_spec t1 t2 t.
Proof.
  intros rho E e1 e2 t1 t2 t H1 H2 H.
  inversion H; subst.
  match goal with
  | Ha : eval P _ _ e1 ?u1, Hb : eval P _ _ e2 ?u2 |- _ =>
      rewrite (eval_deterministic P _ _ _ _ _ Ha H1) in *;
      rewrite (eval_deterministic P _ _ _ _ _ Hb H2) in *
  end.
  rename pa into pa0, pb into pb0, pc into pc0, m into m0, k into k0, n into n0.
  unfold matmul_spec. exists pa0, pb0, pc0, m0, k0, n0. simpl.
  match goal with
  | Hs1 : t_shape t1 = _, Hs2 : t_shape t2 = _, Hpc : rbcast _ _ = Some _,
    Hd : matmul_data _ _ _ _ _ _ _ _ _ = Some ?d |- _ =>
      split; [exact Hs1|]; split; [exact Hs2|]; split; [exact Hpc|];
      split; [reflexivity|]; split; [reflexivity|]; split; [reflexivity|];
      rename Hd into Hmm; rename Hpc into Hrb; rename d into dout;
      rename Hs1 into HS1; rename Hs2 into HS2
  end.
  destruct (rbcast_into _ _ _ Hrb) as [Hba Hbb].
  unfold matmul_data in Hmm. destruct (tabulate_opt_at _ _ _ Hmm) as [Hl Hat].
  split; [exact Hl|].
  intros b i j Hb Hi Hj.
  assert (Hidx : in_bounds (b ++ [i; j]) (pc0 ++ [m0; n0])).
  { apply in_bounds_app; [exact Hb | repeat constructor; assumption]. }
  destruct (Hat _ Hidx) as (v & Hf & Hn).
  assert (Hlb : length b = length pc0) by (apply in_bounds_length; exact Hb).
  rewrite <- Hlb in Hf. destruct (firstn_nth_app2 b i j) as (E1 & E2 & E3).
  rewrite E1, E2, E3 in Hf.
  assert (Ra : bidx pa0 b = bcast_ref pa0 b).
  { apply bidx_ref. rewrite Hlb. apply bcast_into_length. exact Hba. }
  assert (Rb : bidx pb0 b = bcast_ref pb0 b).
  { apply bidx_ref. rewrite Hlb. apply bcast_into_length. exact Hbb. }
  rewrite Ra, Rb in Hf.
  set (A := fun kk => nth (ravel (pa0 ++ [m0; k0]) (bcast_ref pa0 b ++ [i; kk])) (t_data t1) v).
  set (B := fun kk => nth (ravel (pb0 ++ [k0; n0]) (bcast_ref pb0 b ++ [kk; j])) (t_data t2) v).
  assert (Ia : forall kk, kk < k0 -> in_bounds (bcast_ref pa0 b ++ [i; kk]) (pa0 ++ [m0; k0])).
  { intros kk Hk. apply in_bounds_app; [eapply bcast_ref_in_bounds; eassumption|].
    repeat constructor; assumption. }
  assert (Ib : forall kk, kk < k0 -> in_bounds (bcast_ref pb0 b ++ [kk; j]) (pb0 ++ [k0; n0])).
  { intros kk Hk. apply in_bounds_app; [eapply bcast_ref_in_bounds; eassumption|].
    repeat constructor; assumption. }
  destruct (all_some (map _ (seq 0 k0))) as [prods|] eqn:Hprods in Hf; [|discriminate].
  injection Hf as Hf.
  (* every read succeeded *)
  assert (Rd : forall kk, kk < k0 ->
    nth_error (t_data t1) (ravel (pa0 ++ [m0; k0]) (bcast_ref pa0 b ++ [i; kk])) = Some (A kk) /\
    nth_error (t_data t2) (ravel (pb0 ++ [k0; n0]) (bcast_ref pb0 b ++ [kk; j])) = Some (B kk)).
  { intros kk Hk.
    destruct (all_some_In _ _ _ kk Hprods) as [w Hw]; [apply in_seq; lia|].
    destruct (nth_error (t_data t1) _) as [x|] eqn:Ex; [|discriminate].
    destruct (nth_error (t_data t2) _) as [y|] eqn:Ey; [|discriminate].
    split.
    - f_equal. symmetry. subst A. simpl. apply nth_error_nth. exact Ex.
    - f_equal. symmetry. subst B. simpl. apply nth_error_nth. exact Ey. }
  exists A, B. split; [|split].
  - intros kk Hk. rewrite elem_at_read by (rewrite HS1; apply Ia; exact Hk).
    rewrite HS1. apply Rd. exact Hk.
  - intros kk Hk. rewrite elem_at_read by (rewrite HS2; apply Ib; exact Hk).
    rewrite HS2. apply Rd. exact Hk.
  - rewrite elem_at_read by exact Hidx. simpl. rewrite Hn, <- Hf. f_equal. unfold vsum.
    f_equal.
    assert (Eq : all_some (map (fun kk =>
        match nth_error (t_data t1) (ravel (pa0 ++ [m0; k0]) (bcast_ref pa0 b ++ [i; kk])),
              nth_error (t_data t2) (ravel (pb0 ++ [k0; n0]) (bcast_ref pb0 b ++ [kk; j])) with
        | Some x, Some y => Some (p_mul P x y)
        | _, _ => None
        end) (seq 0 k0)) = Some (map (fun kk => p_mul P (A kk) (B kk)) (seq 0 k0))).
    { apply all_some_map_eq. intros kk Hk. apply in_seq in Hk.
      destruct (Rd kk ltac:(lia)) as [-> ->]. reflexivity. }
    rewrite Hprods in Eq. injection Eq as Eq. exact Eq.
Qed.

(** ** Reductions over one axis (§4.16) *)

Lemma resolve_axis_lt : forall n a k, resolve_axis n a = Some k -> k < n.
Proof.
  unfold resolve_axis. intros n a k H.
  destruct ((0 <=? a)%Z && (a <? Z.of_nat n)%Z) eqn:E1.
  - injection H as <-. apply andb_prop in E1 as [E1 E2].
    apply Z.leb_le in E1. apply Z.ltb_lt in E2. lia.
  - destruct ((- Z.of_nat n <=? a)%Z && (a <? 0)%Z) eqn:E2; [|discriminate].
    injection H as <-. apply andb_prop in E2 as [E2 E3].
    apply Z.leb_le in E2. apply Z.ltb_lt in E3. lia.
Qed.

Lemma existsb_one : forall i k, existsb (Nat.eqb i) [k] = Nat.eqb i k.
Proof. intros. simpl. apply orb_false_r. Qed.

Lemma reduced_dims_past : forall k s i, k < i -> reduced_dims [k] i s = [].
Proof.
  intros k. induction s as [|d s IH]; intros i Hi; simpl; [reflexivity|].
  rewrite orb_false_r. destruct (Nat.eqb_spec i k); [lia|]. apply IH. lia.
Qed.

Lemma reduce_dims_past : forall k kd s i, k < i -> reduce_dims 1 [k] kd i s = s.
Proof.
  intros k kd. induction s as [|d s IH]; intros i Hi; simpl; [reflexivity|].
  rewrite orb_false_r. destruct (Nat.eqb_spec i k); [lia|]. f_equal. apply IH. lia.
Qed.

Lemma merge_idx_past : forall k kd s i o r, k < i -> length o = length s ->
  merge_idx [k] kd i s o r = o.
Proof.
  intros k kd. induction s as [|d s IH]; intros i o r Hi Hl; simpl.
  - destruct o; [reflexivity | discriminate].
  - rewrite orb_false_r. destruct (Nat.eqb_spec i k); [lia|].
    destruct o as [|x o]; [discriminate|]. simpl. f_equal. apply IH; [lia | simpl in Hl; lia].
Qed.

Lemma reduced_dims_one : forall k s1 d s2 i, i + length s1 = k ->
  reduced_dims [k] i (s1 ++ d :: s2) = [d].
Proof.
  intros k. induction s1 as [|x s1 IH]; intros d s2 i Hi; simpl in *.
  - rewrite orb_false_r. destruct (Nat.eqb_spec i k); [|lia].
    f_equal. apply reduced_dims_past. lia.
  - rewrite orb_false_r. destruct (Nat.eqb_spec i k); [lia|]. apply IH. lia.
Qed.

Lemma reduce_dims_one : forall k kd s1 d s2 i, i + length s1 = k ->
  reduce_dims 1 [k] kd i (s1 ++ d :: s2) = s1 ++ (if kd then [1] else []) ++ s2.
Proof.
  intros k kd. induction s1 as [|x s1 IH]; intros d s2 i Hi; simpl in *.
  - rewrite orb_false_r. destruct (Nat.eqb_spec i k); [|lia].
    destruct kd; simpl; [f_equal|]; apply reduce_dims_past; lia.
  - rewrite orb_false_r. destruct (Nat.eqb_spec i k); [lia|]. f_equal. apply IH. lia.
Qed.

Lemma merge_idx_one : forall k kd s1 d s2 i o1 o2 r, i + length s1 = k ->
  length o1 = length s1 -> length o2 = length s2 ->
  merge_idx [k] kd i (s1 ++ d :: s2) (o1 ++ (if kd then [0] else []) ++ o2) [r] = o1 ++ r :: o2.
Proof.
  intros k kd. induction s1 as [|x s1 IH]; intros d s2 i o1 o2 r Hi Hl1 Hl2; simpl in *.
  - destruct o1; [|discriminate]. rewrite orb_false_r.
    destruct (Nat.eqb_spec i k); [|lia]. simpl. f_equal.
    destruct kd; simpl; apply merge_idx_past; lia.
  - rewrite orb_false_r. destruct (Nat.eqb_spec i k); [lia|].
    destruct o1 as [|y o1]; [discriminate|]. simpl. f_equal. apply IH; simpl in *; lia.
Qed.

(** If the operand evaluates and the reduction over the single axis [ax]
    evaluates, [ax] resolves to a position [k], the operand's shape is
    [pre_s ++ d :: post_s] with [length pre_s = k], the result's shape is
    [pre_s ++ post_s] ([pre_s ++ [1] ++ post_s] with keepdims) and it has
    [prod] of it elements, and at every in-bounds coordinate
    [pre ++ post] ([pre ++ [0] ++ post] with keepdims) it holds
    [fin op d (fold (step op) [A 0; ...; A (d-1)] (init op))], where [A r]
    is the operand's element at [pre ++ r :: post]. *)
Definition reduce_axis_spec (op : redop) (ax : Z) (kd : bool) (t0 t : tensor V) : Prop :=
  exists k pre_s d post_s,
    resolve_axis (length (t_shape t0)) ax = Some k /\
    t_shape t0 = pre_s ++ d :: post_s /\ length pre_s = k /\
    t_shape t = pre_s ++ (if kd then [1] else []) ++ post_s /\
    t_dtype t = t_dtype t0 /\ t_device t = t_device t0 /\
    length (t_data t) = prod (t_shape t) /\
    forall pre post, in_bounds pre pre_s -> in_bounds post post_s ->
      exists A : nat -> V,
        (forall r, r < d -> elem_at t0 (pre ++ r :: post) = Some (A r)) /\
        elem_at t (pre ++ (if kd then [0] else []) ++ post) =
          Some (p_red_fin P op d
                  (fold_left (p_red_step P op) (map A (seq 0 d)) (p_red_init P op))).

Theorem eval_reduce_axis_correct : forall rho E op ax kd e t0 t,
  eval P rho E e t0 -> eval P rho E (EReduce op (Some [ax]) kd e) t ->
  reduce_axis_spec op ax kd t0 t.
Proof.
  intros rho E op ax kd e t0 t H0 H.
  inversion H; subst.
  match goal with
  | Ha : eval P _ _ e ?u |- _ => rewrite (eval_deterministic P _ _ _ _ _ Ha H0) in *
  end.
  match goal with
  | Hr : resolve_axes _ _ = Some _, Hd : reduce_data _ _ _ _ _ _ = Some ?d |- _ =>
      rename Hr into HR; rename Hd into HD; rename d into dout
  end.
  simpl in HR. destruct (resolve_axis (length (t_shape t0)) ax) as [k|] eqn:Hk; [|discriminate].
  injection HR as <-.
  pose proof (resolve_axis_lt _ _ _ Hk) as Hkl.
  destruct (nth_error_lt (t_shape t0) k Hkl) as [d Hd].
  destruct (nth_error_split _ _ Hd) as (pre_s & post_s & HS & Hpl).
  unfold reduce_axis_spec. exists k, pre_s, d, post_s. simpl.
  assert (HO : reduce_dims 1 [k] kd 0 (t_shape t0) = pre_s ++ (if kd then [1] else []) ++ post_s).
  { rewrite HS. apply reduce_dims_one. lia. }
  split; [exact Hk|]. split; [exact HS|]. split; [exact Hpl|].
  split; [exact HO|]. split; [reflexivity|]. split; [reflexivity|].
  unfold reduce_data in HD. cbv zeta in HD.
  destruct (tabulate_opt_at _ _ _ HD) as [Hl Hat].
  split; [exact Hl|].
  intros pre post Hpre Hpost.
  assert (Hidx : in_bounds (pre ++ (if kd then [0] else []) ++ post)
                           (reduce_dims 1 [k] kd 0 (t_shape t0))).
  { rewrite HO. apply in_bounds_app; [exact Hpre|].
    apply in_bounds_app; [|exact Hpost]. destruct kd; repeat constructor. }
  destruct (Hat _ Hidx) as (v & Hf & Hn). cbv beta in Hf.
  assert (Hsub : reduced_dims [k] 0 (t_shape t0) = [d]).
  { rewrite HS. apply reduced_dims_one. lia. }
  assert (Hm : forall r, merge_idx [k] kd 0 (t_shape t0) (pre ++ (if kd then [0] else []) ++ post)
                                   (unravel [d] r) = pre ++ r :: post).
  { intros r. cbn [unravel prod]. rewrite Nat.div_1_r, HS. apply merge_idx_one;
      [lia | apply (in_bounds_length _ _ Hpre) |
       apply (in_bounds_length _ _ Hpost)]. }
  rewrite Hsub in Hf. replace (prod [d]) with d in Hf by (simpl; lia).
  assert (Hin : forall r, r < d -> in_bounds (pre ++ r :: post) (t_shape t0)).
  { intros r Hr. rewrite HS. apply in_bounds_app; [exact Hpre|]. constructor; assumption. }
  set (A := fun r => nth (ravel (t_shape t0) (pre ++ r :: post)) (t_data t0) v).
  assert (Rd : forall r, r < d -> nth_error (t_data t0) (ravel (t_shape t0) (pre ++ r :: post)) = Some (A r)).
  { intros r Hr. apply nth_error_nth'. unfold elem_at in *.
    destruct (all_some (map _ (seq 0 d))) as [xs|] eqn:Hxs in Hf; [|discriminate].
    destruct (all_some_In _ _ _ r Hxs) as [w Hw]; [apply in_seq; lia|].
    rewrite Hm in Hw. apply nth_error_Some. rewrite Hw. discriminate. }
  exists A. split.
  - intros r Hr. rewrite elem_at_read by (apply Hin; exact Hr). apply Rd. exact Hr.
  - rewrite elem_at_read by exact Hidx. cbn [t_data t_shape].
    rewrite Hn, <- Hf. f_equal.
    rewrite (all_some_map_eq _ A).
    + reflexivity.
    + intros r Hr. apply in_seq in Hr. rewrite Hm. apply Rd. lia.
Qed.

(** [reduce_sum] over one axis is the instance [op = RSum]: the sum is the
    fold of [p_red_step RSum] from [p_red_init RSum], finished by
    [p_red_fin RSum d] (the identity in any instance that models a plain
    sum). *)
Corollary eval_reduce_sum_correct : forall rho E ax kd e t0 t,
  eval P rho E e t0 -> eval P rho E (EReduce RSum (Some [ax]) kd e) t ->
  reduce_axis_spec RSum ax kd t0 t.
Proof. intros. eapply eval_reduce_axis_correct; eassumption. Qed.

(** ** Well-typed instances
    For a well-typed operation (under a valuation satisfying Φ and an
    environment with the context's types), the operands and the operation
    evaluate, the result has the operation's type ([type_soundness]), and
    it meets the reference denotation above. *)

Theorem typed_binop_correct : forall Delta Phi G op e1 e2 ty rho E,
  (forall n, e1 <> ENum n) -> (forall n, e2 <> ENum n) ->
  synth Delta Phi G (EBinary op e1 e2) ty -> Phi rho -> env_ok rho G E ->
  exists t1 t2 t, eval P rho E e1 t1 /\ eval P rho E e2 t2 /\
    eval P rho E (EBinary op e1 e2) t /\ val_has_type rho t ty /\ binop_spec op t1 t2 t.
Proof.
  intros Delta Phi G op e1 e2 ty rho E Hn1 Hn2 Hs HPhi HE.
  destruct (type_soundness P _ _ _ _ _ rho E Hs HPhi HE) as (t & Ev & Ht).
  inversion Hs; subst; [| exfalso; eapply Hn2; reflexivity | exfalso; eapply Hn1; reflexivity].
  match goal with
  | Ha : synth _ _ _ e1 _, Hb : synth _ _ _ e2 _ |- _ =>
      destruct (type_soundness P _ _ _ _ _ rho E Ha HPhi HE) as (t1 & Ev1 & _);
      destruct (type_soundness P _ _ _ _ _ rho E Hb HPhi HE) as (t2 & Ev2 & _)
  end.
  exists t1, t2, t. split; [exact Ev1|]. split; [exact Ev2|]. split; [exact Ev|].
  split; [exact Ht|]. apply (eval_broadcast_binop_correct rho E op e1 e2); assumption.
Qed.

Theorem typed_matmul_correct : forall Delta Phi G e1 e2 ty rho E,
  synth Delta Phi G (EMatmul e1 e2) ty -> Phi rho -> env_ok rho G E ->
  exists t1 t2 t, eval P rho E e1 t1 /\ eval P rho E e2 t2 /\
    eval P rho E (EMatmul e1 e2) t /\ val_has_type rho t ty /\ matmul_spec t1 t2 t.
Proof.
  intros Delta Phi G e1 e2 ty rho E Hs HPhi HE.
  destruct (type_soundness P _ _ _ _ _ rho E Hs HPhi HE) as (t & Ev & Ht).
  inversion Hs; subst.
  match goal with
  | Ha : synth _ _ _ e1 _, Hb : synth _ _ _ e2 _ |- _ =>
      destruct (type_soundness P _ _ _ _ _ rho E Ha HPhi HE) as (t1 & Ev1 & _);
      destruct (type_soundness P _ _ _ _ _ rho E Hb HPhi HE) as (t2 & Ev2 & _)
  end.
  exists t1, t2, t. split; [exact Ev1|]. split; [exact Ev2|]. split; [exact Ev|].
  split; [exact Ht|]. apply (eval_matmul_correct rho E e1 e2); assumption.
Qed.

Theorem typed_reduce_axis_correct : forall Delta Phi G op ax kd e ty rho E,
  synth Delta Phi G (EReduce op (Some [ax]) kd e) ty -> Phi rho -> env_ok rho G E ->
  exists t0 t, eval P rho E e t0 /\ eval P rho E (EReduce op (Some [ax]) kd e) t /\
    val_has_type rho t ty /\ reduce_axis_spec op ax kd t0 t.
Proof.
  intros Delta Phi G op ax kd e ty rho E Hs HPhi HE.
  destruct (type_soundness P _ _ _ _ _ rho E Hs HPhi HE) as (t & Ev & Ht).
  inversion Hs; subst.
  match goal with
  | Ha : synth _ _ _ e _ |- _ =>
      destruct (type_soundness P _ _ _ _ _ rho E Ha HPhi HE) as (t0 & Ev0 & _)
  end.
  exists t0, t. split; [exact Ev0|]. split; [exact Ev|]. split; [exact Ht|].
  apply (eval_reduce_axis_correct rho E op ax kd e); assumption.
Qed.

(** ** Softmax and log_softmax along one axis (§4.21) *)

(** The spec's formula (§5), written over a row [A 0, ..., A (d-1)]:
    [m] is the row's maximum as [reduce_max] computes it, [z] the sum of
    [exp (A r - m)] as [reduce_sum] computes it (both in the order
    r = 0, 1, ...); softmax at [i] is [exp (A i - m) / z], log_softmax is
    [(A i - m) - log z].  Every operation is a [prims] field. *)
Definition softmax_ref (op : smop) (d : nat) (A : nat -> V) (i : nat) : V :=
  let m := p_red_fin P RMax d
             (fold_left (p_red_step P RMax) (map A (seq 0 d)) (p_red_init P RMax)) in
  let z := p_red_fin P RSum d
             (fold_left (p_red_step P RSum)
                (map (fun r => p_unary P UExp (p_binary P BSub (A r) m)) (seq 0 d))
                (p_red_init P RSum)) in
  match op with
  | SSoftmax => p_binary P BDiv (p_unary P UExp (p_binary P BSub (A i) m)) z
  | SLogSoftmax => p_binary P BSub (p_binary P BSub (A i) m) (p_unary P ULog z)
  end.

(** If the operand evaluates and softmax (log_softmax) along [ax]
    evaluates, [ax] resolves to a position [k], the operand's shape is
    [pre_s ++ d :: post_s] with [length pre_s = k], the result has the
    operand's shape, dtype and device and [prod] of it elements, and for
    every in-bounds [pre], [post] there is the row [A] with
    [elem_at t0 (pre ++ r :: post) = Some (A r)] for every [r < d], and
    at every [i < d] the result holds [softmax_ref op d A i]. *)
Definition softmax_spec (op : smop) (ax : Z) (t0 t : tensor V) : Prop :=
  exists k pre_s d post_s,
    resolve_axis (length (t_shape t0)) ax = Some k /\
    t_shape t0 = pre_s ++ d :: post_s /\ length pre_s = k /\
    t_shape t = t_shape t0 /\
    t_dtype t = t_dtype t0 /\ t_device t = t_device t0 /\
    length (t_data t) = prod (t_shape t) /\
    forall pre post, in_bounds pre pre_s -> in_bounds post post_s ->
      exists A : nat -> V,
        (forall r, r < d -> elem_at t0 (pre ++ r :: post) = Some (A r)) /\
        (forall i, i < d -> elem_at t (pre ++ i :: post) = Some (softmax_ref op d A i)).

Lemma softmax_val_ref : forall op d (A : nat -> V) i,
  softmax_val P op d (map A (seq 0 d)) (A i) = softmax_ref op d A i.
Proof.
  intros op d A i. unfold softmax_val, softmax_ref. rewrite map_map. reflexivity.
Qed.

Theorem eval_softmax_correct : forall rho E op ax e t0 t,
  eval P rho E e t0 -> eval P rho E (ESoftmax op ax e) t ->
  softmax_spec op ax t0 t.
Proof.
  intros rho E op ax e t0 t H0 H.
  inversion H; subst.
  match goal with
  | Ha : eval P _ _ e ?u |- _ => rewrite (eval_deterministic P _ _ _ _ _ Ha H0) in *
  end.
  match goal with
  | Hr : resolve_axis _ _ = Some ?k, Hd : softmax_data _ _ _ _ _ = Some ?d |- _ =>
      rename Hr into Hk; rename Hd into HD; rename d into dout; rename k into kk
  end.
  pose proof (resolve_axis_lt _ _ _ Hk) as Hkl.
  destruct (nth_error_lt (t_shape t0) kk Hkl) as [d Hd].
  destruct (nth_error_split _ _ Hd) as (pre_s & post_s & HS & Hpl).
  unfold softmax_spec. exists kk, pre_s, d, post_s. simpl.
  split; [exact Hk|]. split; [exact HS|]. split; [exact Hpl|].
  split; [reflexivity|]. split; [reflexivity|]. split; [reflexivity|].
  unfold softmax_data in HD.
  destruct (tabulate_opt_at _ _ _ HD) as [Hl Hat].
  split; [exact Hl|].
  intros pre post Hpre Hpost.
  assert (Hnth : nth kk (t_shape t0) 0 = d).
  { rewrite HS. apply nth_middle_len. exact Hpl. }
  assert (Hin : forall r, r < d -> in_bounds (pre ++ r :: post) (t_shape t0)).
  { intros r Hr. rewrite HS. apply in_bounds_app; [exact Hpre|]. constructor; assumption. }
  assert (Hrep : forall i r, replace_at kk r (pre ++ i :: post) = pre ++ r :: post).
  { intros i r. rewrite <- Hpl, <- (in_bounds_length _ _ Hpre). apply replace_at_app_len. }
  (* the whole row is read successfully, at a fixed in-bounds coordinate
     of the row: use it to name the row *)
  destruct (Nat.eq_dec d 0) as [Hd0|Hd0].
  { exists (fun _ => p_zero P). split; intros r Hr; lia. }
  destruct (Hat _ (Hin 0 ltac:(lia))) as (v0 & Hf0 & _).
  set (A := fun r => nth (ravel (t_shape t0) (pre ++ r :: post)) (t_data t0) v0).
  assert (Rd : forall r, r < d ->
            nth_error (t_data t0) (ravel (t_shape t0) (pre ++ r :: post)) = Some (A r)).
  { intros r Hr. destruct (Hat _ (Hin r Hr)) as (w & Hw & _). cbv beta in Hw.
    destruct (nth_error (t_data t0) (ravel (t_shape t0) (pre ++ r :: post))) as [x|] eqn:Ex.
    - f_equal. subst A. cbv beta. symmetry. apply nth_error_nth. exact Ex.
    - exfalso. destruct (all_some _) in Hw; discriminate Hw. }
  exists A. split.
  - intros r Hr. rewrite elem_at_read by (apply Hin; exact Hr). apply Rd. exact Hr.
  - intros i Hi. destruct (Hat _ (Hin i Hi)) as (v & Hf & Hn).
    rewrite elem_at_read by (cbn [t_shape]; apply Hin; exact Hi). cbn [t_data t_shape].
    rewrite Hn, <- Hf, Hnth, (Rd i Hi).
    rewrite (all_some_map_eq _ A).
    + rewrite softmax_val_ref. reflexivity.
    + intros r Hr. apply in_seq in Hr. rewrite Hrep. apply Rd. lia.
Qed.

Theorem typed_softmax_correct : forall Delta Phi G op ax e ty rho E,
  synth Delta Phi G (ESoftmax op ax e) ty -> Phi rho -> env_ok rho G E ->
  exists t0 t, eval P rho E e t0 /\ eval P rho E (ESoftmax op ax e) t /\
    val_has_type rho t ty /\ softmax_spec op ax t0 t.
Proof.
  intros Delta Phi G op ax e ty rho E Hs HPhi HE.
  destruct (type_soundness P _ _ _ _ _ rho E Hs HPhi HE) as (t & Ev & Ht).
  inversion Hs; subst.
  match goal with
  | Ha : synth _ _ _ e _ |- _ =>
      destruct (type_soundness P _ _ _ _ _ rho E Ha HPhi HE) as (t0 & Ev0 & _)
  end.
  exists t0, t. split; [exact Ev0|]. split; [exact Ev|]. split; [exact Ht|].
  apply (eval_softmax_correct rho E op ax e); assumption.
Qed.

End Denote.

(** ** Transpose and reductions over several or all axes, by coordinates
    [transpose_data] and [reduce_data] read their operand at the linear
    index [ravel s idx'] of an index [idx'] computed from the result
    coordinate.  The theorems below restate both per coordinate: every
    operand read is an [elem_at] read, i.e. in bounds on every axis. *)

(** Reductions over all axes: [axes = None] resolves to [seq 0 n]; every
    position is reduced. *)
Lemma existsb_seq_in : forall n i, i < n -> existsb (Nat.eqb i) (seq 0 n) = true.
Proof. intros n i Hi. apply existsb_eqb_In. apply in_seq. lia. Qed.

Lemma reduced_dims_all : forall n s i, i + length s <= n -> reduced_dims (seq 0 n) i s = s.
Proof.
  intros n. induction s as [|d s IH]; intros i Hi; simpl in *; [reflexivity|].
  rewrite existsb_seq_in by lia. f_equal. apply IH. lia.
Qed.

Lemma reduce_dims_all : forall n kd s i, i + length s <= n ->
  reduce_dims 1 (seq 0 n) kd i s = if kd then repeat 1 (length s) else [].
Proof.
  intros n kd. induction s as [|d s IH]; intros i Hi; simpl in *; [destruct kd; reflexivity|].
  rewrite existsb_seq_in by lia. rewrite IH by lia. destruct kd; reflexivity.
Qed.

Lemma merge_idx_all : forall n kd s i oidx ridx, i + length s <= n -> length ridx = length s ->
  merge_idx (seq 0 n) kd i s oidx ridx = ridx.
Proof.
  intros n kd. induction s as [|d s IH]; intros i oidx ridx Hi Hl; simpl in *.
  - destruct ridx; [reflexivity | discriminate].
  - rewrite existsb_seq_in by lia. destruct ridx as [|r ridx]; [discriminate|].
    simpl. f_equal. apply IH; simpl in Hl; lia.
Qed.

Section DenoteMore.
Context {V : Type} (P : prims V).

(** ** Transpose (§4.11): swaps the last two axes *)

(** If the operand evaluates and its transpose evaluates, the operand has
    shape [pre ++ [x; y]], the result shape [pre ++ [y; x]] and [prod] of
    it elements, and at every in-bounds coordinate [b ++ [j; i]] of the
    result it holds the operand's element at [b ++ [i; j]]. *)
Definition transpose_spec (t0 t : tensor V) : Prop :=
  exists pre x y,
    t_shape t0 = pre ++ [x; y] /\ t_shape t = pre ++ [y; x] /\
    t_dtype t = t_dtype t0 /\ t_device t = t_device t0 /\
    length (t_data t) = prod (t_shape t) /\
    forall b j i, in_bounds b pre -> j < y -> i < x ->
      exists a, elem_at t0 (b ++ [i; j]) = Some a /\ elem_at t (b ++ [j; i]) = Some a.

Theorem eval_transpose_correct : forall rho E e t0 t,
  eval P rho E e t0 -> eval P rho E (ETranspose e) t -> transpose_spec t0 t.
Proof.
  intros rho E e t0 t H0 H.
  inversion H; subst.
  match goal with
  | Ha : eval P _ _ e ?u |- _ => rewrite (eval_deterministic P _ _ _ _ _ Ha H0) in *
  end.
  match goal with
  | Hs : t_shape t0 = _, Hd : transpose_data _ _ _ _ = Some _ |- _ =>
      rename Hs into HS; rename Hd into HD
  end.
  unfold transpose_spec. exists pre, x, y. simpl.
  split; [exact HS|]. split; [reflexivity|]. split; [reflexivity|]. split; [reflexivity|].
  unfold transpose_data in HD. destruct (tabulate_opt_at _ _ _ HD) as [Hl Hat].
  split; [exact Hl|].
  intros b j i Hb Hj Hi.
  assert (Hidx : in_bounds (b ++ [j; i]) (pre ++ [y; x])).
  { apply in_bounds_app; [exact Hb | repeat constructor; assumption]. }
  assert (Hsrc : in_bounds (b ++ [i; j]) (t_shape t0)).
  { rewrite HS. apply in_bounds_app; [exact Hb | repeat constructor; assumption]. }
  destruct (Hat _ Hidx) as (v & Hf & Hn). rewrite swap_last2_app in Hf.
  exists v. split.
  - rewrite elem_at_read by exact Hsrc. rewrite HS. exact Hf.
  - rewrite elem_at_read by exact Hidx. exact Hn.
Qed.

Theorem typed_transpose_correct : forall Delta Phi G e ty rho E,
  synth Delta Phi G (ETranspose e) ty -> Phi rho -> env_ok rho G E ->
  exists t0 t, eval P rho E e t0 /\ eval P rho E (ETranspose e) t /\
    val_has_type rho t ty /\ transpose_spec t0 t.
Proof.
  intros Delta Phi G e ty rho E Hs HPhi HE.
  destruct (type_soundness P _ _ _ _ _ rho E Hs HPhi HE) as (t & Ev & Ht).
  inversion Hs; subst.
  match goal with
  | Ha : synth _ _ _ e _ |- _ =>
      destruct (type_soundness P _ _ _ _ _ rho E Ha HPhi HE) as (t0 & Ev0 & _)
  end.
  exists t0, t. split; [exact Ev0|]. split; [exact Ev|]. split; [exact Ht|].
  apply (eval_transpose_correct rho E e); assumption.
Qed.

(** ** Reductions over any set of axes (§4.16) *)

(** If the operand evaluates and the reduction evaluates, the axes resolve
    to distinct positions [axs]; the result has shape
    [reduce_dims 1 axs kd 0 s] ([s] the operand's shape) and [prod] of it
    elements; and at every in-bounds result coordinate [oidx] it holds
    [fin op N (fold (step op) [A c_0; ...; A c_(N-1)] (init op))], where
    [c_0, ..., c_(N-1)] are the coordinates of the reduced dimensions
    [sub = reduced_dims axs 0 s] in row-major order ([N = prod sub]), and
    [A ridx] is the operand's element at the coordinate [merge_idx] builds
    from [oidx] (kept axes) and [ridx] (reduced axes), read with
    [elem_at] (so that coordinate is in bounds). *)
Definition reduce_multi_spec (op : redop) (axes : option (list Z)) (kd : bool)
           (t0 t : tensor V) : Prop :=
  exists axs,
    resolve_axes (length (t_shape t0)) axes = Some axs /\ NoDup axs /\
    t_shape t = reduce_dims 1 axs kd 0 (t_shape t0) /\
    t_dtype t = t_dtype t0 /\ t_device t = t_device t0 /\
    length (t_data t) = prod (t_shape t) /\
    let sub := reduced_dims axs 0 (t_shape t0) in
    forall oidx, in_bounds oidx (t_shape t) ->
      exists A : list nat -> V,
        (forall ridx, in_bounds ridx sub ->
           elem_at t0 (merge_idx axs kd 0 (t_shape t0) oidx ridx) = Some (A ridx)) /\
        elem_at t oidx =
          Some (p_red_fin P op (prod sub)
                  (fold_left (p_red_step P op)
                     (map (fun r => A (unravel sub r)) (seq 0 (prod sub)))
                     (p_red_init P op))).

Theorem eval_reduce_correct : forall rho E op axes kd e t0 t,
  eval P rho E e t0 -> eval P rho E (EReduce op axes kd e) t ->
  reduce_multi_spec op axes kd t0 t.
Proof.
  intros rho E op axes kd e t0 t H0 H.
  inversion H; subst.
  match goal with
  | Ha : eval P _ _ e ?u |- _ => rewrite (eval_deterministic P _ _ _ _ _ Ha H0) in *
  end.
  match goal with
  | Hr : resolve_axes _ _ = Some _, Hd : reduce_data _ _ _ _ _ _ = Some ?d |- _ =>
      rename Hr into HR; rename Hd into HD; rename d into dout
  end.
  unfold reduce_multi_spec. exists axs. simpl.
  split; [exact HR|]. split; [assumption|].
  split; [reflexivity|]. split; [reflexivity|]. split; [reflexivity|].
  unfold reduce_data in HD. cbv zeta in HD.
  destruct (tabulate_opt_at _ _ _ HD) as [Hl Hat].
  split; [exact Hl|]. cbv zeta.
  intros oidx Ho.
  set (s := t_shape t0) in *. set (sub := reduced_dims axs 0 s) in *.
  destruct (Hat _ Ho) as (v & Hf & Hn). cbv beta in Hf.
  destruct (all_some (map _ (seq 0 (prod sub)))) as [xs|] eqn:Hxs in Hf; [|discriminate].
  set (A := fun ridx => nth (ravel s (merge_idx axs kd 0 s oidx ridx)) (t_data t0) v).
  assert (Rd : forall ridx, in_bounds ridx sub ->
            nth_error (t_data t0) (ravel s (merge_idx axs kd 0 s oidx ridx)) = Some (A ridx)).
  { intros ridx Hr. apply nth_error_nth'.
    destruct (all_some_In _ _ _ (ravel sub ridx) Hxs) as [w Hw].
    { apply in_seq. pose proof (ravel_in_bounds _ _ Hr). lia. }
    rewrite unravel_ravel in Hw by exact Hr.
    apply nth_error_Some. rewrite Hw. discriminate. }
  exists A. split.
  - intros ridx Hr. rewrite elem_at_read.
    + apply Rd. exact Hr.
    + apply merge_idx_in_bounds; [exact Ho | exact Hr].
  - rewrite elem_at_read by exact Ho. cbn [t_data t_shape].
    rewrite Hn. f_equal.
    rewrite (all_some_map_eq _ (fun r => A (unravel sub r))) in Hxs.
    + injection Hxs as Hxs. subst xs. injection Hf as Hf. rewrite <- Hf. reflexivity.
    + intros r Hr. apply in_seq in Hr. apply Rd. apply unravel_in_bounds. lia.
Qed.

(** The reduction over all axes ([axes = None]): the result is the scalar
    (shape [[]], or [[1; ...; 1]] with keepdims) holding
    [fin op N (fold (step op) [A c_0; ...; A c_(N-1)] (init op))], where
    [c_0, ..., c_(N-1)] are all coordinates of the operand's shape [s] in
    row-major order ([N = prod s]) and [A c] is the operand's element at
    [c], read with [elem_at]. *)
Definition reduce_all_spec (op : redop) (kd : bool) (t0 t : tensor V) : Prop :=
  let s := t_shape t0 in
  t_shape t = (if kd then repeat 1 (length s) else []) /\
  t_dtype t = t_dtype t0 /\ t_device t = t_device t0 /\
  length (t_data t) = 1 /\
  exists A : list nat -> V,
    (forall c, in_bounds c s -> elem_at t0 c = Some (A c)) /\
    elem_at t (if kd then repeat 0 (length s) else []) =
      Some (p_red_fin P op (prod s)
              (fold_left (p_red_step P op)
                 (map (fun r => A (unravel s r)) (seq 0 (prod s)))
                 (p_red_init P op))).

Lemma prod_repeat_1 : forall n, prod (repeat 1 n) = 1.
Proof. induction n as [|n IH]; simpl; [reflexivity | lia]. Qed.

Lemma in_bounds_repeat_0 : forall n, in_bounds (repeat 0 n) (repeat 1 n).
Proof. unfold in_bounds. induction n; simpl; constructor; [lia | exact IHn]. Qed.

Corollary eval_reduce_all_correct : forall rho E op kd e t0 t,
  eval P rho E e t0 -> eval P rho E (EReduce op None kd e) t ->
  reduce_all_spec op kd t0 t.
Proof.
  intros rho E op kd e t0 t H0 H.
  destruct (eval_reduce_correct rho E op None kd e t0 t H0 H)
    as (axs & HR & _ & HS & Hdt & Hdev & Hl & Hat).
  simpl in HR. injection HR as <-.
  set (s := t_shape t0) in *.
  assert (HO : reduce_dims 1 (seq 0 (length s)) kd 0 s = if kd then repeat 1 (length s) else []).
  { apply reduce_dims_all. lia. }
  assert (Hsub : reduced_dims (seq 0 (length s)) 0 s = s) by (apply reduced_dims_all; lia).
  cbv zeta in Hat. rewrite Hsub in Hat.
  unfold reduce_all_spec. cbv zeta. fold s.
  rewrite HS, HO in *.
  split; [reflexivity|]. split; [exact Hdt|]. split; [exact Hdev|].
  split; [rewrite Hl; destruct kd; [apply prod_repeat_1 | reflexivity]|].
  assert (Ho : in_bounds (if kd then repeat 0 (length s) else [])
                         (if kd then repeat 1 (length s) else [])).
  { destruct kd; [apply in_bounds_repeat_0 | constructor]. }
  destruct (Hat _ Ho) as (A & HA & Hv).
  exists A. split; [|exact Hv].
  intros c Hc. rewrite <- (HA c Hc). f_equal. symmetry. apply merge_idx_all; [lia|].
  apply in_bounds_length. exact Hc.
Qed.

Theorem typed_reduce_correct : forall Delta Phi G op axes kd e ty rho E,
  synth Delta Phi G (EReduce op axes kd e) ty -> Phi rho -> env_ok rho G E ->
  exists t0 t, eval P rho E e t0 /\ eval P rho E (EReduce op axes kd e) t /\
    val_has_type rho t ty /\ reduce_multi_spec op axes kd t0 t.
Proof.
  intros Delta Phi G op axes kd e ty rho E Hs HPhi HE.
  destruct (type_soundness P _ _ _ _ _ rho E Hs HPhi HE) as (t & Ev & Ht).
  inversion Hs; subst.
  match goal with
  | Ha : synth _ _ _ e _ |- _ =>
      destruct (type_soundness P _ _ _ _ _ rho E Ha HPhi HE) as (t0 & Ev0 & _)
  end.
  exists t0, t. split; [exact Ev0|]. split; [exact Ev|]. split; [exact Ht|].
  apply (eval_reduce_correct rho E op axes kd e); assumption.
Qed.

End DenoteMore.
