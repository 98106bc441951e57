(** * Soundness.v — type soundness of the whole core

    For every construct of the core (variables, let, let with ascription,
    elementwise unary/binary/compare/select with broadcasting, cast, matmul,
    transpose, reshape, reductions, softmax and log_softmax, device copies,
    slice, concat, broadcast_to, permute, const, fill, iota, calls):
    - [type_soundness]: a well-typed expression, evaluated under a valuation
      satisfying Φ in an environment that matches Γ, evaluates, and its
      value has the evaluated type;
    - [progress]: it evaluates (never gets stuck on a run-time check);
    - [preservation]: any value it evaluates to has the type;
    - [eval_deterministic]: evaluation (of the whole core) is a function. *)

From Coq Require Import List ZArith Lia.
From ShapeML Require Import Syntax Broadcast Typing Semantics Bounds Reshape Constructs.
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


(** ** Value-level soundness of the non-elementwise rules *)

Lemma split_shape_last2 : forall (s : list nat) (l : list Z) a b,
  map Z.of_nat s = l ++ [a; b] ->
  exists pre x y, s = pre ++ [x; y] /\ map Z.of_nat pre = l /\
                  Z.of_nat x = a /\ Z.of_nat y = b.
Proof.
  intros s l a b H.
  destruct (map_eq_app _ _ _ _ H) as (pre & rest & -> & Hpre & Hrest).
  destruct (map_eq_cons _ _ Hrest) as (x & r1 & -> & Hx & Hr1).
  destruct (map_eq_cons _ _ Hr1) as (y & r2 & -> & Hy & Hr2).
  destruct r2; [|discriminate].
  exists pre, x, y. auto.
Qed.

(** §4.11 T-Transpose: a tensor of type [T(dt, ds ++ [a; b], dev)] has a
    shape [pre ++ [x; y]], and its transpose has type [T(dt, ds ++ [b; a], dev)]. *)
Theorem transpose_sound : forall rho (t : tensor V) dt ds a b dev,
  val_has_type rho t (TTensor dt (ds ++ [a; b]) dev) ->
  exists pre x y d,
    t_shape t = pre ++ [x; y] /\
    transpose_data pre x y (t_data t) = Some d /\
    val_has_type rho (mkT (t_dtype t) (pre ++ [y; x]) (t_device t) d)
      (TTensor dt (ds ++ [b; a]) dev).
Proof.
  intros rho t dt ds a b dev (Hdt & Hdev & Hsh & Hlen).
  unfold eval_shape in Hsh. rewrite map_app in Hsh. simpl in Hsh.
  destruct (split_shape_last2 _ _ _ _ Hsh) as (pre & x & y & Hs & Hpre & Hx & Hy).
  rewrite Hs in Hlen.
  destruct (transpose_some pre x y (t_data t) Hlen) as (d & Hd & Hdl).
  exists pre, x, y, d. split; [exact Hs|]. split; [exact Hd|].
  simpl. split; [exact Hdt|]. split; [exact Hdev|]. split; [|exact Hdl].
  unfold eval_shape. rewrite !map_app, Hpre. simpl. rewrite Hx, Hy. reflexivity.
Qed.

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
    exists d, matmul_data P pa pb pc mm kk nn (t_data t1) (t_data t2) = Some d /\
    val_has_type rho (mkT (t_dtype t1) (pc ++ [mm; nn]) (t_device t1) d)
      (TTensor dt (dc ++ [m; n]) dev).
