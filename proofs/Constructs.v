(** * Constructs.v — value-level soundness of slice, concat, broadcast_to,
    permute, const, fill and iota

    Each lemma says: under a valuation satisfying Φ, for operands of the
    types in the rule's premises, the run-time checks of the evaluation rule
    hold, every (checked) read is in bounds, and the result has the type the
    rule gives. *)

From Coq Require Import List ZArith Lia Bool Permutation.
From ShapeML Require Import Syntax Normalize Broadcast Typing Semantics Bounds Reshape.
Import ListNotations.

(** ** Checked reads *)

Lemma in_bounds_z_of_nat : forall idx s,
  in_bounds idx s -> in_bounds_z (map Z.of_nat idx) s = true.
Proof.
  unfold in_bounds. intros idx s H. induction H as [|i d idx s Hi _ IH]; [reflexivity|].
  simpl. rewrite IH. apply andb_true_iff. split; [|reflexivity].
  apply andb_true_iff. split; [apply Z.leb_le; lia | apply Z.ltb_lt; lia].
Qed.

Lemma map_to_nat_of_nat : forall l, map Z.to_nat (map Z.of_nat l) = l.
Proof. induction l as [|x l IH]; simpl; [reflexivity|]. rewrite Nat2Z.id, IH. reflexivity. Qed.

Theorem read_at_some : forall {V : Type} s (data : list V) idx,
  in_bounds idx s -> length data = prod s ->
  exists v, read_at s data (map Z.of_nat idx) = Some v.
Proof.
  intros V s data idx Hb Hl. unfold read_at. rewrite in_bounds_z_of_nat by exact Hb.
  rewrite map_to_nat_of_nat. apply nth_error_lt. rewrite Hl. apply ravel_in_bounds. exact Hb.
Qed.

Lemma in_bounds_mid_inv : forall idx s1 x s2,
  in_bounds idx (s1 ++ x :: s2) ->
  exists i1 j i2, idx = i1 ++ j :: i2 /\ in_bounds i1 s1 /\ j < x /\ in_bounds i2 s2.
Proof.
  intros idx s1 x s2 H. destruct (in_bounds_app_inv _ _ _ H) as (i1 & r & -> & H1 & Hr).
  inversion Hr as [|j x' i2 s2' Hj H2]; subst. exists i1, j, i2. auto.
Qed.

Lemma in_bounds_mid : forall i1 j i2 s1 x s2,
  in_bounds i1 s1 -> j < x -> in_bounds i2 s2 -> in_bounds (i1 ++ j :: i2) (s1 ++ x :: s2).
Proof. intros. apply in_bounds_app; [assumption|]. constructor; assumption. Qed.

(** A shape of a type split at position [k]. *)
Lemma split_typed_shape : forall rho (sh : list nat) ds k dk,
  map Z.of_nat sh = eval_shape rho ds -> nth_error ds k = Some dk ->
  exists ds1 ds2 sh1 x sh2,
    ds = ds1 ++ dk :: ds2 /\ sh = sh1 ++ x :: sh2 /\
    length ds1 = k /\ length sh1 = k /\
    map Z.of_nat sh1 = eval_shape rho ds1 /\ Z.of_nat x = eval_dim rho dk /\
    map Z.of_nat sh2 = eval_shape rho ds2.
Proof.
  intros rho sh ds k dk Hsh Hk.
  destruct (nth_error_split _ _ Hk) as (ds1 & ds2 & -> & Hl).
  unfold eval_shape in Hsh. rewrite map_app in Hsh. cbn [map] in Hsh.
  destruct (map_eq_app _ _ _ _ Hsh) as (sh1 & r & -> & H1 & Hr).
  destruct (map_eq_cons _ _ Hr) as (x & sh2 & -> & Hx & H2).
  exists ds1, ds2, sh1, x, sh2. repeat split; try assumption.
  rewrite <- Hl, <- (map_length Z.of_nat sh1), H1. apply map_length.
Qed.

Lemma of_nat_inj_list : forall l1 l2, map Z.of_nat l1 = map Z.of_nat l2 -> l1 = l2.
Proof.
  induction l1 as [|x l1 IH]; intros [|y l2] H; simpl in H; try discriminate; [reflexivity|].
  injection H as Hxy H. f_equal; [lia | apply IH; exact H].
Qed.

