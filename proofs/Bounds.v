(** * Bounds.v — data-level safety: every read is in bounds

    The evaluator reads elements with [nth_error], so an out-of-bounds read
    makes evaluation stuck.  This file proves the index facts behind the
    soundness theorems: a row-major index of a shape is below the shape's
    element count, and a source shape that broadcasts into a target shape
    maps every index of the target to an index of the source. *)

From Coq Require Import List Arith Lia.
From ShapeML Require Import Syntax Broadcast Semantics.
Import ListNotations.

(** ** Row-major indices *)

(** An index is in bounds of a shape: same rank, every coordinate below its
    dimension. *)
Definition in_bounds (idx s : list nat) : Prop := Forall2 lt idx s.

Lemma unravel_in_bounds : forall s i, i < prod s -> in_bounds (unravel s i) s.
Proof.
  unfold in_bounds. induction s as [|d s IH]; intros i Hi; simpl; [constructor|].
  simpl in Hi. assert (Hp : prod s <> 0) by (intro H0; rewrite H0 in Hi; lia).
  constructor.
  - apply Nat.div_lt_upper_bound; [exact Hp | lia].
  - apply IH. apply Nat.mod_upper_bound. exact Hp.
Qed.

Lemma ravel_in_bounds : forall s idx, in_bounds idx s -> ravel s idx < prod s.
Proof.
  unfold in_bounds. intros s idx H. induction H as [|k d idx s Hk _ IH]; simpl; [lia|].
  assert (S k * prod s <= d * prod s) by (apply Nat.mul_le_mono_r; lia).
  simpl in H. lia.
Qed.

Lemma in_bounds_app_inv : forall idx s1 s2, in_bounds idx (s1 ++ s2) ->
  exists i1 i2, idx = i1 ++ i2 /\ in_bounds i1 s1 /\ in_bounds i2 s2.
Proof.
  unfold in_bounds. intros idx s1 s2 H.
  destruct (Forall2_app_inv_r _ _ H) as (i1 & i2 & H1 & H2 & ->). eauto.
Qed.

Lemma in_bounds_app : forall i1 i2 s1 s2,
  in_bounds i1 s1 -> in_bounds i2 s2 -> in_bounds (i1 ++ i2) (s1 ++ s2).
Proof. unfold in_bounds. intros. apply Forall2_app; assumption. Qed.

Lemma Forall2_len : forall {A B} (R : A -> B -> Prop) l1 l2,
  Forall2 R l1 l2 -> length l1 = length l2.
Proof. intros A B R l1 l2 H. induction H; simpl; auto. Qed.

Lemma in_bounds_length : forall idx s, in_bounds idx s -> length idx = length s.
Proof. unfold in_bounds. intros. eapply Forall2_len; eassumption. Qed.

(** ** "A source broadcasts into a target" *)

(** An aligned pair: the source dimension is 1 (it stretches) or equal. *)
Definition stretches (a b : nat) : Prop := a = 1 \/ a = b.