Proof.
  intros Phi rho t1 t2 dt da db dc m k k' n dev HPhi
         (Hdt1 & Hdev1 & Hsh1 & Hlen1) (Hdt2 & Hdev2 & Hsh2 & Hlen2) Hk Hb.
  unfold eval_shape in Hsh1, Hsh2. rewrite map_app in Hsh1, Hsh2. simpl in Hsh1, Hsh2.
  destruct (split_shape_last2 _ _ _ _ Hsh1) as (pa & mm & kk & Hs1 & Hpa & Hm & Hkk).
  destruct (split_shape_last2 _ _ _ _ Hsh2) as (pb & kk2 & nn & Hs2 & Hpb & Hkk2 & Hn).
  assert (kk2 = kk).
  { specialize (Hk rho HPhi). cbv beta in Hk. lia. }
  subst kk2.
  destruct (bshape_runtime _ _ _ _ _ _ _ Hb HPhi Hpa Hpb) as (pc & Hpc & Hpcm).
  rewrite Hs1 in Hlen1. rewrite Hs2 in Hlen2.
  destruct (matmul_some P _ _ _ _ _ _ _ _ Hpc Hlen1 Hlen2) as (d & Hd & Hdl).
  exists pa, pb, pc, mm, kk, nn.
  split; [exact Hs1|]. split; [exact Hs2|]. split; [exact Hpc|].
  exists d. split; [exact Hd|].
  simpl. split; [exact Hdt1|]. split; [exact Hdev1|]. split; [|exact Hdl].
  unfold eval_shape. rewrite !map_app, Hpcm. simpl. rewrite Hm, Hn. reflexivity.
Qed.

(** §4.16 T-Reduce: the axes resolve identically at run time, and the
    reduced tensor has type [T(dt, reduce_dims 1 axs kd 0 ds, dev)]. *)
Theorem reduce_sound : forall rho (t : tensor V) op axes kd dt ds dev axs,
  val_has_type rho t (TTensor dt ds dev) ->
  resolve_axes (length ds) axes = Some axs ->
  resolve_axes (length (t_shape t)) axes = Some axs /\
  exists d, reduce_data P op axs kd (t_shape t) (t_data t) = Some d /\
  val_has_type rho (mkT (t_dtype t) (reduce_dims 1 axs kd 0 (t_shape t)) (t_device t) d)
    (TTensor dt (reduce_dims (DLit 1) axs kd 0 ds) dev).
Proof.
  intros rho t op axes kd dt ds dev axs (Hdt & Hdev & Hsh & Hlen) Hax.
  assert (Hl : length (t_shape t) = length ds).
  { rewrite <- (map_length Z.of_nat), Hsh. unfold eval_shape. apply map_length. }
  split; [rewrite Hl; exact Hax|].
  destruct (reduce_some P op axs kd _ _ Hlen) as (d & Hd & Hdl).
  exists d. split; [exact Hd|].
  simpl. split; [exact Hdt|]. split; [exact Hdev|]. split; [|exact Hdl].
  rewrite reduce_dims_map, Hsh. unfold eval_shape. rewrite reduce_dims_map. reflexivity.
Qed.

