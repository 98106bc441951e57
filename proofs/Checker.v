(** * Checker.v — an executable type checker for a fragment of the core,
    parametric in an entailment oracle, proven sound for [synth]

    Issue 27, item 1 (a first closed step).  [synth_fn ent Delta Phi G e]
    computes a type for [e], or [None].  The obligations [entails Phi _]
    of the rules are asked of an oracle [ent : constraint -> cstr -> bool]
    on a syntactic obligation (a [cstr]: [CEq a b] for [a = b], [CLe a b]
    for [a <= b]); the only thing assumed of the oracle is that it is sound
    ([oracle_sound ent]: [true] means the obligation is entailed), which is
    a premise of the theorem, not an axiom.  The broadcast shape (§4.5) is
    computed by [bcast norm_dim] (Broadcast.v); only its non-syntactic pairs
    go to the oracle.

    Fragment: every [synth] rule (for the bare number [ENum], which no
    rule types on its own, [synth_fn] answers [None]).  Sound
    ([synth_fn_sound]) and, given a complete oracle, complete
    ([synth_fn_complete]: it answers exactly the derived type whenever one
    exists).  No agreement with the C++ checker (rules.cpp) is proved. *)

From Coq Require Import String List ZArith Lia Bool Permutation.
From ShapeML Require Import Syntax Normalize Broadcast Typing.
Import ListNotations.

Definition oracle := constraint -> cstr -> bool.

(** What the checker assumes of its oracle. *)
Definition oracle_sound (ent : oracle) : Prop :=
  forall Phi c, ent Phi c = true -> entails Phi (fun rho => cstr_holds rho c).

(** ** Decision helpers (oracle-free) *)
Fixpoint forall2b {A B : Type} (f : A -> B -> bool) (l1 : list A) (l2 : list B) : bool :=
  match l1, l2 with
  | [], [] => true
  | a :: l1', b :: l2' => f a b && forall2b f l1' l2'
  | _, _ => false
  end.

Definition incl_b (xs Delta : list dvar) : bool :=
  forallb (fun x => if in_dec string_dec x Delta then true else false) xs.

Fixpoint nodupb (l : list nat) : bool :=
  match l with
  | [] => true
  | x :: l' => negb (existsb (Nat.eqb x) l') && nodupb l'
  end.

Definition split_last2 (ds : shape) : option (shape * dim * dim) :=
  match rev ds with
  | b :: a :: r => Some (rev r, a, b)
  | _ => None
  end.

Fixpoint prod_dim (ds : shape) : dim :=
  match ds with [] => DLit 1 | d :: ds' => DMul d (prod_dim ds') end.

(** §4.11: [p] is a permutation of [0 .. n-1]. *)
Definition perm_b (p : list nat) (n : nat) : bool :=
  Nat.eqb (length p) n && nodupb p && forallb (fun i => Nat.ltb i n) p.

Definition is_num (e : expr) : option number :=
  match e with ENum n => Some n | _ => None end.

Section Checker.
Context (ent : oracle).

Definition dim_eqb (Phi : constraint) (a b : dim) : bool := ent Phi (CEq a b).

(** §4.5 B-Shape: the obligation of one aligned pair, decided. *)
Definition bdim_oblb (Phi : constraint) (a b : dim) : bool :=
  if dim_eq_dec (norm_dim a) (norm_dim b) then true
  else if dim_eq_dec (norm_dim a) (DLit 1) then true
  else if dim_eq_dec (norm_dim b) (DLit 1) then true
  else ent Phi (CEq a b).

Fixpoint bcast_rev_oblb (Phi : constraint) (xs ys : list dim) : bool :=
  match xs, ys with
  | a :: xs', b :: ys' => bdim_oblb Phi a b && bcast_rev_oblb Phi xs' ys'
  | _, _ => true
  end.

Definition bshape_fn (Phi : constraint) (s1 s2 : shape) : option shape :=
  if bcast_rev_oblb Phi (rev s1) (rev s2) then Some (bcast norm_dim s1 s2) else None.

Definition wf_dimb (Delta : list dvar) (Phi : constraint) (d : dim) : bool :=
  incl_b (dim_vars d) Delta && ent Phi (CLe (DLit 1) d).

Definition wf_tyb (Delta : list dvar) (Phi : constraint) (t : ty) : bool :=
  match t with TTensor _ ds _ => forallb (wf_dimb Delta Phi) ds end.