(** [src] broadcasts into [tgt]: right-aligned, [tgt] has the extra leading
    dimensions, and each aligned source dimension stretches to the target's. *)
Definition bcast_into (src tgt : list nat) : Prop :=
  exists pre tl, tgt = pre ++ tl /\ Forall2 stretches src tl.

Lemma bidx_in_bounds_aligned : forall src tl i2,
  Forall2 stretches src tl -> in_bounds i2 tl ->
  in_bounds (map (fun p => if Nat.eqb (fst p) 1 then 0 else snd p) (combine src i2)) src.
Proof.
  unfold in_bounds. intros src tl i2 H. revert i2.
  induction H as [|a b src tl Hab _ IH]; intros i2 Hi; [constructor|].
  inversion Hi as [|k b' i2' tl' Hk Hi' Heq1 Heq2]; subst. simpl.
  constructor; [|apply IH; exact Hi'].
  destruct (Nat.eqb_spec a 1); [lia|]. destruct Hab; lia.
Qed.

(** The data-level broadcast lemma: if [src] broadcasts into [tgt], every
    in-bounds index of [tgt] is mapped by [bidx] to an in-bounds index of
    [src]. *)
Theorem bidx_in_bounds : forall src tgt idx,
  bcast_into src tgt -> in_bounds idx tgt -> in_bounds (bidx src idx) src.
Proof.
  intros src tgt idx (pre & tl & -> & Hst) Hidx.
  destruct (in_bounds_app_inv _ _ _ Hidx) as (i1 & i2 & -> & H1 & H2).
  unfold bidx.
  assert (Hl : length (i1 ++ i2) - length src = length i1).
  { rewrite app_length, (Forall2_len _ _ _ Hst), (in_bounds_length _ _ H2). lia. }
  rewrite Hl, skipn_app, skipn_all, Nat.sub_diag. simpl.
  eapply bidx_in_bounds_aligned; eassumption.
Qed.

(** Reading a broadcast source at the index of any target element stays
    within the source's data. *)
Theorem expand_read_in_bounds : forall src tgt i,
  bcast_into src tgt -> i < prod tgt ->
  ravel src (bidx src (unravel tgt i)) < prod src.
Proof.
  intros src tgt i Hb Hi. apply ravel_in_bounds.
  eapply bidx_in_bounds; [exact Hb|]. apply unravel_in_bounds. exact Hi.
Qed.

(** ** Run-time broadcasting produces "broadcasts into" facts *)

Lemma Forall2_rev : forall {A B} (R : A -> B -> Prop) l1 l2,
  Forall2 R l1 l2 -> Forall2 R (rev l1) (rev l2).
Proof.
  intros A B R l1 l2 H. induction H; simpl; [constructor|].
  apply Forall2_app; [assumption | constructor; [assumption | constructor]].
Qed.

Lemma rbcast_rev_into : forall xs ys zs, rbcast_rev xs ys = Some zs ->
  (exists z1 z2, zs = z1 ++ z2 /\ Forall2 stretches xs z1) /\
  (exists z1 z2, zs = z1 ++ z2 /\ Forall2 stretches ys z1).
Proof.
  unfold stretches.
  induction xs as [|a xs IH]; intros ys zs H; simpl in H.
  - injection H as <-. split.
    + exists [], ys. split; [reflexivity | constructor].
    + exists ys, []. rewrite app_nil_r. split; [reflexivity|].
      induction ys; constructor; auto.
  - destruct ys as [|b ys].
    + injection H as <-. split.
      * exists (a :: xs), []. rewrite app_nil_r. split; [reflexivity|].
        clear IH. constructor; [auto|]. induction xs; constructor; auto.
      * exists [], (a :: xs). split; [reflexivity | constructor].
    + destruct (rbdim a b) as [c|] eqn:Hc; [|discriminate].
      destruct (rbcast_rev xs ys) as [r|] eqn:Hr; [|discriminate].
      injection H as <-.
      destruct (IH ys r Hr) as [(x1 & x2 & -> & Hx) (y1 & y2 & Hy0 & Hy)].
      unfold rbdim in Hc.
      assert (Hac : a = 1 \/ a = c).
      { destruct (Nat.eqb_spec a b); [injection Hc; auto|].
        destruct (Nat.eqb_spec a 1); [auto|].
        destruct (Nat.eqb_spec b 1); [injection Hc; auto | discriminate]. }
      assert (Hbc : b = 1 \/ b = c).
      { destruct (Nat.eqb_spec a b); [injection Hc; lia|].
        destruct (Nat.eqb_spec a 1); [injection Hc; auto|].
        destruct (Nat.eqb_spec b 1); [auto | discriminate]. }
      split.
      * exists (c :: x1), x2. split; [reflexivity | constructor; assumption].
      * exists (c :: y1), y2. rewrite Hy0. split; [reflexivity | constructor; assumption].
Qed.

Theorem rbcast_into : forall s1 s2 s, rbcast s1 s2 = Some s ->
  bcast_into s1 s /\ bcast_into s2 s.
Proof.
  unfold rbcast, bcast_into. intros s1 s2 s H.
  destruct (rbcast_rev (rev s1) (rev s2)) as [r|] eqn:Hr; [|discriminate].
  injection H as <-.
  destruct (rbcast_rev_into _ _ _ Hr) as [(x1 & x2 & Hx0 & Hx) (y1 & y2 & Hy0 & Hy)].
  split.
  - exists (rev x2), (rev x1). rewrite Hx0, rev_app_distr. split; [reflexivity|].
    rewrite <- (rev_involutive s1). apply Forall2_rev. exact Hx.
  - exists (rev y2), (rev y1). rewrite Hy0, rev_app_distr. split; [reflexivity|].
    rewrite <- (rev_involutive s2). apply Forall2_rev. exact Hy.
Qed.

(** "Broadcasts into" is transitive: [select] broadcasts its condition and
    first branch into an intermediate shape, and that into the result. *)
Theorem bcast_into_trans : forall a b c,
  bcast_into a b -> bcast_into b c -> bcast_into a c.
Proof.
  unfold bcast_into, stretches. intros a b c (p1 & t1 & -> & H1) (p & t & -> & H2).
  destruct (Forall2_app_inv_l _ _ H2) as (ta & tb & _ & Hb & ->).
  exists (p ++ ta), tb. rewrite app_assoc. split; [reflexivity|].
  clear H2. revert tb Hb. induction H1 as [|x y xs ys Hxy _ IH]; intros tb Hb.
  - inversion Hb; constructor.
  - inversion Hb as [|y' z ys' zs Hyz Hr]; subst. constructor; [|apply IH; exact Hr].
    destruct Hxy, Hyz; subst; auto.
Qed.

(** The statement of the review ([Stated.v] before): for the two operands of
    an elementwise binary operation, reads at every output index are in
    bounds. *)
Theorem expand_reads_in_bounds : forall s1 s2 s i,
  rbcast s1 s2 = Some s ->
  i < prod s ->
  ravel s1 (bidx s1 (unravel s i)) < prod s1 /\
  ravel s2 (bidx s2 (unravel s i)) < prod s2.
Proof.
  intros s1 s2 s i H Hi. destruct (rbcast_into _ _ _ H) as [H1 H2].
  split; apply (expand_read_in_bounds _ s); assumption.
Qed.

(** [select] broadcasts twice: [c] and [a] into [s1], then [s1] and [b] into
    [s]; the reads of all three operands are in bounds. *)
Theorem select_reads_in_bounds : forall sc sa sb s1 s i,
  rbcast sc sa = Some s1 -> rbcast s1 sb = Some s -> i < prod s ->
  ravel sc (bidx sc (unravel s i)) < prod sc /\
  ravel sa (bidx sa (unravel s i)) < prod sa /\
  ravel sb (bidx sb (unravel s i)) < prod sb.
Proof.
  intros sc sa sb s1 s i H1 H2 Hi.
  destruct (rbcast_into _ _ _ H1) as [Hc Ha]. destruct (rbcast_into _ _ _ H2) as [H1s Hb].
  split; [|split]; apply (expand_read_in_bounds _ s); try assumption;
    eapply bcast_into_trans; eassumption.
Qed.

(** ** Reads that succeed *)

Lemma all_some_map : forall {A B : Type} (g : A -> option B) l,
  (forall x, In x l -> exists v, g x = Some v) ->
  exists r, all_some (map g l) = Some r /\ length r = length l.
Proof.
  intros A B g l. induction l as [|x l IH]; intros H; simpl; [eauto|].
  destruct (H x (or_introl eq_refl)) as [v Hv]. rewrite Hv.
  destruct IH as [r [Hr Hl]]; [intros y Hy; apply H; right; exact Hy|].
  rewrite Hr. exists (v :: r). simpl. auto.
Qed.

Lemma tabulate_opt_some : forall {A : Type} s (f : list nat -> option A),
  (forall idx, in_bounds idx s -> exists v, f idx = Some v) ->
  exists l, tabulate_opt s f = Some l /\ length l = prod s.
Proof.
  intros A s f H. unfold tabulate_opt.
  destruct (all_some_map (fun i => f (unravel s i)) (seq 0 (prod s))) as [r [Hr Hl]].
  - intros i Hi. apply in_seq in Hi. apply H. apply unravel_in_bounds. lia.
  - exists r. rewrite Hr, seq_length in *. auto.
Qed.

Lemma nth_error_lt : forall {A : Type} (l : list A) n, n < length l ->
  exists v, nth_error l n = Some v.
Proof.
  intros A l n H. destruct (nth_error l n) as [v|] eqn:E; [eauto|].
  apply nth_error_None in E. lia.
Qed.

Theorem expand_some : forall {V : Type} src tgt (data : list V),
  bcast_into src tgt -> length data = prod src ->
  exists d, expand src tgt data = Some d /\ length d = prod tgt.
Proof.
  intros V src tgt data Hb Hl. unfold expand. apply tabulate_opt_some.
  intros idx Hidx. apply nth_error_lt. rewrite Hl. apply ravel_in_bounds.
  eapply bidx_in_bounds; eassumption.
Qed.

(** ** Transpose reads in bounds *)

Lemma swap_last2_app : forall (i1 : list nat) a b, swap_last2 (i1 ++ [a; b]) = i1 ++ [b; a].
Proof.
  intros. unfold swap_last2.
  replace (i1 ++ [a; b]) with ((i1 ++ [a]) ++ [b]) by (rewrite <- app_assoc; reflexivity).
  rewrite rev_app_distr, rev_app_distr. simpl. rewrite rev_involutive. reflexivity.
Qed.

Theorem transpose_some : forall {V : Type} pre x y (data : list V),
  length data = prod (pre ++ [x; y]) ->
  exists d, transpose_data pre x y data = Some d /\ length d = prod (pre ++ [y; x]).
Proof.
  intros V pre x y data Hl. unfold transpose_data. apply tabulate_opt_some.
  intros idx Hidx. apply nth_error_lt. rewrite Hl. apply ravel_in_bounds.
  destruct (in_bounds_app_inv _ _ _ Hidx) as (i1 & i2 & -> & H1 & H2).
  inversion H2 as [|j1 y' r1 r1' Hj1 H3]; subst.
  inversion H3 as [|j2 x' r2 r2' Hj2 H4]; subst.
  inversion H4; subst.
  rewrite swap_last2_app. apply in_bounds_app; [exact H1|].
  repeat constructor; assumption.
Qed.

(** ** Matmul and reductions read in bounds *)

Lemma firstn_nth_app2 : forall (b : list nat) i j,
  firstn (length b) (b ++ [i; j]) = b /\
  nth (length b) (b ++ [i; j]) 0 = i /\
  nth (S (length b)) (b ++ [i; j]) 0 = j.
Proof.
  intros b i j. split; [|split].
  - rewrite firstn_app, Nat.sub_diag, firstn_all. simpl. apply app_nil_r.
  - rewrite app_nth2, Nat.sub_diag by lia. reflexivity.
  - rewrite app_nth2 by lia. replace (S (length b) - length b) with 1 by lia. reflexivity.
Qed.

Lemma in_bounds_last2 : forall idx pre x y, in_bounds idx (pre ++ [x; y]) ->
  exists b i j, idx = b ++ [i; j] /\ in_bounds b pre /\ i < x /\ j < y.
Proof.
  intros idx pre x y H.
  destruct (in_bounds_app_inv _ _ _ H) as (b & r & -> & Hb & Hr).
  inversion Hr as [|i x' r1 r1' Hi H3]; subst.
  inversion H3 as [|j y' r2 r2' Hj H4]; subst.
  inversion H4; subst. exists b, i, j. auto.
Qed.

Section Data.
Context {V : Type} (P : prims V).

Theorem matmul_some : forall pa pb pc m k n (d1 d2 : list V),
  rbcast pa pb = Some pc ->
  length d1 = prod (pa ++ [m; k]) -> length d2 = prod (pb ++ [k; n]) ->
  exists d, matmul_data P pa pb pc m k n d1 d2 = Some d /\ length d = prod (pc ++ [m; n]).
Proof.
  intros pa pb pc m k n d1 d2 Hpc Hl1 Hl2.
  destruct (rbcast_into _ _ _ Hpc) as [Ha Hb].
  unfold matmul_data. apply tabulate_opt_some.
  intros idx Hidx.
  destruct (in_bounds_last2 _ _ _ _ Hidx) as (b & i & j & -> & Hbb & Hi & Hj).
  assert (Hlb : length b = length pc) by (apply in_bounds_length; exact Hbb).
  rewrite <- Hlb. destruct (firstn_nth_app2 b i j) as (-> & -> & ->).
  destruct (all_some_map (fun kk =>
        match nth_error d1 (ravel (pa ++ [m; k]) (bidx pa b ++ [i; kk])),
              nth_error d2 (ravel (pb ++ [k; n]) (bidx pb b ++ [kk; j])) with
        | Some x, Some y => Some (p_mul P x y)
        | _, _ => None
        end) (seq 0 k)) as [r [Hr _]].
  - intros kk Hkk. apply in_seq in Hkk.
    destruct (nth_error_lt d1 (ravel (pa ++ [m; k]) (bidx pa b ++ [i; kk]))) as [x Hx].
    { rewrite Hl1. apply ravel_in_bounds. apply in_bounds_app.
      - eapply bidx_in_bounds; eassumption.
      - repeat constructor; lia. }
    destruct (nth_error_lt d2 (ravel (pb ++ [k; n]) (bidx pb b ++ [kk; j]))) as [y Hy].
    { rewrite Hl2. apply ravel_in_bounds. apply in_bounds_app.
      - eapply bidx_in_bounds; eassumption.
      - repeat constructor; lia. }
    rewrite Hx, Hy. eauto.
  - rewrite Hr. eauto.
Qed.

Lemma existsb_eqb_In : forall i axs, existsb (Nat.eqb i) axs = true <-> In i axs.
Proof.
  intros i axs. rewrite existsb_exists. split.
  - intros (x & Hx & Hi). apply Nat.eqb_eq in Hi. subst. exact Hx.
  - intros H. exists i. split; [exact H | apply Nat.eqb_refl].
Qed.

(** The index rebuilt from an output index and an index into the reduced
    dimensions is an index of the input. *)
Lemma merge_idx_in_bounds : forall axs kd s i oidx ridx,
  in_bounds oidx (reduce_dims 1 axs kd i s) ->
  in_bounds ridx (reduced_dims axs i s) ->
  in_bounds (merge_idx axs kd i s oidx ridx) s.
Proof.
  unfold in_bounds. intros axs kd s.
  induction s as [|d s IH]; intros i oidx ridx Ho Hr; simpl in *; [constructor|].
  destruct (existsb (Nat.eqb i) axs).
  - inversion Hr as [|r d' ridx' s' Hrd Hr']; subst. simpl.
    constructor; [exact Hrd|]. apply IH; [|exact Hr'].
    destruct kd; [inversion Ho; subst; exact H3 | exact Ho].
  - inversion Ho as [|o d' oidx' s' Hod Ho']; subst. simpl.
    constructor; [exact Hod|]. apply IH; assumption.
Qed.

Theorem reduce_some : forall op axs kd s (data : list V),
  length data = prod s ->
  exists d, reduce_data P op axs kd s data = Some d /\
            length d = prod (reduce_dims 1 axs kd 0 s).
Proof.
  intros op axs kd s data Hl. unfold reduce_data. apply tabulate_opt_some.
  intros oidx Ho.
  destruct (all_some_map (fun r =>
        nth_error data (ravel s (merge_idx axs kd 0 s oidx
                                   (unravel (reduced_dims axs 0 s) r))))
        (seq 0 (prod (reduced_dims axs 0 s)))) as [xs [Hxs _]].
  - intros r Hr. apply in_seq in Hr. apply nth_error_lt. rewrite Hl.
    apply ravel_in_bounds. apply merge_idx_in_bounds; [exact Ho|].
    apply unravel_in_bounds. lia.
  - rewrite Hxs. eauto.
Qed.

(** ** Softmax reads in bounds (§4.21)
    Replacing one coordinate of an in-bounds index by a value below that
    dimension stays in bounds: every read of a row is. *)
Lemma in_bounds_replace : forall idx s k r,
  in_bounds idx s -> r < nth k s 0 -> in_bounds (replace_at k r idx) s.
Proof.
  unfold in_bounds, replace_at. intros idx s k r H. revert k.
  induction H as [|i d idx s Hi Hr IH]; intros k Hk.
  - destruct k; simpl in Hk; lia.
  - destruct k as [|k]; simpl in *.
    + constructor; assumption.
    + constructor; [exact Hi | apply IH; exact Hk].
Qed.

Theorem softmax_some : forall op k s (data : list V),
  length data = prod s ->
  exists d, softmax_data P op k s data = Some d /\ length d = prod s.
Proof.
  intros op k s data Hl. unfold softmax_data. apply tabulate_opt_some.
  intros idx Hidx.
  destruct (all_some_map (fun r => nth_error data (ravel s (replace_at k r idx)))
                         (seq 0 (nth k s 0))) as [xs [Hxs _]].
  - intros r Hr. apply in_seq in Hr. apply nth_error_lt. rewrite Hl.
    apply ravel_in_bounds. apply in_bounds_replace; [exact Hidx | lia].
  - rewrite Hxs.
    destruct (nth_error_lt data (ravel s idx)) as [x Hx];
      [rewrite Hl; apply ravel_in_bounds; exact Hidx|].
    rewrite Hx. eauto.
Qed.

End Data.