Lemma obl_eval_eq : forall (Phi : constraint) rho xs ys,
  Phi rho -> Forall2 (dim_eq_obl Phi) xs ys -> eval_shape rho xs = eval_shape rho ys.
Proof.
  intros Phi rho xs ys HPhi H. unfold eval_shape.
  induction H as [|a b xs ys Hab _ IH]; [reflexivity|]. simpl. rewrite IH, (Hab rho HPhi).
  reflexivity.
Qed.

Section Values.
Context {V : Type} (P : prims V).

(** ** §4.15 T-Slice *)
Theorem slice_sound : forall rho (t : tensor V) dt ds dev k st sz dk,
  val_has_type rho t (TTensor dt ds dev) ->
  nth_error ds k = Some dk ->
  (0 <= eval_dim rho st)%Z -> (1 <= eval_dim rho sz)%Z ->
  (eval_dim rho st + eval_dim rho sz <= eval_dim rho dk)%Z ->
  exists d,
    slice_data (t_shape t) k (eval_dim rho st) (Z.to_nat (eval_dim rho sz)) (t_data t) = Some d /\
    val_has_type rho
      (mkT (t_dtype t) (replace_at k (Z.to_nat (eval_dim rho sz)) (t_shape t)) (t_device t) d)
      (TTensor dt (replace_at k sz ds) dev).