(** §4.13: the target's extra leading dimensions are its first
    [length ds' - length ds]. *)
Definition bto_oblb (Phi : constraint) (ds ds' : shape) : bool :=
  (length ds <=? length ds') &&
  forall2b (fun a b => if dim_eq_dec (norm_dim a) (DLit 1) then true else ent Phi (CEq a b))
           ds (skipn (length ds' - length ds) ds').

Definition same_td (dt1 dt2 : dtype) (dev1 dev2 : device) : bool :=
  (if dtype_eq_dec dt1 dt2 then true else false) && (if device_eq_dec dev1 dev2 then true else false).

(** §4.18: an argument against its parameter, instantiated. *)
Definition arg_okb (Phi : constraint) (sub : list (dvar * dim)) (G : ctx) (x : var) (p : var * ty) : bool :=
  match lookup x G, snd p with
  | Some (TTensor dt ds dev), TTensor dt' ds' dev' =>
      same_td dt dt' dev dev' && forall2b (dim_eqb Phi) ds (map (subst_dim (sub_of sub)) ds')
  | None, _ => false
  end.

Fixpoint synth_fn (Delta : list dvar) (Phi : constraint) (G : ctx) (e : expr) : option ty :=
  match e with
  | EVar x => lookup x G
  | ELet x e1 e2 =>
      match lookup x G, synth_fn Delta Phi G e1 with
      | None, Some t1 => synth_fn Delta Phi ((x, t1) :: G) e2
      | _, _ => None
      end
  | ELetAsc x t' e1 e2 =>
      match lookup x G, t', synth_fn Delta Phi G e1 with
      | None, TTensor dt ds' dev, Some (TTensor dt1 ds1 dev1) =>
          if wf_tyb Delta Phi t' && same_td dt1 dt dev1 dev && forall2b (dim_eqb Phi) ds1 ds'
          then synth_fn Delta Phi ((x, t') :: G) e2 else None
      | _, _, _ => None
      end
  | EUnary op e1 =>
      match synth_fn Delta Phi G e1 with
      | Some (TTensor dt ds dev) => if unop_ok op dt then Some (TTensor dt ds dev) else None
      | None => None
      end
  | EBinary op e1 e2 =>
      match is_num e2, is_num e1 with
      | Some n, _ =>
          match synth_fn Delta Phi G e1 with
          | Some (TTensor dt ds dev) =>
              if binop_ok op dt && num_ok dt n then Some (TTensor dt ds dev) else None
          | None => None
          end
      | None, Some n =>
          match synth_fn Delta Phi G e2 with
          | Some (TTensor dt ds dev) =>
              if binop_ok op dt && num_ok dt n then Some (TTensor dt ds dev) else None
          | None => None
          end
      | None, None =>
          match synth_fn Delta Phi G e1, synth_fn Delta Phi G e2 with
          | Some (TTensor dt1 ds1 dev1), Some (TTensor dt2 ds2 dev2) =>
              if same_td dt1 dt2 dev1 dev2 && binop_ok op dt1 then
                match bshape_fn Phi ds1 ds2 with
                | Some ds => Some (TTensor dt1 ds dev1)
                | None => None
                end
              else None
          | _, _ => None
          end
      end
  | ECompare op e1 e2 =>
      match synth_fn Delta Phi G e1, synth_fn Delta Phi G e2 with
      | Some (TTensor dt1 ds1 dev1), Some (TTensor dt2 ds2 dev2) =>
          if same_td dt1 dt2 dev1 dev2 then
            match bshape_fn Phi ds1 ds2 with
            | Some ds => Some (TTensor DBool ds dev1)
            | None => None
            end
          else None
      | _, _ => None
      end
  | ESelect c a b =>
      match synth_fn Delta Phi G c, synth_fn Delta Phi G a, synth_fn Delta Phi G b with
      | Some (TTensor dtc dsc devc), Some (TTensor dta dsa deva), Some (TTensor dtb dsb devb) =>
          if same_td dtc DBool devc deva && same_td dta dtb deva devb then
            match bshape_fn Phi dsc dsa with
            | Some ds1 =>
                match bshape_fn Phi ds1 dsb with
                | Some ds => Some (TTensor dta ds deva)
                | None => None
                end
            | None => None
            end
          else None
      | _, _, _ => None
      end
  | ECast e1 dt' =>
      match synth_fn Delta Phi G e1 with
      | Some (TTensor dt ds dev) => Some (TTensor dt' ds dev)
      | None => None
      end
  | EMatmul e1 e2 =>
      match synth_fn Delta Phi G e1, synth_fn Delta Phi G e2 with
      | Some (TTensor dt1 ds1 dev1), Some (TTensor dt2 ds2 dev2) =>
          match split_last2 ds1, split_last2 ds2 with
          | Some (da, m, k), Some (db, k', n) =>
              if same_td dt1 dt2 dev1 dev2 && is_numeric dt1 && dim_eqb Phi k k' then
                match bshape_fn Phi da db with
                | Some dc => Some (TTensor dt1 (dc ++ [m; n]) dev1)
                | None => None
                end
              else None
          | _, _ => None
          end
      | _, _ => None
      end
  | ETranspose e1 =>
      match synth_fn Delta Phi G e1 with
      | Some (TTensor dt ds dev) =>
          match split_last2 ds with
          | Some (r, a, b) => Some (TTensor dt (r ++ [b; a]) dev)
          | None => None
          end
      | None => None
      end
  | EReshape e1 ds' =>
      match synth_fn Delta Phi G e1 with
      | Some (TTensor dt ds dev) =>
          if wf_tyb Delta Phi (TTensor dt ds' dev) && ent Phi (CEq (prod_dim ds) (prod_dim ds'))
          then Some (TTensor dt ds' dev) else None
      | None => None
      end
  | EReduce op axes kd e1 =>
      match synth_fn Delta Phi G e1 with
      | Some (TTensor dt ds dev) =>
          match resolve_axes (length ds) axes with
          | Some axs =>
              if redop_ok op dt && nodupb axs
              then Some (TTensor dt (reduce_dims (DLit 1) axs kd 0 ds) dev) else None
          | None => None
          end
      | None => None
      end
  | ECopyToDevice e1 n =>
      match synth_fn Delta Phi G e1 with
      | Some (TTensor dt ds dev) => Some (TTensor dt ds (Cuda n))
      | None => None
      end
  | ECopyToHost e1 =>
      match synth_fn Delta Phi G e1 with
      | Some (TTensor dt ds dev) => Some (TTensor dt ds Host)
      | None => None
      end
  | ESlice e1 a st sz =>
      match synth_fn Delta Phi G e1 with
      | Some (TTensor dt ds dev) =>
          match resolve_axis (length ds) a with
          | Some k =>
              match nth_error ds k with
              | Some da =>
                  if ent Phi (CLe (DLit 0) st) && ent Phi (CLe (DLit 1) sz)
                     && ent Phi (CLe (DAdd st sz) da)
                     && incl_b (dim_vars st ++ dim_vars sz) Delta
                  then Some (TTensor dt (replace_at k sz ds) dev) else None
              | None => None
              end
          | None => None
          end
      | None => None
      end
  | EConcat e1 e2 a =>
      match synth_fn Delta Phi G e1, synth_fn Delta Phi G e2 with
      | Some (TTensor dt1 ds1 dev1), Some (TTensor dt2 ds2 dev2) =>
          match resolve_axis (length ds1) a with
          | Some k =>
              match nth_error ds1 k, nth_error ds2 k with
              | Some d1, Some d2 =>
                  if same_td dt1 dt2 dev1 dev2 && Nat.eqb (length ds1) (length ds2)
                     && forall2b (dim_eqb Phi) (firstn k ds1) (firstn k ds2)
                     && forall2b (dim_eqb Phi) (skipn (S k) ds1) (skipn (S k) ds2)
                  then Some (TTensor dt1 (replace_at k (DAdd d1 d2) ds1) dev1) else None
              | _, _ => None
              end
          | None => None
          end
      | _, _ => None
      end
  | EBroadcastTo e1 ds' =>
      match synth_fn Delta Phi G e1 with
      | Some (TTensor dt ds dev) =>
          if wf_tyb Delta Phi (TTensor dt ds' dev) && bto_oblb Phi ds ds'
          then Some (TTensor dt ds' dev) else None
      | None => None
      end
  | EConst n dt dev => if num_ok dt n then Some (TTensor dt [] dev) else None
  | EFill n (TTensor dt ds dev) =>
      if wf_tyb Delta Phi (TTensor dt ds dev) && num_ok dt n then Some (TTensor dt ds dev) else None
  | EIota (TTensor dt ds dev) k =>
      if wf_tyb Delta Phi (TTensor dt ds dev) && is_numeric dt && Nat.ltb k (length ds)
      then Some (TTensor dt ds dev) else None
  | ESoftmax op a e1 =>
      match synth_fn Delta Phi G e1 with
      | Some (TTensor dt ds dev) =>
          match resolve_axis (length ds) a with
          | Some _ => if is_floating dt then Some (TTensor dt ds dev) else None
          | None => None
          end
      | None => None
      end
  | EPermute e1 p =>
      match synth_fn Delta Phi G e1 with
      | Some (TTensor dt ds dev) =>
          if perm_b p (length ds)
          then Some (TTensor dt (map (fun i => nth i ds (DLit 1)) p) dev) else None
      | None => None
      end
  | ECall f dims wh params (TTensor rdt rds rdev) body sub args =>
      let Psi := where_constraint wh in
      match synth_fn dims Psi params body with
      | Some (TTensor bdt bds bdev) =>
          if forallb (fun p => wf_tyb dims Psi (snd p)) params
             && wf_tyb dims Psi (TTensor rdt rds rdev)
             && forallb (fun c => incl_b (cstr_vars c) dims) wh
             && same_td bdt rdt bdev rdev && forall2b (dim_eqb Psi) bds rds
             && forall2b (arg_okb Phi sub G) args params
             && forallb (fun p => ent Phi (CLe (DLit 1) (snd p))) sub
             && forallb (fun c => ent Phi (subst_cstr (sub_of sub) c)) wh
          then Some (TTensor rdt (map (subst_dim (sub_of sub)) rds) rdev) else None
      | None => None
      end
  | ENum _ => None
  end.

(** [check] (T-Sub): synthesize, then compare dtype, device and each
    dimension through the oracle. *)
Definition check_fn (Delta : list dvar) (Phi : constraint) (G : ctx) (e : expr) (t : ty) : bool :=
  match synth_fn Delta Phi G e, t with
  | Some (TTensor dt ds dev), TTensor dt' ds' dev' =>
      same_td dt dt' dev dev' && forall2b (dim_eqb Phi) ds ds'
  | None, _ => false
  end.

End Checker.

(** ** Soundness of the helpers *)
Lemma forall2b_sound : forall {A B : Type} (f : A -> B -> bool) (P : A -> B -> Prop),
  (forall a b, f a b = true -> P a b) ->
  forall l1 l2, forall2b f l1 l2 = true -> Forall2 P l1 l2.
Proof.
  intros A B f P Hf l1; induction l1 as [|a l1 IH]; intros [|b l2] H; simpl in H;
    try discriminate; constructor.
  - apply andb_prop in H. apply Hf, H.
  - apply andb_prop in H. apply IH, H.
Qed.

Lemma incl_b_sound : forall xs Delta, incl_b xs Delta = true -> forall x, In x xs -> In x Delta.
Proof.
  unfold incl_b. intros xs Delta H x Hx. rewrite forallb_forall in H. specialize (H x Hx).
  destruct (in_dec string_dec x Delta); [assumption | discriminate].
Qed.

Lemma nodupb_sound : forall l, nodupb l = true -> NoDup l.
Proof.
  induction l as [|x l IH]; simpl; intros H; constructor.
  - apply andb_prop in H as [H _]. apply negb_true_iff in H. intros Hin.
    assert (existsb (Nat.eqb x) l = true) by (apply existsb_exists; exists x; split; [exact Hin | apply Nat.eqb_refl]).
    congruence.
  - apply andb_prop in H as [_ H]. apply IH, H.
Qed.

Lemma perm_b_sound : forall p n, perm_b p n = true -> Permutation p (seq 0 n).
Proof.
  unfold perm_b. intros p n H. apply andb_prop in H as [H H3]. apply andb_prop in H as [H1 H2].
  apply Nat.eqb_eq in H1. rewrite forallb_forall in H3.
  apply NoDup_Permutation_bis; [apply nodupb_sound, H2 | rewrite seq_length; lia|].
  intros i Hi. apply in_seq. specialize (H3 i Hi). apply Nat.ltb_lt in H3. lia.
Qed.

Lemma split_last2_sound : forall ds r a b, split_last2 ds = Some (r, a, b) -> ds = r ++ [a; b].
Proof.
  unfold split_last2. intros ds r a b H.
  destruct (rev ds) as [|b' [|a' r']] eqn:E; try discriminate.
  injection H as <- <- <-. rewrite <- (rev_involutive ds), E. simpl. rewrite <- app_assoc. reflexivity.
Qed.

Lemma prod_dim_eval : forall rho ds, eval_dim rho (prod_dim ds) = prodZ (eval_shape rho ds).
Proof. intros rho ds; induction ds as [|d ds IH]; simpl; [reflexivity | rewrite IH; reflexivity]. Qed.

Lemma is_num_sound : forall e n, is_num e = Some n -> e = ENum n.
Proof. intros e n H; destruct e; try discriminate. injection H as ->. reflexivity. Qed.

Lemma same_td_sound : forall dt1 dt2 dev1 dev2, same_td dt1 dt2 dev1 dev2 = true -> dt1 = dt2 /\ dev1 = dev2.
Proof.
  unfold same_td. intros. destruct (dtype_eq_dec dt1 dt2), (device_eq_dec dev1 dev2); easy.
Qed.

Section Sound.
Context (ent : oracle).

Lemma dim_eqb_sound : oracle_sound ent ->
  forall Phi a b, dim_eqb ent Phi a b = true -> dim_eq_obl Phi a b.
Proof. intros Hs Phi a b H. exact (Hs Phi (CEq a b) H). Qed.

Lemma bshape_fn_sound : oracle_sound ent ->
  forall Phi s1 s2 s, bshape_fn ent Phi s1 s2 = Some s -> bshape Phi s1 s2 s.
Proof.
  intros Hs Phi s1 s2 s H. unfold bshape_fn in H.
  destruct (bcast_rev_oblb ent Phi (rev s1) (rev s2)) eqn:E; [|discriminate].
  injection H as <-. unfold bshape. apply bshape_iff_obligations. unfold bcast_obl.
  revert E. generalize (rev s2). generalize (rev s1). clear s1 s2.
  intros xs; induction xs as [|a xs IH]; intros [|b ys] E; simpl in *; try exact I.
  apply andb_prop in E as [E1 E2]. split; [|apply IH, E2].
  unfold bdim_oblb, bdim_obl in *.
  destruct (dim_eq_dec (norm_dim a) (norm_dim b)); [exact I|].
  destruct (dim_eq_dec (norm_dim a) (DLit 1)); [exact I|].
  destruct (dim_eq_dec (norm_dim b) (DLit 1)); [exact I|].
  exact (Hs Phi (CEq a b) E1).
Qed.

Lemma wf_tyb_sound : oracle_sound ent ->
  forall Delta Phi t, wf_tyb ent Delta Phi t = true -> wf_ty Delta Phi t.
Proof.
  intros Hs Delta Phi [dt ds dev] H. simpl in H. constructor.
  apply Forall_forall. rewrite forallb_forall in H. intros d Hd. specialize (H d Hd).
  unfold wf_dimb in H. apply andb_prop in H as [H1 H2]. split.
  - apply incl_b_sound, H1.
  - exact (Hs Phi _ H2).
Qed.

Lemma wf_dims_sound : oracle_sound ent ->
  forall Delta Phi ds, forallb (wf_dimb ent Delta Phi) ds = true ->
  forall dt dev, wf_ty Delta Phi (TTensor dt ds dev).
Proof. intros Hs Delta Phi ds H dt dev. apply (wf_tyb_sound Hs). exact H. Qed.

Lemma bto_oblb_sound : oracle_sound ent ->
  forall Phi ds ds', bto_oblb ent Phi ds ds' = true -> bto_obl Phi ds ds'.
Proof.
  intros Hs Phi ds ds' H. unfold bto_oblb in H. apply andb_prop in H as [_ H].
  exists (firstn (length ds' - length ds) ds'), (skipn (length ds' - length ds) ds').
  split; [symmetry; apply firstn_skipn|].
  eapply forall2b_sound; [|exact H]. intros a b Hab. cbv beta in Hab.
  destruct (dim_eq_dec (norm_dim a) (DLit 1)); [left; assumption|].
  right. exact (Hs Phi (CEq a b) Hab).
Qed.

Lemma arg_okb_sound : oracle_sound ent ->
  forall Phi sub G x p, arg_okb ent Phi sub G x p = true ->
  exists dt ds ds' dev,
    lookup x G = Some (TTensor dt ds dev) /\ snd p = TTensor dt ds' dev /\
    Forall2 (dim_eq_obl Phi) ds (map (subst_dim (sub_of sub)) ds').
Proof.
  intros Hs Phi sub G x p H. unfold arg_okb in H.
  destruct (lookup x G) as [[dt ds dev]|]; [|discriminate].
  destruct (snd p) as [dt' ds' dev']. apply andb_prop in H as [H1 H2].
  apply same_td_sound in H1 as [<- <-].
  exists dt, ds, ds', dev. split; [reflexivity|]. split; [reflexivity|].
  exact (forall2b_sound _ _ (dim_eqb_sound Hs Phi) _ _ H2).
Qed.

Ltac crush :=
  repeat match goal with
  | H : (_ && _) = true |- _ => apply andb_prop in H; destruct H
  | H : match ?x with _ => _ end = Some _ |- _ => destruct x eqn:?; try discriminate
  | H : (if ?x then _ else _) = Some _ |- _ => destruct x eqn:?; try discriminate
  | H : Some _ = Some _ |- _ => injection H as H; subst
  | H : same_td _ _ _ _ = true |- _ => apply same_td_sound in H; destruct H; subst
  end.

(** Soundness: whatever type the checker synthesizes, the rules derive. *)
Theorem synth_fn_sound : oracle_sound ent ->
  forall e Delta Phi G t, synth_fn ent Delta Phi G e = Some t -> synth Delta Phi G e t.
Proof.
  intros Hs e; induction e; intros Delta Phi G ty0 H; simpl in H; crush.
  all: try discriminate.
  all: repeat match goal with H : is_num _ = Some _ |- _ => apply is_num_sound in H; subst end.
  all: repeat match goal with H : split_last2 _ = Some (_, _, _) |- _ => apply split_last2_sound in H; subst end.
  all: repeat match goal with
       | H : bshape_fn _ _ _ _ = Some _ |- _ => apply (bshape_fn_sound Hs) in H
       | H : wf_tyb _ _ _ _ = true |- _ => apply (wf_tyb_sound Hs) in H
       | H : forallb (wf_dimb _ _ _) _ = true |- _ => pose proof (wf_dims_sound Hs _ _ _ H); clear H
       | H : nodupb _ = true |- _ => apply nodupb_sound in H
       | H : incl_b _ _ = true |- _ => pose proof (incl_b_sound _ _ H); clear H
       | H : forall2b (dim_eqb ent _) _ _ = true |- _ =>
           apply (forall2b_sound _ _ (dim_eqb_sound Hs _)) in H
       | H : dim_eqb ent _ _ _ = true |- _ => apply (dim_eqb_sound Hs) in H
       | H : Nat.eqb _ _ = true |- _ => apply Nat.eqb_eq in H
       | H : Nat.ltb _ _ = true |- _ => apply Nat.ltb_lt in H
       | H : bto_oblb _ _ _ _ = true |- _ => apply (bto_oblb_sound Hs) in H
       | H : perm_b _ _ = true |- _ => apply perm_b_sound in H
       end.
  all: try solve [econstructor; eauto; match goal with H : ent _ _ = true |- _ => exact (Hs _ _ H) end].
  - (* T-LetAsc *)
    eapply T_LetAsc; eauto. eapply T_Sub; [eapply IHe1; eassumption | assumption].
  - (* T-Reshape *)
    eapply T_Reshape; eauto. intros rho HPhi.
    pose proof (Hs _ _ H1 rho HPhi) as E. simpl in E. rewrite !prod_dim_eval in E. exact E.
  - (* T-Call *)
    repeat match goal with H : forallb _ _ = true |- _ => rewrite forallb_forall in H end.
    apply T_Call.
    + apply Forall_forall. intros q Hq. apply (wf_tyb_sound Hs). auto.
    + match goal with H : forall dt dev, wf_ty _ _ _ |- _ => apply H end.
    + apply Forall_forall. intros c Hc. apply incl_b_sound. auto.
    + eapply T_Sub; [apply IHe; eassumption | assumption].
    + eapply forall2b_sound; [|eassumption]. intros x q. apply (arg_okb_sound Hs).
    + apply Forall_forall. intros q Hq.
      match goal with H : forall x, In x sub -> _ |- _ => exact (Hs _ _ (H q Hq)) end.
    + apply Forall_forall. intros c Hc.
      match goal with H : forall x, In x wh -> ent _ _ = true |- _ => exact (Hs _ _ (H c Hc)) end.
Qed.

End Sound.

(** [check_fn] is sound for [check] (T-Sub). *)
Theorem check_fn_sound : forall ent, oracle_sound ent ->
  forall Delta Phi G e t, check_fn ent Delta Phi G e t = true -> check Delta Phi G e t.
Proof.
  intros ent Hs Delta Phi G e [dt' ds' dev'] H. unfold check_fn in H.
  destruct (synth_fn ent Delta Phi G e) as [[dt ds dev]|] eqn:E; [|discriminate].
  apply andb_prop in H as [H1 H2]. apply same_td_sound in H1 as [<- <-].
  eapply T_Sub; [apply (synth_fn_sound ent Hs); exact E|].
  exact (forall2b_sound _ _ (dim_eqb_sound ent Hs Phi) _ _ H2).
Qed.

(** ** A trivially sound oracle
    [a = b] when the normal forms coincide; [a <= b] when both normalize to
    literals in order, or [a] normalizes to a literal [<= 1] and [b] is a
    shape variable (every shape variable is [>= 1]).  It ignores Φ. *)
Definition syn_ent : oracle := fun _ c =>
  match c with
  | CEq a b => if dim_eq_dec (norm_dim a) (norm_dim b) then true else false
  | CLe a b =>
      match norm_dim a, norm_dim b, b with
      | DLit x, DLit y, _ => (x <=? y)%Z
      | DLit x, _, DVar _ => (x <=? 1)%Z
      | _, _, _ => false
      end
  | _ => false
  end.

Lemma syn_ent_sound : oracle_sound syn_ent.
Proof.
  intros Phi c H rho _. destruct c as [a b|a b|a b|a b|a b|a b|a b]; simpl in H |- *; try discriminate.
  - destruct (dim_eq_dec (norm_dim a) (norm_dim b)) as [E|]; [|discriminate].
    rewrite <- (norm_sound rho a), <- (norm_sound rho b), E. reflexivity.
  - assert (Ha : forall n, norm_dim a = DLit n -> eval_dim rho a = n)
      by (intros n E; rewrite <- (norm_sound rho a), E; reflexivity).
    revert H. destruct (norm_dim a) eqn:Ea; try discriminate. specialize (Ha _ eq_refl).
    destruct (norm_dim b) eqn:Eb; intros H;
      try (destruct b; try discriminate; apply Z.leb_le in H;
           match goal with |- context [eval_dim rho (DVar ?y)] => pose proof (eval_var_pos rho y) end;
           lia).
    apply Z.leb_le in H. rewrite <- (norm_sound rho b), Eb. simpl. lia.
Qed.

From Coq Require Import String.
Local Open Scope string_scope.

(** Matmul of a batch [(B M K)] by a shared weight [(K N)]: the batch
    dims broadcast ([B] against nothing). *)
Example synth_fn_matmul :
  synth_fn syn_ent ["B"; "M"; "K"; "N"] (fun _ => True)
    [("x", TTensor DF32 [DVar "B"; DVar "M"; DVar "K"] Host);
     ("w", TTensor DF32 [DVar "K"; DVar "N"] Host)]
    (EMatmul (EVar "x") (EVar "w"))
  = Some (TTensor DF32 [DVar "B"; DVar "M"; DVar "N"] Host).
Proof. reflexivity. Qed.

(** Broadcasting add, [(N 1) + (M)] is [(N M)], then a keepdims-free sum
    over the last axis and a scalar multiply: [(N)]. *)
Example synth_fn_bcast_reduce :
  synth_fn syn_ent ["N"; "M"] (fun _ => True)
    [("a", TTensor DF32 [DVar "N"; DLit 1] Host); ("b", TTensor DF32 [DVar "M"] Host)]
    (EBinary BMul (EReduce RSum (Some [(-1)%Z]) false (EBinary BAdd (EVar "a") (EVar "b")))
                  (ENum (NInt 2)))
  = Some (TTensor DF32 [DVar "N"] Host).
Proof. reflexivity. Qed.

(** ... and what it synthesizes, the rules derive (via soundness). *)
Example synth_bcast_reduce :
  synth ["N"; "M"] (fun _ => True)
    [("a", TTensor DF32 [DVar "N"; DLit 1] Host); ("b", TTensor DF32 [DVar "M"] Host)]
    (EBinary BMul (EReduce RSum (Some [(-1)%Z]) false (EBinary BAdd (EVar "a") (EVar "b")))
                  (ENum (NInt 2)))
    (TTensor DF32 [DVar "N"] Host).
Proof. apply (synth_fn_sound syn_ent syn_ent_sound). exact synth_fn_bcast_reduce. Qed.

(** Permute [(A B C)] by [[2; 0; 1]]: [(C A B)]; [[0; 0; 1]] is rejected. *)
Example synth_fn_permute :
  synth_fn syn_ent ["A"; "B"; "C"] (fun _ => True)
    [("x", TTensor DF32 [DVar "A"; DVar "B"; DVar "C"] Host)]
    (EPermute (EVar "x") [2; 0; 1]) = Some (TTensor DF32 [DVar "C"; DVar "A"; DVar "B"] Host)
  /\ synth_fn syn_ent ["A"; "B"; "C"] (fun _ => True)
    [("x", TTensor DF32 [DVar "A"; DVar "B"; DVar "C"] Host)]
    (EPermute (EVar "x") [0; 0; 1]) = None.
Proof. split; reflexivity. Qed.

(** A contraction mismatch [(M K) @ (N K)] ([K] against [N]) is rejected:
    the syntactic oracle does not prove [K = N]. *)
Example synth_fn_matmul_mismatch :
  synth_fn syn_ent ["M"; "K"; "N"] (fun _ => True)
    [("x", TTensor DF32 [DVar "M"; DVar "K"] Host); ("y", TTensor DF32 [DVar "N"; DVar "K"] Host)]
    (EMatmul (EVar "x") (EVar "y")) = None.
Proof. reflexivity. Qed.

(** Let-ascription checks the bound expression (T-Sub) through the oracle:
    [(+ N 0)] and [N] have the same normal form. *)
Example synth_fn_let_asc :
  synth_fn syn_ent ["N"] (fun _ => True) [("x", TTensor DF32 [DAdd (DVar "N") (DLit 0)] Host)]
    (ELetAsc "y" (TTensor DF32 [DVar "N"] Host) (EUnary UExp (EVar "x")) (EVar "y"))
  = Some (TTensor DF32 [DVar "N"] Host).
Proof. reflexivity. Qed.

(** T-Call: [f] with [(dims N)] and [y : (tensor f32 (N) host)], applied to
    [x : (tensor f32 (M) host)] with [N := M] (as in Typing.v's
    [call_of_a_declared_dimension_is_typed]); a callee whose parameter names
    an undeclared [N] is rejected (E0104). *)
Example synth_fn_call :
  synth_fn syn_ent ["M"] (fun _ => True) [("x", TTensor DF32 [DVar "M"] Host)]
    (ECall "f" ["N"] [] [("y", TTensor DF32 [DVar "N"] Host)] (TTensor DF32 [DVar "N"] Host)
           (EVar "y") [("N", DVar "M")] ["x"])
  = Some (TTensor DF32 [DVar "M"] Host)
  /\ synth_fn syn_ent ["M"] (fun _ => True) [("x", TTensor DF32 [DVar "M"] Host)]
    (ECall "f" [] [] [("y", TTensor DF32 [DVar "N"] Host)] (TTensor DF32 [DVar "N"] Host)
           (EVar "y") [("N", DVar "M")] ["x"])
  = None.
Proof. split; reflexivity. Qed.

(** ** Completeness
    Given a complete oracle (every entailed obligation is answered [true]),
    the checker answers whenever the rules derive a type, and it answers
    exactly that type: [synth] is a function of [Delta], [Phi], [G], [e]
    (the broadcast shape is unique, [bshape_function]), so no relation up to
    normalization is needed. *)
Local Close Scope string_scope.
Local Open Scope list_scope.

Definition oracle_complete (ent : oracle) : Prop :=
  forall Phi c, entails Phi (fun rho => cstr_holds rho c) -> ent Phi c = true.

Lemma forall2b_complete : forall {A B : Type} (f : A -> B -> bool) (P : A -> B -> Prop),
  (forall a b, P a b -> f a b = true) ->
  forall l1 l2, Forall2 P l1 l2 -> forall2b f l1 l2 = true.
Proof.
  intros A B f P Hf l1 l2 H; induction H; simpl; [reflexivity|].
  rewrite (Hf _ _ H), IHForall2. reflexivity.
Qed.

Lemma incl_b_complete : forall xs Delta, (forall x, In x xs -> In x Delta) -> incl_b xs Delta = true.
Proof.
  unfold incl_b. intros xs Delta H. apply forallb_forall. intros x Hx.
  destruct (in_dec string_dec x Delta); [reflexivity | exfalso; auto].
Qed.

Lemma nodupb_complete : forall l, NoDup l -> nodupb l = true.
Proof.
  intros l H; induction H as [|x l Hx _ IH]; simpl; [reflexivity|].
  rewrite IH, andb_true_r. apply negb_true_iff.
  destruct (existsb (Nat.eqb x) l) eqn:E; [|reflexivity].
  apply existsb_exists in E as [y [Hy E]]. apply Nat.eqb_eq in E. subst. contradiction.
Qed.

Lemma perm_b_complete : forall p n, Permutation p (seq 0 n) -> perm_b p n = true.
Proof.
  unfold perm_b. intros p n H.
  rewrite (Permutation_length H), seq_length, Nat.eqb_refl.
  rewrite (nodupb_complete p (Permutation_NoDup (Permutation_sym H) (seq_NoDup n 0))).
  simpl. apply forallb_forall. intros i Hi. apply Nat.ltb_lt.
  apply (Permutation_in _ H), in_seq in Hi. lia.
Qed.

Lemma split_last2_app : forall r a b, split_last2 (r ++ [a; b]) = Some (r, a, b).
Proof.
  intros r a b. unfold split_last2.
  replace (r ++ [a; b]) with ((r ++ [a]) ++ [b]) by (rewrite <- app_assoc; reflexivity).
  rewrite rev_app_distr, rev_app_distr. simpl. rewrite rev_involutive. reflexivity.
Qed.

Lemma same_td_refl : forall dt dev, same_td dt dt dev dev = true.
Proof.
  intros. unfold same_td. destruct (dtype_eq_dec dt dt), (device_eq_dec dev dev); easy.
Qed.

Section Complete.
Context (ent : oracle).

Lemma dim_eqb_complete : oracle_complete ent ->
  forall Phi a b, dim_eq_obl Phi a b -> dim_eqb ent Phi a b = true.
Proof. intros Hc Phi a b H. exact (Hc Phi (CEq a b) H). Qed.

Lemma bshape_fn_complete : oracle_complete ent ->
  forall Phi s1 s2 s, bshape Phi s1 s2 s -> bshape_fn ent Phi s1 s2 = Some s.
Proof.
  intros Hc Phi s1 s2 s H. unfold bshape, bshape_n in H.
  pose proof (bshape_rev_obl norm_dim _ _ _ _ H) as Ho.
  apply bshape_rev_function in H.
  unfold bshape_fn.
  replace (bcast_rev_oblb ent Phi (rev s1) (rev s2)) with true.
  - f_equal. unfold bcast. rewrite <- H, rev_involutive. reflexivity.
  - symmetry. revert Ho. generalize (rev s2). generalize (rev s1). clear -Hc.
    intros xs; induction xs as [|a xs IH]; intros [|b ys] Ho; simpl in *; try reflexivity.
    destruct Ho as [H1 H2]. rewrite (IH _ H2), andb_true_r.
    unfold bdim_oblb, bdim_obl in *.
    destruct (dim_eq_dec (norm_dim a) (norm_dim b)); [reflexivity|].
    destruct (dim_eq_dec (norm_dim a) (DLit 1)); [reflexivity|].
    destruct (dim_eq_dec (norm_dim b) (DLit 1)); [reflexivity|].
    exact (Hc Phi (CEq a b) H1).
Qed.

Lemma wf_tyb_complete : oracle_complete ent ->
  forall Delta Phi t, wf_ty Delta Phi t -> wf_tyb ent Delta Phi t = true.
Proof.
  intros Hc Delta Phi t H. destruct H as [dt ds dev H]. simpl.
  apply forallb_forall. intros d Hd. rewrite Forall_forall in H. destruct (H d Hd) as [H1 H2].
  unfold wf_dimb. rewrite (incl_b_complete _ _ H1). exact (Hc Phi (CLe (DLit 1) d) H2).
Qed.

Lemma bto_oblb_complete : oracle_complete ent ->
  forall Phi ds ds', bto_obl Phi ds ds' -> bto_oblb ent Phi ds ds' = true.
Proof.
  intros Hc Phi ds ds' [pre [tl [E H]]]. subst ds'. unfold bto_oblb.
  assert (L : List.length ds = List.length tl) by (clear -H; induction H; simpl; congruence).
  rewrite app_length, <- L.
  replace (List.length pre + List.length ds - List.length ds) with (List.length pre) by lia.
  rewrite skipn_app, skipn_all, Nat.sub_diag. simpl.
  replace (List.length ds <=? List.length pre + List.length ds) with true by (symmetry; apply Nat.leb_le; lia).
  simpl. eapply forall2b_complete; [|exact H]. intros a b [Hab|Hab]; cbv beta.
  - destruct (dim_eq_dec (norm_dim a) (DLit 1)); [reflexivity | contradiction].
  - destruct (dim_eq_dec (norm_dim a) (DLit 1)); [reflexivity|]. exact (Hc Phi (CEq a b) Hab).
Qed.

Lemma arg_okb_complete : oracle_complete ent ->
  forall Phi sub G x p,
  (exists dt ds ds' dev,
    lookup x G = Some (TTensor dt ds dev) /\ snd p = TTensor dt ds' dev /\
    Forall2 (dim_eq_obl Phi) ds (map (subst_dim (sub_of sub)) ds')) ->
  arg_okb ent Phi sub G x p = true.
Proof.
  intros Hc Phi sub G x p [dt [ds [ds' [dev [H1 [H2 H3]]]]]]. unfold arg_okb.
  rewrite H1, H2, same_td_refl. simpl.
  exact (forall2b_complete _ _ (dim_eqb_complete Hc Phi) _ _ H3).
Qed.

(** Completeness: whatever type the rules derive, the checker synthesizes
    (exactly that type); and whatever [check] accepts, [check_fn] accepts. *)
Lemma wf_dims_complete : oracle_complete ent ->
  forall Delta Phi dt ds dev, wf_ty Delta Phi (TTensor dt ds dev) -> forallb (wf_dimb ent Delta Phi) ds = true.
Proof. intros Hc Delta Phi dt ds dev H. exact (wf_tyb_complete Hc _ _ _ H). Qed.

Ltac ccomp Hc :=
  repeat (first
    [ progress rewrite ?same_td_refl, ?split_last2_app, ?Nat.eqb_refl, ?andb_true_r, ?andb_true_l
    | match goal with
      | |- context [is_num ?e] =>
          let E := fresh in destruct (is_num e) eqn:E;
          [apply is_num_sound in E; subst; simpl in *; discriminate|]
      | H : synth_fn _ _ _ _ _ = Some _ |- _ => rewrite H; clear H
      | H : lookup _ _ = _ |- _ => rewrite H; clear H
      | H : resolve_axes _ _ = Some _ |- _ => rewrite H; clear H
      | H : resolve_axis _ _ = Some _ |- _ => rewrite H; clear H
      | H : nth_error _ _ = Some _ |- _ => rewrite H; clear H
      | H : ?X = true |- _ => rewrite H; clear H
      | H : bshape ?P ?a ?b ?c |- _ => rewrite (bshape_fn_complete Hc _ _ _ _ H); clear H
      | H : wf_ty ?D ?P ?t |- _ =>
          first [rewrite (wf_tyb_complete Hc _ _ _ H) | rewrite (wf_dims_complete Hc _ _ _ _ _ H)]; clear H
      | H : dim_eq_obl ?P ?a ?b |- _ => rewrite (dim_eqb_complete Hc _ _ _ H); clear H
      | H : Forall2 (dim_eq_obl ?P) _ _ |- _ =>
          rewrite (forall2b_complete _ _ (dim_eqb_complete Hc P) _ _ H); clear H
      | H : NoDup _ |- _ => rewrite (nodupb_complete _ H); clear H
      | H : Permutation _ (seq 0 _) |- _ => rewrite (perm_b_complete _ _ H); clear H
      | H : bto_obl _ _ _ |- _ => rewrite (bto_oblb_complete Hc _ _ _ H); clear H
      | H : _ < _ |- _ => apply Nat.ltb_lt in H
      | H : entails ?P _ |- context [ent ?P ?c] => rewrite (Hc P c H)
      | H : forall x, In x _ -> In x _ |- _ => rewrite (incl_b_complete _ _ H); clear H
      | H : reshape_obl ?P ?a ?b |- _ =>
          rewrite (Hc P (CEq (prod_dim a) (prod_dim b))
                     (fun rho Hr => eq_trans (prod_dim_eval rho a)
                                      (eq_trans (H rho Hr) (eq_sym (prod_dim_eval rho b)))));
          clear H
      | H : Datatypes.length _ = Datatypes.length _ |- _ => rewrite H; clear H
      end ]); try reflexivity.

Ltac open_check :=
  match goal with
  | H : check_fn ?en ?D ?P ?G ?e _ = true |- _ =>
      unfold check_fn in H;
      let E := fresh in
      destruct (synth_fn en D P G e) as [[? ? ?]|] eqn:E; [|discriminate];
      apply andb_prop in H; destruct H as [? ?];
      match goal with Hs : same_td _ _ _ _ = true |- _ => apply same_td_sound in Hs; destruct Hs; subst end
  end.

(** Completeness: whatever type the rules derive, the checker synthesizes
    (exactly that type); and whatever [check] accepts, [check_fn] accepts. *)
Theorem synth_check_fn_complete : oracle_complete ent ->
  (forall Delta Phi G e t, synth Delta Phi G e t -> synth_fn ent Delta Phi G e = Some t) /\
  (forall Delta Phi G e t, check Delta Phi G e t -> check_fn ent Delta Phi G e t = true).
Proof.
  intros Hc.
  assert (Hall : forall Delta Phi G e t, synth Delta Phi G e t -> synth_fn ent Delta Phi G e = Some t).
  { apply (synth_mut (fun Delta Phi G e t => synth_fn ent Delta Phi G e = Some t)
                     (fun Delta Phi G e t => check_fn ent Delta Phi G e t = true)).
    3: { intros Delta Phi G x [dt ds' dev] e1 e2 t2 Hl Hwf Hck IH1 Hs2 IH2.
         cbn [synth_fn]. open_check. ccomp Hc. }
    24: { intros Delta Phi G f dims wh params rdt rds rdev body sub args Hp Hr Hw Hck IHb Ha Hs Hwh.
          cbn [synth_fn]. open_check. ccomp Hc.
          rewrite Forall_forall in Hp, Hw, Hs, Hwh.
          replace (forallb (fun p : var * ty => wf_tyb ent dims (where_constraint wh) (snd p)) params)
            with true by (symmetry; apply forallb_forall; intros q Hq; apply (wf_tyb_complete Hc); auto).
          assert (E1 : forallb (fun c : cstr => incl_b (cstr_vars c) dims) wh = true).
          { apply forallb_forall. intros q Hq. apply incl_b_complete. exact (Hw q Hq). }
          rewrite E1.
          assert (E2 : forall2b (arg_okb ent Phi sub G) args params = true).
          { apply (forall2b_complete _ _ (arg_okb_complete Hc Phi sub G) _ _ Ha). }
          assert (E3 : forallb (fun p : dvar * dim => ent Phi (CLe (DLit 1) (snd p))) sub = true).
          { apply forallb_forall. intros q Hq. apply Hc. exact (Hs q Hq). }
          assert (E4 : forallb (fun c : cstr => ent Phi (subst_cstr (sub_of sub) c)) wh = true).
          { apply forallb_forall. intros q Hq. apply Hc. exact (Hwh q Hq). }
          rewrite E2, E3, E4.
          reflexivity. }
    all: intros; cbn [synth_fn is_num].
    all: try unfold check_fn.
    all: ccomp Hc. }
  split; [exact Hall|].
  intros Delta Phi G e t H. destruct H as [Delta Phi G e dt ds ds' dev Hs Hf].
  unfold check_fn. rewrite (Hall _ _ _ _ _ Hs), same_td_refl.
  exact (forall2b_complete _ _ (dim_eqb_complete Hc Phi) _ _ Hf).
Qed.

Theorem synth_fn_complete : oracle_complete ent ->
  forall Delta Phi G e t, synth Delta Phi G e t -> synth_fn ent Delta Phi G e = Some t.
Proof. intros Hc. exact (proj1 (synth_check_fn_complete Hc)). Qed.

Theorem check_fn_complete : oracle_complete ent ->
  forall Delta Phi G e t, check Delta Phi G e t -> check_fn ent Delta Phi G e t = true.
Proof. intros Hc. exact (proj2 (synth_check_fn_complete Hc)). Qed.

End Complete.

(** With an oracle both sound and complete, the checker decides [synth]. *)
Theorem synth_fn_correct : forall ent, oracle_sound ent -> oracle_complete ent ->
  forall Delta Phi G e t, synth_fn ent Delta Phi G e = Some t <-> synth Delta Phi G e t.
Proof.
  intros ent Hs Hc Delta Phi G e t. split.
  - apply (synth_fn_sound ent Hs).
  - apply (synth_fn_complete ent Hc).
Qed.

(** The oracle that answers [true] to everything is complete (though not
    sound); through it, completeness gives determinism of the rules: the
    synthesized type is unique (exactly, not only up to normalization). *)
Definition true_ent : oracle := fun _ _ => true.

Lemma true_ent_complete : oracle_complete true_ent.
Proof. intros Phi c _. reflexivity. Qed.

Theorem synth_deterministic : forall Delta Phi G e t1 t2,
  synth Delta Phi G e t1 -> synth Delta Phi G e t2 -> t1 = t2.
Proof.
  intros Delta Phi G e t1 t2 H1 H2.
  apply (synth_fn_complete true_ent true_ent_complete) in H1, H2. congruence.
Qed.