(** §4.21 T-Softmax: the axis resolves identically at run time, and
    softmax (log_softmax) along it has the operand's type. *)
Theorem softmax_sound : forall rho (t : tensor V) op a dt ds dev k,
  val_has_type rho t (TTensor dt ds dev) ->
  resolve_axis (length ds) a = Some k ->
  resolve_axis (length (t_shape t)) a = Some k /\
  exists d, softmax_data P op k (t_shape t) (t_data t) = Some d /\
  val_has_type rho (mkT (t_dtype t) (t_shape t) (t_device t) d) (TTensor dt ds dev).
Proof.
  intros rho t op a dt ds dev k (Hdt & Hdev & Hsh & Hlen) Hax.
  assert (Hl : length (t_shape t) = length ds).
  { rewrite <- (map_length Z.of_nat), Hsh. unfold eval_shape. apply map_length. }
  split; [rewrite Hl; exact Hax|].
  destruct (softmax_some P op k _ _ Hlen) as (d & Hd & Hdl).
  exists d. split; [exact Hd|].
  simpl. auto.
Qed.

(** ** Type soundness (progress and preservation together, big-step) *)
(** ** Calls: arguments and the callee's environment *)
Lemma val_has_type_subst : forall rho s (t : tensor V) dt ds dev,
  (forall x, (1 <= eval_dim rho (s x))%Z) ->
  val_has_type rho t (TTensor dt (map (subst_dim s) ds) dev) <->
  val_has_type (compose rho s) t (TTensor dt ds dev).
Proof.
  intros rho s t dt ds dev Hs. simpl. rewrite subst_eval_shape by exact Hs. reflexivity.
Qed.

Lemma args_sound : forall (Phi : constraint) rho s G (E : list (var * tensor V)) args
                          (params : list (var * ty)),
  Phi rho -> env_ok rho G E -> (forall x, (1 <= eval_dim rho (s x))%Z) ->
  Forall2 (fun x p => exists dt ds ds' dev,
             lookup x G = Some (TTensor dt ds dev) /\ snd p = TTensor dt ds' dev /\
             Forall2 (dim_eq_obl Phi) ds (map (subst_dim s) ds'))
          args params ->
  exists ts, all_some (map (fun x => lookup x E) args) = Some ts /\
             Forall2 (fun t p => val_has_type (compose rho s) t (snd p)) ts params.
Proof.
  intros Phi rho s G E args params HPhi HE Hs H.
  induction H as [|x p args params Hx _ IH].
  - exists []. split; [reflexivity | constructor].
  - destruct Hx as (dt & ds & ds' & dev & Hl & Hp & Hobl).
    destruct (HE _ _ Hl) as [t [HlE Ht]].
    destruct IH as [ts [Hts Hall]].
    exists (t :: ts). simpl. rewrite HlE, Hts. split; [reflexivity|].
    constructor; [|exact Hall]. rewrite Hp.
    apply val_has_type_subst; [exact Hs|]. eapply sub_sound; eassumption.
Qed.

Lemma env_of_args : forall rho' (ts : list (tensor V)) (params : list (var * ty)),
  Forall2 (fun t p => val_has_type rho' t (snd p)) ts params ->
  env_ok rho' params (combine (map fst params) ts).
Proof.
  intros rho' ts params H. induction H as [|t [n ty] ts params Ht _ IH].
  - apply env_ok_nil.
  - simpl. apply env_ok_cons; assumption.
Qed.

Definition sound_at (rho : valuation) (G : ctx) (e : expr) (ty : ty) : Prop :=
  forall E, env_ok rho G E -> exists t, eval P rho E e t /\ val_has_type rho t ty.

Theorem type_soundness_mut :
  (forall Delta (Phi : constraint) G e ty, synth Delta Phi G e ty ->
     forall rho, Phi rho -> sound_at rho G e ty) /\
  (forall Delta (Phi : constraint) G e ty, check Delta Phi G e ty ->
     forall rho, Phi rho -> sound_at rho G e ty).
Proof.
  assert (Hsyn : forall Delta (Phi : constraint) G e ty, synth Delta Phi G e ty ->
            forall rho, Phi rho -> sound_at rho G e ty).
  { apply (synth_mut (fun Delta Phi G e ty => forall rho, Phi rho -> sound_at rho G e ty)
                     (fun Delta Phi G e ty => forall rho, Phi rho -> sound_at rho G e ty));
      unfold sound_at.
    - (* T-Var *)
      intros Delta Phi G x ty Hx rho HPhi E HE.
      destruct (HE _ _ Hx) as [t' [Hl Ht]]. exists t'. split; [constructor|]; assumption.
    - (* T-Let *)
      intros Delta Phi G x e1 e2 t1 t2 _ _ IH1 _ IH2 rho HPhi E HE.
      destruct (IH1 rho HPhi E HE) as [t1' [Ev1 Ht1]].
      destruct (IH2 rho HPhi ((x, t1') :: E) (env_ok_cons _ _ _ _ _ _ HE Ht1)) as [t2' [Ev2 Ht2]].
      exists t2'. split; [econstructor; eassumption | assumption].
    - (* T-LetAsc *)
      intros Delta Phi G x t' e1 e2 t2 _ _ _ IH1 _ IH2 rho HPhi E HE.
      destruct (IH1 rho HPhi E HE) as [t1' [Ev1 Ht1]].
      destruct (IH2 rho HPhi ((x, t1') :: E) (env_ok_cons _ _ _ _ _ _ HE Ht1)) as [t2' [Ev2 Ht2]].
      exists t2'. split; [econstructor; eassumption | assumption].
    - (* T-Unary *)
      intros Delta Phi G op e dt ds dev _ IH Hop rho HPhi E HE.
      destruct (IH rho HPhi E HE) as [t [Ev (Hdt & Hdev & Hsh & Hlen)]].
      eexists. split.
      + apply E_Unary; [exact Ev | rewrite Hdt; exact Hop].
      + simpl. rewrite map_length. auto.
    - (* T-Binary *)
      intros Delta Phi G op e1 e2 dt ds1 ds2 ds dev _ IH1 _ IH2 Hop Hb rho HPhi E HE.
      destruct (IH1 rho HPhi E HE) as [t1 [Ev1 (Hdt1 & Hdev1 & Hsh1 & Hlen1)]].
      destruct (IH2 rho HPhi E HE) as [t2 [Ev2 (Hdt2 & Hdev2 & Hsh2 & Hlen2)]].
      destruct (bshape_runtime _ _ _ _ _ _ _ Hb HPhi Hsh1 Hsh2) as [s [Hs Hsm]].
      destruct (rbcast_into _ _ _ Hs) as [Hi1 Hi2].
      destruct (expand_some _ _ _ Hi1 Hlen1) as (d1 & Hd1 & Hl1).
      destruct (expand_some _ _ _ Hi2 Hlen2) as (d2 & Hd2 & Hl2).
      eexists. split.
      + eapply E_Binary; try eassumption; congruence.
      + simpl. rewrite zipw_length, Hl1, Hl2, Nat.min_id. auto.
    - (* T-Compare: any dtype, bool included (spec §4.7) *)
      intros Delta Phi G op e1 e2 dt ds1 ds2 ds dev _ IH1 _ IH2 Hb rho HPhi E HE.
      destruct (IH1 rho HPhi E HE) as [t1 [Ev1 (Hdt1 & Hdev1 & Hsh1 & Hlen1)]].
      destruct (IH2 rho HPhi E HE) as [t2 [Ev2 (Hdt2 & Hdev2 & Hsh2 & Hlen2)]].
      destruct (bshape_runtime _ _ _ _ _ _ _ Hb HPhi Hsh1 Hsh2) as [s [Hs Hsm]].
      destruct (rbcast_into _ _ _ Hs) as [Hi1 Hi2].
      destruct (expand_some _ _ _ Hi1 Hlen1) as (d1 & Hd1 & Hl1).
      destruct (expand_some _ _ _ Hi2 Hlen2) as (d2 & Hd2 & Hl2).
      eexists. split.
      + eapply E_Compare; try eassumption; congruence.
      + simpl. rewrite zipw_length, Hl1, Hl2, Nat.min_id. auto.
    - (* T-Select *)
      intros Delta Phi G c a b dt dsc dsa dsb ds1 ds dev _ IHc _ IHa _ IHb Hb1 Hb2 rho HPhi E HE.
      destruct (IHc rho HPhi E HE) as [tc [Evc (Hdtc & Hdevc & Hshc & Hlenc)]].
      destruct (IHa rho HPhi E HE) as [ta [Eva (Hdta & Hdeva & Hsha & Hlena)]].
      destruct (IHb rho HPhi E HE) as [tb [Evb (Hdtb & Hdevb & Hshb & Hlenb)]].
      destruct (bshape_runtime _ _ _ _ _ _ _ Hb1 HPhi Hshc Hsha) as [s1 [Hs1 Hsm1]].
      destruct (bshape_runtime _ _ _ _ _ _ _ Hb2 HPhi Hsm1 Hshb) as [s [Hs Hsm]].
      destruct (rbcast_into _ _ _ Hs1) as [Hic Hia].
      destruct (rbcast_into _ _ _ Hs) as [Hi1 Hib].
      destruct (expand_some _ _ _ (bcast_into_trans _ _ _ Hic Hi1) Hlenc) as (d1 & Hd1 & Hl1).
      destruct (expand_some _ _ _ (bcast_into_trans _ _ _ Hia Hi1) Hlena) as (d2 & Hd2 & Hl2).
      destruct (expand_some _ _ _ Hib Hlenb) as (d3 & Hd3 & Hl3).
      eexists. split.
      + eapply E_Select; try eassumption; congruence.
      + simpl. rewrite zipw3_length, Hl1, Hl2, Hl3, !Nat.min_id. auto.
    - (* T-Cast *)
      intros Delta Phi G e dt dt' ds dev _ IH rho HPhi E HE.
      destruct (IH rho HPhi E HE) as [t [Ev (Hdt & Hdev & Hsh & Hlen)]].
      eexists. split; [apply E_Cast; exact Ev|].
      simpl. rewrite map_length. auto.
    - (* T-Matmul *)
      intros Delta Phi G e1 e2 dt da db dc m k k' n dev _ IH1 _ IH2 Hnum Hk Hb rho HPhi E HE.
      destruct (IH1 rho HPhi E HE) as [t1 [Ev1 Ht1]].
      destruct (IH2 rho HPhi E HE) as [t2 [Ev2 Ht2]].
      destruct (matmul_sound _ _ _ _ _ _ _ _ _ _ _ _ _ HPhi Ht1 Ht2 Hk Hb)
        as (pa & pb & pc & mm & kk & nn & Hs1 & Hs2 & Hpc & d & Hd & Ht).
      eexists. split; [|exact Ht].
      destruct Ht1 as (Hdt1 & Hdev1 & _), Ht2 as (Hdt2 & Hdev2 & _).
      eapply E_Matmul; try eassumption; congruence.
    - (* T-Transpose *)
      intros Delta Phi G e dt ds a b dev _ IH rho HPhi E HE.
      destruct (IH rho HPhi E HE) as [t [Ev Ht]].
      destruct (transpose_sound _ _ _ _ _ _ _ Ht) as (pre & x & y & d & Hs & Hd & Ht').
      eexists. split; [|exact Ht']. eapply E_Transpose; eassumption.
    - (* T-Reshape *)
      intros Delta Phi G e dt ds ds' dev _ IH Hwf Hobl rho HPhi E HE.
      destruct (IH rho HPhi E HE) as [t [Ev Ht]].
      destruct (reshape_obligation_sound_wf _ _ _ _ _ _ _ _ Hwf Hobl HPhi Ht)
        as [t' [Hr [Ht' _]]].
      exists t'. split; [eapply E_Reshape; eassumption | exact Ht'].
    - (* T-Reduce *)
      intros Delta Phi G op axes kd e dt ds dev axs _ IH Hop Hax Hnd rho HPhi E HE.
      destruct (IH rho HPhi E HE) as [t [Ev Ht]].
      destruct (reduce_sound _ _ op axes kd _ _ _ _ Ht Hax) as [Hax' (d & Hd & Ht')].
      eexists. split; [|exact Ht'].
      destruct Ht as (Hdt & _).
      eapply E_Reduce; [exact Ev | rewrite Hdt; exact Hop | exact Hax' | exact Hnd | exact Hd].
    - (* T-CopyToDevice *)
      intros Delta Phi G e dt ds dev n _ IH rho HPhi E HE.
      destruct (IH rho HPhi E HE) as [t [Ev (Hdt & Hdev & Hsh & Hlen)]].
      eexists. split; [apply E_CopyToDevice; exact Ev|]. simpl. auto.
    - (* T-CopyToHost *)
      intros Delta Phi G e dt ds dev _ IH rho HPhi E HE.
      destruct (IH rho HPhi E HE) as [t [Ev (Hdt & Hdev & Hsh & Hlen)]].
      eexists. split; [apply E_CopyToHost; exact Ev|]. simpl. auto.
    - (* T-Slice *)
      intros Delta Phi G e dt ds dev a k st sz dk _ IH Hax Hk Hst Hsz Hin _ rho HPhi E HE.
      destruct (IH rho HPhi E HE) as [t [Ev Ht]].
      destruct (slice_sound rho t dt ds dev k st sz dk Ht Hk (Hst rho HPhi) (Hsz rho HPhi) (Hin rho HPhi))
        as (d & Hd & Ht').
      eexists. split; [|exact Ht'].
      destruct Ht as (_ & _ & Hsh & _).
      assert (Hl : length (t_shape t) = length ds).
      { rewrite <- (map_length Z.of_nat), Hsh. unfold eval_shape. apply map_length. }
      eapply E_Slice; [exact Ev | rewrite Hl; exact Hax | exact Hd].
    - (* T-Concat *)
      intros Delta Phi G e1 e2 dt ds1 ds2 dev a k d1 d2 _ IH1 _ IH2 Hlen Hax Hk1 Hk2 Hpre Hpost rho HPhi E HE.
      destruct (IH1 rho HPhi E HE) as [t1 [Ev1 Ht1]].
      destruct (IH2 rho HPhi E HE) as [t2 [Ev2 Ht2]].
      destruct (concat_sound Phi rho t1 t2 dt ds1 ds2 dev k d1 d2 HPhi Ht1 Ht2 Hk1 Hk2 Hpre Hpost)
        as (Hl & Hf & Hsk & d & Hd & Ht).
      eexists. split; [|exact Ht].
      destruct Ht1 as (Hdt1 & Hdev1 & Hsh1 & _), Ht2 as (Hdt2 & Hdev2 & _).
      assert (Hl1 : length (t_shape t1) = length ds1).
      { rewrite <- (map_length Z.of_nat), Hsh1. unfold eval_shape. apply map_length. }
      rewrite <- Hl1 in Hax.
      eapply E_Concat; try eassumption; congruence.
    - (* T-BroadcastTo *)
      intros Delta Phi G e dt ds ds' dev _ IH Hwf Hb rho HPhi E HE.
      destruct (IH rho HPhi E HE) as [t [Ev Ht]].
      destruct (broadcast_to_sound _ _ _ _ _ _ _ _ HPhi Ht Hwf Hb) as (d & Hd & Ht').
      destruct Ht as (Hdt & Hdev & _). subst.
      eexists. split; [|exact Ht']. eapply E_BroadcastTo; eassumption.
    - (* T-Permute *)
      intros Delta Phi G e dt ds dev p _ IH Hp rho HPhi E HE.
      destruct (IH rho HPhi E HE) as [t [Ev Ht]].
      destruct (permute_sound _ _ _ _ _ p Ht Hp) as (Hp' & d & Hd & Ht').
      eexists. split; [|exact Ht']. eapply E_Permute; eassumption.
    - (* T-Const *)
      intros Delta Phi G n dt dev Hn rho HPhi E HE.
      eexists. split; [apply E_Const|]. simpl. auto.
    - (* T-Fill *)
      intros Delta Phi G n dt ds dev Hwf Hn rho HPhi E HE.
      eexists. split; [apply E_Fill|]. eapply fill_sound; eassumption.
    - (* T-Iota *)
      intros Delta Phi G dt ds dev k Hwf Hnum Hk rho HPhi E HE.
      eexists. split; [apply E_Iota; exact Hk|]. eapply iota_sound; eassumption.
    - (* T-Binary with a bare number on the right *)
      intros Delta Phi G op e1 n dt ds dev _ IH Hop Hn rho HPhi E HE.
      destruct (IH rho HPhi E HE) as [t [Ev (Hdt & Hdev & Hsh & Hlen)]].
      eexists. split; [apply E_BinaryNumR; [exact Ev | rewrite Hdt; exact Hop]|].
      simpl. rewrite map_length. auto.
    - (* T-Binary with a bare number on the left *)
      intros Delta Phi G op n e2 dt ds dev _ IH Hop Hn rho HPhi E HE.
      destruct (IH rho HPhi E HE) as [t [Ev (Hdt & Hdev & Hsh & Hlen)]].
      eexists. split; [apply E_BinaryNumL; [exact Ev | rewrite Hdt; exact Hop]|].
      simpl. rewrite map_length. auto.
    - (* T-Softmax *)
      intros Delta Phi G op a e dt ds dev k _ IH Hfl Hax rho HPhi E HE.
      destruct (IH rho HPhi E HE) as [t [Ev Ht]].
      destruct (softmax_sound _ _ op _ _ _ _ _ Ht Hax) as [Hax' (d & Hd & Ht')].
      eexists. split; [|exact Ht'].
      destruct Ht as (Hdt & _).
      eapply E_Softmax; [exact Ev | rewrite Hdt; exact Hfl | exact Hax' | exact Hd].
    - (* T-Call *)
      intros Delta Phi G f dims wh params rdt rds rdev body sub args _ _ _ _ IHb Hargs Hpos Hwh
             rho HPhi E HE.
      assert (Hp : Forall (fun p => (1 <= eval_dim rho (snd p))%Z) sub).
      { eapply Forall_impl; [|exact Hpos]. intros p Hp'. exact (Hp' rho HPhi). }
      pose proof (sub_of_pos rho sub Hp) as Hs.
      destruct (args_sound _ _ _ _ E _ _ HPhi HE Hs Hargs) as (ts & Hts & Hty).
      assert (Hw : where_constraint wh (compose rho (sub_of sub))).
      { unfold where_constraint. apply Forall_forall. intros c Hc.
        apply subst_cstr_holds; [exact Hs|]. rewrite Forall_forall in Hwh.
        exact (Hwh c Hc rho HPhi). }
      destruct (IHb _ Hw _ (env_of_args _ _ _ Hty)) as [t [Ev Ht]].
      exists t. split.
      + eapply E_Call; [exact Hts | exact (Forall2_len _ _ _ Hty) | exact Hp | exact Ev].
      + apply val_has_type_subst; assumption.
    - (* T-Sub *)
      intros Delta Phi G e dt ds ds' dev _ IH Hall rho HPhi E HE.
      destruct (IH rho HPhi E HE) as [t [Ev Ht]].
      exists t. split; [exact Ev | eapply sub_sound; eassumption]. }
  split; [exact Hsyn|].
  intros Delta Phi G e ty Hc rho HPhi E HE.
  destruct Hc as [Delta Phi G e dt ds ds' dev Hs Hall].
  destruct (Hsyn _ _ _ _ _ Hs rho HPhi E HE) as [t [Ev Ht]].
  exists t. split; [exact Ev | eapply sub_sound; eassumption].
Qed.

(** (a) Type soundness for the synthesis judgment. *)
Theorem type_soundness : forall Delta (Phi : constraint) G e ty rho E,
  synth Delta Phi G e ty -> Phi rho -> env_ok rho G E ->
  exists t, eval P rho E e t /\ val_has_type rho t ty.
Proof.
  intros Delta Phi G e ty rho E Hs HPhi HE.
  exact (proj1 type_soundness_mut Delta Phi G e ty Hs rho HPhi E HE).
Qed.

(** ... and for the checking judgment. *)
Theorem type_soundness_check : forall Delta (Phi : constraint) G e ty rho E,
  check Delta Phi G e ty -> Phi rho -> env_ok rho G E ->
  exists t, eval P rho E e t /\ val_has_type rho t ty.
Proof.
  intros Delta Phi G e ty rho E Hs HPhi HE.
  exact (proj2 type_soundness_mut Delta Phi G e ty Hs rho HPhi E HE).
Qed.

(** Closed form: empty context and environment. *)
Corollary type_soundness_closed : forall Delta (Phi : constraint) e ty rho,
  synth Delta Phi [] e ty -> Phi rho ->
  exists t, eval P rho [] e t /\ val_has_type rho t ty.
Proof.
  intros. eapply type_soundness; try eassumption. apply env_ok_nil.
Qed.

(** (a) Progress: a well-typed expression never gets stuck. *)
Theorem progress : forall Delta (Phi : constraint) G e ty rho E,
  synth Delta Phi G e ty -> Phi rho -> env_ok rho G E ->
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
    | H : eval P _ _ (ENum _) _ |- _ => inversion H
    end;
    repeat match goal with
    | Ha : all_some ?l = Some ?a, Hb : all_some ?l = Some ?b |- _ =>
        rewrite Ha in Hb; injection Hb as Hb; subst b
    end;
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

(** (a) Preservation (subject reduction): every value a well-typed
    expression evaluates to has its type. *)
Theorem preservation : forall Delta (Phi : constraint) G e ty rho E t,
  synth Delta Phi G e ty -> Phi rho -> env_ok rho G E ->
  eval P rho E e t -> val_has_type rho t ty.
Proof.
  intros Delta Phi G e ty rho E t Hs HPhi HE Ev.
  destruct (type_soundness Delta Phi G e ty rho E Hs HPhi HE) as [t' [Ev' Ht']].
  rewrite (eval_deterministic _ _ _ _ _ Ev Ev'). exact Ht'.
Qed.

Theorem preservation_check : forall Delta (Phi : constraint) G e ty rho E t,
  check Delta Phi G e ty -> Phi rho -> env_ok rho G E ->
  eval P rho E e t -> val_has_type rho t ty.
Proof.
  intros Delta Phi G e ty rho E t Hs HPhi HE Ev.
  destruct (type_soundness_check Delta Phi G e ty rho E Hs HPhi HE) as [t' [Ev' Ht']].
  rewrite (eval_deterministic _ _ _ _ _ Ev Ev'). exact Ht'.
Qed.

(** The names under which [Stated.v] stated these results before they were
    proven (kept so that the issue's list can be checked off). *)
Corollary type_soundness_core : forall Delta (Phi : constraint) G e ty rho E,
  synth Delta Phi G e ty -> Phi rho -> env_ok rho G E ->
  exists t, eval P rho E e t /\ val_has_type rho t ty.
Proof. exact type_soundness. Qed.

Corollary preservation_core : forall Delta (Phi : constraint) G e ty rho E t,
  synth Delta Phi G e ty -> Phi rho -> env_ok rho G E ->
  eval P rho E e t -> val_has_type rho t ty.
Proof. exact preservation. Qed.

(** §4.18: calls are sound (the T-Call case of [type_soundness], with the
    substitution lemma [subst_eval] behind it). *)
Corollary call_sound : forall Delta (Phi : constraint) G f dims wh params ret body sub args
                              ty rho E,
  synth Delta Phi G (ECall f dims wh params ret body sub args) ty -> Phi rho ->
  env_ok rho G E ->
  exists t, eval P rho E (ECall f dims wh params ret body sub args) t /\ val_has_type rho t ty.
Proof. intros. eapply type_soundness; eassumption. Qed.

Corollary preservation_matmul : forall Delta (Phi : constraint) G e1 e2 ty rho E t,
  synth Delta Phi G (EMatmul e1 e2) ty -> Phi rho -> env_ok rho G E ->
  eval P rho E (EMatmul e1 e2) t -> val_has_type rho t ty.
Proof. intros. eapply preservation; eassumption. Qed.

Corollary preservation_transpose : forall Delta (Phi : constraint) G e ty rho E t,
  synth Delta Phi G (ETranspose e) ty -> Phi rho -> env_ok rho G E ->
  eval P rho E (ETranspose e) t -> val_has_type rho t ty.
Proof. intros. eapply preservation; eassumption. Qed.

Corollary preservation_reduce : forall Delta (Phi : constraint) G op axes kd e ty rho E t,
  synth Delta Phi G (EReduce op axes kd e) ty -> Phi rho -> env_ok rho G E ->
  eval P rho E (EReduce op axes kd e) t -> val_has_type rho t ty.
Proof. intros. eapply preservation; eassumption. Qed.

Corollary preservation_softmax : forall Delta (Phi : constraint) G op a e ty rho E t,
  synth Delta Phi G (ESoftmax op a e) ty -> Phi rho -> env_ok rho G E ->
  eval P rho E (ESoftmax op a e) t -> val_has_type rho t ty.
Proof. intros. eapply preservation; eassumption. Qed.

End Soundness.