Proof.
  intros rho t dt ds dev k st sz dk (Hdt & Hdev & Hsh & Hlen) Hk Hst Hsz Hin.
  destruct (split_typed_shape _ _ _ _ _ Hsh Hk)
    as (ds1 & ds2 & sh1 & x & sh2 & -> & Hsh' & Hl1 & Hl2 & H1 & Hx & H2).
  rewrite Hsh' in Hlen |- *. rewrite <- Hl2, replace_at_app.
  assert (Hd : exists d, slice_data (sh1 ++ x :: sh2) (length sh1) (eval_dim rho st)
                           (Z.to_nat (eval_dim rho sz)) (t_data t) = Some d /\
                         length d = prod (sh1 ++ Z.to_nat (eval_dim rho sz) :: sh2)).
  { unfold slice_data. rewrite replace_at_app. apply tabulate_opt_some.
    intros idx Hidx. destruct (in_bounds_mid_inv _ _ _ _ Hidx) as (i1 & j & i2 & -> & Hi1 & Hj & Hi2).
    assert (Hli : length i1 = length sh1) by (apply in_bounds_length; exact Hi1).
    rewrite <- Hli, nth_middle, map_app. cbn [map].
    rewrite <- (map_length Z.of_nat i1), replace_at_app.
    replace (Z.of_nat j + eval_dim rho st)%Z with (Z.of_nat (j + Z.to_nat (eval_dim rho st)))
      by lia.
    change (Z.of_nat (j + Z.to_nat (eval_dim rho st)) :: map Z.of_nat i2)
      with (map Z.of_nat ((j + Z.to_nat (eval_dim rho st)) :: i2)).
    rewrite <- map_app. apply read_at_some; [|exact Hlen].
    apply in_bounds_mid; try assumption. lia. }
  destruct Hd as (d & Hd & Hdl). exists d. split; [exact Hd|].
  simpl. split; [exact Hdt|]. split; [exact Hdev|]. split; [|exact Hdl].
  rewrite Hl2, <- Hl1, replace_at_app. unfold eval_shape in *. rewrite !map_app. cbn [map].
  rewrite H1, H2, Z2Nat.id by lia. reflexivity.
Qed.

(** ** §4.14 T-Concat *)
Lemma firstn_mid : forall {A : Type} (l1 l2 : list A) y k,
  length l1 = k -> firstn k (l1 ++ y :: l2) = l1.
Proof. intros A l1 l2 y k <-. rewrite firstn_app, Nat.sub_diag, firstn_all. apply app_nil_r. Qed.

Lemma skipn_mid : forall {A : Type} (l1 l2 : list A) y k,
  length l1 = k -> skipn (S k) (l1 ++ y :: l2) = l2.
Proof. intros A l1 l2 y k <-. induction l1 as [|z l1 IH]; [reflexivity|]. exact IH. Qed.

Lemma nth_mid : forall {A : Type} (l1 l2 : list A) y k d,
  length l1 = k -> nth k (l1 ++ y :: l2) d = y.
Proof. intros A l1 l2 y k d <-. apply nth_middle. Qed.

Lemma replace_mid : forall {A : Type} (l1 l2 : list A) x y k,
  length l1 = k -> replace_at k x (l1 ++ y :: l2) = l1 ++ x :: l2.
Proof. intros A l1 l2 x y k <-. apply replace_at_app. Qed.

Theorem concat_sound : forall (Phi : constraint) rho (t1 t2 : tensor V) dt ds1 ds2 dev k d1 d2,
  Phi rho ->
  val_has_type rho t1 (TTensor dt ds1 dev) ->
  val_has_type rho t2 (TTensor dt ds2 dev) ->
  nth_error ds1 k = Some d1 -> nth_error ds2 k = Some d2 ->
  Forall2 (dim_eq_obl Phi) (firstn k ds1) (firstn k ds2) ->
  Forall2 (dim_eq_obl Phi) (skipn (S k) ds1) (skipn (S k) ds2) ->
  length (t_shape t1) = length (t_shape t2) /\
  firstn k (t_shape t1) = firstn k (t_shape t2) /\
  skipn (S k) (t_shape t1) = skipn (S k) (t_shape t2) /\
  exists d,
    concat_data (t_shape t1) (t_shape t2) k (t_data t1) (t_data t2) = Some d /\
    val_has_type rho
      (mkT (t_dtype t1) (replace_at k (nth k (t_shape t1) 0 + nth k (t_shape t2) 0) (t_shape t1))
           (t_device t1) d)
      (TTensor dt (replace_at k (DAdd d1 d2) ds1) dev).
Proof.
  intros Phi rho t1 t2 dt ds1 ds2 dev k d1 d2 HPhi
         (Hdt1 & Hdev1 & Hsh1 & Hlen1) (Hdt2 & Hdev2 & Hsh2 & Hlen2) Hk1 Hk2 Hpre Hpost.
  destruct (split_typed_shape _ _ _ _ _ Hsh1 Hk1)
    as (a1 & b1 & p1 & x1 & q1 & Hds1 & Hs1 & Hla1 & Hlp1 & Ha1 & Hx1 & Hb1).
  destruct (split_typed_shape _ _ _ _ _ Hsh2 Hk2)
    as (a2 & b2 & p2 & x2 & q2 & Hds2 & Hs2 & Hla2 & Hlp2 & Ha2 & Hx2 & Hb2).
  rewrite Hds1, Hds2, (firstn_mid _ _ _ _ Hla1), (firstn_mid _ _ _ _ Hla2) in Hpre.
  rewrite Hds1, Hds2, (skipn_mid _ _ _ _ Hla1), (skipn_mid _ _ _ _ Hla2) in Hpost.
  assert (Hp : p1 = p2).
  { apply of_nat_inj_list. rewrite Ha1, Ha2. eapply obl_eval_eq; eassumption. }
  assert (Hqq : q1 = q2).
  { apply of_nat_inj_list. rewrite Hb1, Hb2. eapply obl_eval_eq; eassumption. }
  subst p2 q2. rewrite Hs1, Hs2 in *. rewrite Hds1.
  split; [rewrite !app_length; reflexivity|].
  split; [rewrite !(firstn_mid _ _ _ _ Hlp1); reflexivity|].
  split; [rewrite !(skipn_mid _ _ _ _ Hlp1); reflexivity|].
  rewrite !(nth_mid _ _ _ _ _ Hlp1), (replace_mid _ _ _ _ _ Hlp1).
  assert (Hd : exists d, concat_data (p1 ++ x1 :: q1) (p1 ++ x2 :: q1) k
                           (t_data t1) (t_data t2) = Some d /\
                         length d = prod (p1 ++ (x1 + x2) :: q1)).
  { unfold concat_data. rewrite !(nth_mid _ _ _ _ _ Hlp1), (replace_mid _ _ _ _ _ Hlp1).
    apply tabulate_opt_some.
    intros idx Hidx. destruct (in_bounds_mid_inv _ _ _ _ Hidx) as (i1 & j & i2 & -> & Hi1 & Hj & Hi2).
    assert (Hli : length i1 = k) by (rewrite <- Hlp1; apply in_bounds_length; exact Hi1).
    rewrite (nth_mid _ _ _ _ _ Hli). destruct (Nat.ltb_spec j x1).
    - apply read_at_some; [|exact Hlen1]. apply in_bounds_mid; assumption.
    - rewrite (replace_mid _ _ _ _ _ Hli). apply read_at_some; [|exact Hlen2].
      apply in_bounds_mid; try assumption. lia. }
  destruct Hd as (d & Hd & Hdl). exists d. split; [exact Hd|].
  simpl. split; [exact Hdt1|]. split; [exact Hdev1|]. split; [|exact Hdl].
  rewrite (replace_mid _ _ _ _ _ Hla1).
  unfold eval_shape in *. rewrite !map_app. cbn [map eval_dim].
  rewrite Ha1, Hb1, Nat2Z.inj_add, Hx1, Hx2. reflexivity.
Qed.

(** ** §4.13 T-BroadcastTo *)
Theorem broadcast_to_sound : forall Delta (Phi : constraint) rho (t : tensor V) dt ds ds' dev,
  Phi rho ->
  val_has_type rho t (TTensor dt ds dev) ->
  wf_ty Delta Phi (TTensor dt ds' dev) ->
  bto_obl Phi ds ds' ->
  exists d, bto_data (t_shape t) (shape_at rho ds') (t_data t) = Some d /\
    val_has_type rho (mkT (t_dtype t) (shape_at rho ds') (t_device t) d) (TTensor dt ds' dev).
Proof.
  intros Delta Phi rho t dt ds ds' dev HPhi (Hdt & Hdev & Hsh & Hlen) Hwf (pre & tl & -> & Hall).
  assert (Hinto : bcast_into (t_shape t) (shape_at rho (pre ++ tl))).
  { exists (shape_at rho pre), (shape_at rho tl). split; [unfold shape_at; apply map_app|].
    unfold eval_shape in Hsh. clear Hlen Hwf. generalize dependent (t_shape t).
    induction Hall as [|a b ds tl Hab _ IH]; intros sh Hsh.
    - destruct sh; [constructor | discriminate].
    - destruct sh as [|x sh]; [discriminate|]. simpl in Hsh. injection Hsh as Hx Hsh.
      constructor; [|apply IH; exact Hsh]. unfold stretches.
      destruct Hab as [Hone | Hab].
      + left. rewrite <- (norm_sound rho a), Hone in Hx. simpl in Hx. lia.
      + right. specialize (Hab rho HPhi). cbv beta in Hab. lia. }
  destruct (tabulate_opt_some (shape_at rho (pre ++ tl))
              (fun idx => read_at (t_shape t) (t_data t) (map Z.of_nat (bidx (t_shape t) idx))))
    as (d & Hd & Hdl).
  { intros idx Hidx. apply read_at_some; [|exact Hlen]. eapply bidx_in_bounds; eassumption. }
  exists d. split; [exact Hd|].
  simpl. split; [exact Hdt|]. split; [exact Hdev|]. split; [|exact Hdl].
  apply shape_at_of_nat. eapply wf_ty_nonneg; eassumption.
Qed.

(** ** §4.11 T-Permute *)
Lemma in_bounds_nth : forall idx s,
  length idx = length s -> (forall j, j < length s -> nth j idx 0 < nth j s 0) ->
  in_bounds idx s.
Proof.
  unfold in_bounds. induction idx as [|i idx IH]; intros [|d s] Hl H; simpl in Hl;
    try discriminate; [constructor|].
  constructor.
  - apply (H 0). simpl. lia.
  - apply IH; [lia|]. intros j Hj. apply (H (S j)). simpl. lia.
Qed.

Lemma in_bounds_nth_inv : forall idx s j,
  in_bounds idx s -> j < length s -> nth j idx 0 < nth j s 0.
Proof.
  unfold in_bounds. intros idx s j H. revert j.
  induction H as [|i d idx s Hi _ IH]; intros j Hj; simpl in Hj; [lia|].
  destruct j; simpl; [exact Hi | apply IH; lia].
Qed.

Lemma index_of_spec : forall j p, In j p -> index_of j p < length p /\ nth (index_of j p) p 0 = j.
Proof.
  intros j p. induction p as [|x p IH]; intros H; [destruct H|]. simpl.
  destruct (Nat.eqb_spec x j) as [->|Hne].
  - simpl. split; [lia | reflexivity].
  - destruct H as [->|H]; [congruence|]. destruct (IH H). simpl. split; [lia | assumption].
Qed.

Theorem permute_sound : forall rho (t : tensor V) dt ds dev p,
  val_has_type rho t (TTensor dt ds dev) ->
  Permutation p (seq 0 (length ds)) ->
  Permutation p (seq 0 (length (t_shape t))) /\
  exists d, permute_data (t_shape t) p (t_data t) = Some d /\
    val_has_type rho (mkT (t_dtype t) (map (fun i => nth i (t_shape t) 0) p) (t_device t) d)
      (TTensor dt (map (fun i => nth i ds (DLit 1)) p) dev).
Proof.
  intros rho t dt ds dev p (Hdt & Hdev & Hsh & Hlen) Hp.
  assert (Hl : length (t_shape t) = length ds).
  { rewrite <- (map_length Z.of_nat), Hsh. unfold eval_shape. apply map_length. }
  rewrite <- Hl in Hp. split; [exact Hp|].
  assert (Hlp : length p = length (t_shape t))
    by (rewrite (Permutation_length Hp), seq_length; reflexivity).
  assert (Hin : forall i, In i p -> i < length (t_shape t)).
  { intros i Hi. apply (Permutation_in _ Hp) in Hi. apply in_seq in Hi. lia. }
  destruct (tabulate_opt_some (map (fun i => nth i (t_shape t) 0) p)
              (fun idx => read_at (t_shape t) (t_data t) (map Z.of_nat (perm_src p idx))))
    as (d & Hd & Hdl).
  { intros idx Hidx. apply read_at_some; [|exact Hlen].
    assert (Hli : length idx = length p)
      by (rewrite (in_bounds_length _ _ Hidx), map_length; reflexivity).
    apply in_bounds_nth.
    - unfold perm_src. rewrite map_length, seq_length. exact Hlp.
    - intros j Hj. unfold perm_src.
      rewrite (nth_indep _ _ ((fun j => nth (index_of j p) idx 0) 0))
        by (rewrite map_length, seq_length; lia).
      rewrite (map_nth (fun j0 => nth (index_of j0 p) idx 0)), seq_nth by lia. simpl.
      assert (Hjp : In j p).
      { apply (Permutation_in _ (Permutation_sym Hp)). apply in_seq. lia. }
      destruct (index_of_spec j p Hjp) as [Hlt Hnth].
      assert (Hb : nth (index_of j p) idx 0 <
                   nth (index_of j p) (map (fun i => nth i (t_shape t) 0) p) 0).
      { apply in_bounds_nth_inv; [exact Hidx|]. rewrite map_length. exact Hlt. }
      rewrite (nth_indep (map (fun i => nth i (t_shape t) 0) p) 0 ((fun i => nth i (t_shape t) 0) 0))
        in Hb by (rewrite map_length; lia).
      rewrite (map_nth (fun i => nth i (t_shape t) 0)), Hnth in Hb. exact Hb. }
  exists d. split; [exact Hd|].
  simpl. split; [exact Hdt|]. split; [exact Hdev|]. split; [|exact Hdl].
  unfold eval_shape. rewrite !map_map. apply map_ext_in. intros i Hi.
  specialize (Hin i Hi).
  rewrite <- (map_nth Z.of_nat (t_shape t) 0 i), Hsh. unfold eval_shape.
  rewrite (nth_indep _ _ (eval_dim rho (DLit 1))) by (rewrite map_length; lia).
  apply map_nth.
Qed.

(** ** §4.9 T-Const, T-Fill, T-Iota *)
Theorem fill_sound : forall Delta (Phi : constraint) rho dt ds dev (v : V),
  Phi rho -> wf_ty Delta Phi (TTensor dt ds dev) ->
  val_has_type rho (mkT dt (shape_at rho ds) dev (repeat v (prod (shape_at rho ds))))
               (TTensor dt ds dev).
Proof.
  intros Delta Phi rho dt ds dev v HPhi Hwf. simpl. repeat split.
  - apply shape_at_of_nat. eapply wf_ty_nonneg; eassumption.
  - apply repeat_length.
Qed.

Theorem iota_sound : forall Delta (Phi : constraint) rho dt ds dev (f : list nat -> V),
  Phi rho -> wf_ty Delta Phi (TTensor dt ds dev) ->
  val_has_type rho (mkT dt (shape_at rho ds) dev (tabulate (shape_at rho ds) f))
               (TTensor dt ds dev).
Proof.
  intros Delta Phi rho dt ds dev f HPhi Hwf. simpl. repeat split.
  - apply shape_at_of_nat. eapply wf_ty_nonneg; eassumption.
  - unfold tabulate. rewrite map_length, seq_length. reflexivity.
Qed.

End Values.
