(** * Entry.v — the entry check of a call at run time (§5.1, §5.2)

    A compiled entry is called with concrete tensors.  The runtime binds
    the shape variables from the input shapes (§5.2, step 1: a parameter
    dimension that is a lone variable binds it, left to right, first
    occurrence), then evaluates every parameter dimension under the
    binding and compares it with the input's extent (so a variable bound
    twice to different values is a mismatch), checks dtypes and devices,
    and evaluates the [where] clause (§5.1).  Dimension arithmetic is
    signed 64-bit, and an overflow rejects the binding (§8, "the binding
    overflows 64-bit dimension arithmetic").

    - [bind_entry] is that check as a function: it returns the valuation
      the binding denotes, or [None].  It also rejects an entry one of whose
      shape variables is no parameter's lone dimension (E0308 for step 1).
    - [bind_entry_env_ok]: a passing check gives [env_ok] for the
      environment of the parameters and the inputs, and Φ; this is the
      hypothesis of [type_soundness] and [runtime_checked_sound].
    - [entry_sound]: an entry accepted by the checker, called with inputs
      that pass [bind_entry], evaluates to a value of its result type.
    - [entry_binding_unique], [bare_vars_determined]: the valuation is
      determined by the inputs (the E0308 guarantee).
    - [bind_entry_in_i64]: under the accepted valuation, every parameter
      dimension and every side of every [where] constraint evaluates in
      64-bit arithmetic without overflow, to its integer value.
    - [bind_entry_complete]: the check is not stronger than typing: inputs
      of the parameter types under a valuation satisfying Φ, whose
      dimensions fit 64 bits, pass it, and it returns that valuation.

    A second occurrence of a bound variable is not rebound: it is checked
    like every other dimension, so a variable that two inputs would give
    two values is a mismatch at run time ([entry_rejects_conflict]).  E0308
    is the definition-time error for a variable no rule determines; here
    [determined] (step 1 only).

    Not modelled: steps 2 and 3 of §5.2 (solving a dimension linear in one
    unbound variable, or a [where] equality); an entry using them is
    rejected by [bind_entry] (E0308 here), not accepted.  Given variables
    (§4.19), dtype and device variables of generic entries (§3.5). *)

From Coq Require Import String List ZArith Bool Lia.
From ShapeML Require Import Syntax Broadcast Typing Semantics Soundness Where.
Import ListNotations.

(** ** Signed 64-bit dimension arithmetic *)

Definition i64_min : Z := (- 2 ^ 63)%Z.
Definition i64_max : Z := (2 ^ 63 - 1)%Z.
Definition in_i64 (z : Z) : bool := Z.leb i64_min z && Z.leb z i64_max.

Definition chk64 (z : Z) : option Z := if in_i64 z then Some z else None.

(** Every intermediate value is checked: [None] is an overflow. *)
Fixpoint eval_dim_64 (b : binding) (d : dim) : option Z :=
  match d with
  | DLit n => chk64 n
  | DVar x => chk64 (b x)
  | DAdd a c =>
      match eval_dim_64 b a, eval_dim_64 b c with
      | Some u, Some v => chk64 (u + v) | _, _ => None end
  | DSub a c =>
      match eval_dim_64 b a, eval_dim_64 b c with
      | Some u, Some v => chk64 (u - v) | _, _ => None end
  | DMul a c =>
      match eval_dim_64 b a, eval_dim_64 b c with
      | Some u, Some v => chk64 (u * v) | _, _ => None end
  | DFloorDiv a c =>
      match eval_dim_64 b a with Some u => chk64 (u / Zpos c) | None => None end
  | DMod a c =>
      match eval_dim_64 b a with Some u => chk64 (u mod Zpos c) | None => None end
  end%Z.

Lemma chk64_some : forall z w, chk64 z = Some w -> w = z /\ in_i64 z = true.
Proof.
  intros z w H. unfold chk64 in H. destruct (in_i64 z) eqn:E; [|discriminate].
  injection H as <-. auto.
Qed.

(** What checked 64-bit arithmetic computes, when it does not overflow, is
    the integer value the model uses. *)
Lemma eval_dim_64_sound : forall b d z,
  eval_dim_64 b d = Some z -> z = eval_dim_b b d /\ in_i64 z = true.
Proof.
  intros b d. induction d as [n|x|d1 IH1 d2 IH2|d1 IH1 d2 IH2|d1 IH1 d2 IH2|d1 IH1 c|d1 IH1 c];
    intros z H; simpl in *.
  - apply chk64_some in H as [-> Hr]. auto.
  - apply chk64_some in H as [-> Hr]. auto.
  - destruct (eval_dim_64 b d1) as [u|] eqn:E1; [|discriminate].
    destruct (eval_dim_64 b d2) as [v|] eqn:E2; [|discriminate].
    apply chk64_some in H as [-> Hr].
    destruct (IH1 u eq_refl) as [-> _]. destruct (IH2 v eq_refl) as [-> _]. auto.
  - destruct (eval_dim_64 b d1) as [u|] eqn:E1; [|discriminate].
    destruct (eval_dim_64 b d2) as [v|] eqn:E2; [|discriminate].
    apply chk64_some in H as [-> Hr].
    destruct (IH1 u eq_refl) as [-> _]. destruct (IH2 v eq_refl) as [-> _]. auto.
  - destruct (eval_dim_64 b d1) as [u|] eqn:E1; [|discriminate].
    destruct (eval_dim_64 b d2) as [v|] eqn:E2; [|discriminate].
    apply chk64_some in H as [-> Hr].
    destruct (IH1 u eq_refl) as [-> _]. destruct (IH2 v eq_refl) as [-> _]. auto.
  - destruct (eval_dim_64 b d1) as [u|] eqn:E1; [|discriminate].
    apply chk64_some in H as [-> Hr].
    destruct (IH1 u eq_refl) as [-> _]. auto.
  - destruct (eval_dim_64 b d1) as [u|] eqn:E1; [|discriminate].
    apply chk64_some in H as [-> Hr].
    destruct (IH1 u eq_refl) as [-> _]. auto.
Qed.

(** ** The binding (§5.2, step 1) *)

Definition ty_dims (t : ty) : shape := match t with TTensor _ ds _ => ds end.

Definition is_lone (x : dvar) (d : dim) : bool :=
  match d with DVar y => String.eqb x y | _ => false end.

(** E0308 (step 1 of §5.2): every shape variable of the entry is the lone
    dimension of some parameter. *)
Definition determined (dims : list dvar) (params : ctx) : bool :=
  forallb (fun x => existsb (fun p => existsb (is_lone x) (ty_dims (snd p))) params) dims.

(** Bind the lone variables of one parameter from the input's extents, left
    to right; a variable already bound keeps its first value (a second
    occurrence is checked like any other dimension, below). *)
Fixpoint bind_dims (acc : list (dvar * nat)) (ds : shape) (ns : list nat)
  : list (dvar * nat) :=
  match ds, ns with
  | DVar x :: ds', n :: ns' =>
      match lookup x acc with
      | Some _ => bind_dims acc ds' ns'
      | None => bind_dims (acc ++ [(x, n)]) ds' ns'
      end
  | _ :: ds', _ :: ns' => bind_dims acc ds' ns'
  | _, _ => acc
  end.

Fixpoint bind_params {V : Type} (acc : list (dvar * nat)) (params : ctx)
    (inputs : list (tensor V)) : list (dvar * nat) :=
  match params, inputs with
  | p :: ps, t :: ts => bind_params (bind_dims acc (ty_dims (snd p)) (t_shape t)) ps ts
  | _, _ => acc
  end.

(** An unbound variable reads 0, which the check [>= 1] rejects. *)
Definition binding_of (acc : list (dvar * nat)) : binding :=
  fun x => match lookup x acc with Some n => Z.of_nat n | None => 0%Z end.

(** ** The checks (§5.1) *)

Fixpoint all2 {A B : Type} (f : A -> B -> bool) (l1 : list A) (l2 : list B) : bool :=
  match l1, l2 with
  | [], [] => true
  | a :: l1', b :: l2' => f a b && all2 f l1' l2'
  | _, _ => false
  end.

Definition dim_matches (b : binding) (d : dim) (n : nat) : bool :=
  match eval_dim_64 b d with Some z => Z.eqb z (Z.of_nat n) | None => false end.

(** One input against its parameter: dtype, device, every dimension
    evaluated (64-bit) equal to the extent, rank, data length. *)
Definition check_input {V : Type} (b : binding) (p : var * ty) (t : tensor V) : bool :=
  match snd p with
  | TTensor dt ds dev =>
      (if dtype_eq_dec (t_dtype t) dt then true else false) &&
      (if device_eq_dec (t_device t) dev then true else false) &&
      all2 (dim_matches b) ds (t_shape t) &&
      Nat.eqb (length (t_data t)) (prod (t_shape t))
  end.

Definition cstr_sides (c : cstr) : list dim :=
  match c with
  | CEq x y | CNe x y | CLt x y | CLe x y | CGt x y | CGe x y | CDivides x y => [x; y]
  end.

Definition fits64 (b : binding) (d : dim) : bool :=
  match eval_dim_64 b d with Some _ => true | None => false end.

(** The entry check: E0308, bind, then every input, every variable
    [>= 1] and the [where] clause (evaluated without 64-bit overflow). *)
Definition bind_entry {V : Type} (dims : list dvar) (cs : list cstr) (params : ctx)
    (inputs : list (tensor V)) : option valuation :=
  let b := binding_of (bind_params [] params inputs) in
  if determined dims params &&
     all2 (check_input b) params inputs &&
     forallb (fun c => forallb (fits64 b) (cstr_sides c)) cs &&
     rt_check_where dims cs b
  then Some (val_of b) else None.

(** The environment of an entry call: each parameter name bound to its
    input. *)
Definition entry_env {V : Type} (params : ctx) (inputs : list (tensor V))
  : list (var * tensor V) :=
  combine (map fst params) inputs.

(** What the checker establishes about an entry's signature (E0104): its
    parameter dimensions and [where] clause name only its shape variables. *)
Definition entry_scoped (dims : list dvar) (cs : list cstr) (params : ctx) : Prop :=
  (forall p d x, In p params -> In d (ty_dims (snd p)) -> In x (dim_vars d) -> In x dims) /\
  (forall c, In c cs -> forall x, In x (cstr_vars c) -> In x dims).

(** ** Soundness of the entry check *)

Lemma all2_Forall2 : forall {A B : Type} (f : A -> B -> bool) l1 l2,
  all2 f l1 l2 = true -> Forall2 (fun a b => f a b = true) l1 l2.
Proof.
  intros A B f l1. induction l1 as [|a l1 IH]; intros [|b' l2] H; simpl in H;
    try discriminate; constructor.
  - apply andb_true_iff in H as [H _]. exact H.
  - apply andb_true_iff in H as [_ H]. apply IH. exact H.
Qed.

Lemma dims_match_shape : forall b (ds : shape) ns,
  (forall d x, In d ds -> In x (dim_vars d) -> (1 <= b x)%Z) ->
  all2 (dim_matches b) ds ns = true ->
  map Z.of_nat ns = eval_shape (val_of b) ds.
Proof.
  intros b ds. induction ds as [|d ds IH]; intros [|n ns] Hpos H; simpl in H;
    try discriminate; [reflexivity|].
  apply andb_true_iff in H as [Hd H]. simpl. f_equal.
  - unfold dim_matches in Hd. destruct (eval_dim_64 b d) as [z|] eqn:E; [|discriminate].
    apply Z.eqb_eq in Hd. subst z. apply eval_dim_64_sound in E as [E _].
    rewrite eval_dim_val_of; [lia|]. intros x Hx. eapply Hpos; [left; reflexivity|exact Hx].
  - apply IH; [|exact H]. intros d' x Hd' Hx. eapply Hpos; [right; exact Hd'|exact Hx].
Qed.

Lemma check_input_sound : forall {V : Type} b (p : var * ty) (t : tensor V),
  (forall d x, In d (ty_dims (snd p)) -> In x (dim_vars d) -> (1 <= b x)%Z) ->
  check_input b p t = true ->
  val_has_type (val_of b) t (snd p).
Proof.
  intros V b [n [dt ds dev]] t Hpos H. unfold check_input in H. simpl in *.
  apply andb_true_iff in H as [H Hlen]. apply andb_true_iff in H as [H Hds].
  apply andb_true_iff in H as [Hdt Hdev].
  destruct (dtype_eq_dec (t_dtype t) dt); [|discriminate].
  destruct (device_eq_dec (t_device t) dev); [|discriminate].
  apply Nat.eqb_eq in Hlen.
  repeat split; auto. apply dims_match_shape; assumption.
Qed.

Lemma env_ok_combine : forall {V : Type} rho (params : ctx) (inputs : list (tensor V)),
  Forall2 (fun p t => val_has_type rho t (snd p)) params inputs ->
  env_ok rho params (entry_env params inputs).
Proof.
  intros V rho params inputs H. unfold entry_env.
  induction H as [|[n ty] t ps ts Ht _ IH].
  - apply env_ok_nil.
  - simpl. apply env_ok_cons; assumption.
Qed.

Lemma bind_entry_parts : forall {V : Type} dims cs params (inputs : list (tensor V)) rho,
  bind_entry dims cs params inputs = Some rho ->
  let b := binding_of (bind_params [] params inputs) in
  rho = val_of b /\ determined dims params = true /\
  all2 (check_input b) params inputs = true /\
  forallb (fun c => forallb (fits64 b) (cstr_sides c)) cs = true /\
  rt_check_where dims cs b = true.
Proof.
  intros V dims cs params inputs rho H b. unfold bind_entry in H. fold b in H.
  destruct (determined dims params) eqn:E1; simpl in H; [|discriminate].
  destruct (all2 (check_input b) params inputs) eqn:E2; simpl in H; [|discriminate].
  destruct (forallb (fun c => forallb (fits64 b) (cstr_sides c)) cs) eqn:E3;
    simpl in H; [|discriminate].
  destruct (rt_check_where dims cs b) eqn:E4; [|discriminate].
  injection H as <-. auto.
Qed.

(** Inputs that pass the entry check have the parameter types under the
    valuation it returns, and that valuation satisfies the [where] clause:
    [env_ok], the hypothesis of the run-time soundness theorems. *)
Theorem bind_entry_env_ok : forall {V : Type} dims cs params (inputs : list (tensor V)) rho,
  entry_scoped dims cs params ->
  bind_entry dims cs params inputs = Some rho ->
  env_ok rho params (entry_env params inputs) /\ where_constraint cs rho /\
  Forall2 (fun p t => val_has_type rho t (snd p)) params inputs.
Proof.
  intros V dims cs params inputs rho [Hsc Hwc] H.
  apply bind_entry_parts in H as (-> & _ & Hin & _ & Hw).
  set (b := binding_of (bind_params [] params inputs)) in *. clearbody b.
  destruct (rt_check_sound dims cs b Hwc Hw) as [Hdims HPhi].
  assert (Hpos : forall x, In x dims -> (1 <= b x)%Z).
  { intros x Hx. rewrite <- (Hdims x Hx). lia. }
  assert (Hall : Forall2 (fun p t => val_has_type (val_of b) t (snd p)) params inputs).
  { apply all2_Forall2 in Hin.
    assert (Hsc' : forall p, In p params -> forall d x, In d (ty_dims (snd p)) ->
                     In x (dim_vars d) -> In x dims) by (intros; eapply Hsc; eassumption).
    clear Hsc Hw Hdims HPhi Hwc.
    induction Hin as [|p t ps ts Hpt _ IH]; constructor.
    - apply check_input_sound; [|exact Hpt]. intros d x Hd Hx.
      apply Hpos. eapply Hsc'; [left; reflexivity|exact Hd|exact Hx].
    - apply IH. intros p' Hp'. apply Hsc'. right. exact Hp'. }
  split; [|split]; auto. apply env_ok_combine. exact Hall.
Qed.

(** End to end: an entry whose body the checker accepts under its
    parameters and [where] clause, called with inputs that the runtime's
    entry check accepts, evaluates to a value of its result type. *)
Theorem entry_sound : forall {V : Type} (P : prims V) dims cs params e ty
                             (inputs : list (tensor V)) rho,
  entry_scoped dims cs params ->
  check dims (where_constraint cs) params e ty ->
  bind_entry dims cs params inputs = Some rho ->
  exists t, eval P rho (entry_env params inputs) e t /\ val_has_type rho t ty.
Proof.
  intros V P dims cs params e ty inputs rho Hsc Hty H.
  destruct (bind_entry_env_ok dims cs params inputs rho Hsc H) as (HE & HPhi & _).
  eapply type_soundness_check; eassumption.
Qed.

(** ** Determinacy (E0308) *)

(** Any two valuations under which the inputs have the parameter types
    agree on every variable that is some parameter's lone dimension. *)
Theorem bare_vars_determined : forall {V : Type} (params : ctx) (inputs : list (tensor V))
                                      rho1 rho2 x,
  Forall2 (fun p t => val_has_type rho1 t (snd p)) params inputs ->
  Forall2 (fun p t => val_has_type rho2 t (snd p)) params inputs ->
  existsb (fun p => existsb (is_lone x) (ty_dims (snd p))) params = true ->
  rho1 x = rho2 x.
Proof.
  intros V params inputs rho1 rho2 x H1. induction H1 as [|p t ps ts Ht1 _ IH];
    intros H2 Hx; simpl in Hx; [discriminate|].
  inversion H2 as [|p' t' ps' ts' Ht2 H2' Hp Hq]; subst.
  apply orb_true_iff in Hx as [Hx|Hx]; [|apply IH; assumption].
  destruct p as [n [dt ds dev]]. simpl in *.
  destruct Ht1 as (_ & _ & Hs1 & _). destruct Ht2 as (_ & _ & Hs2 & _).
  rewrite Hs1 in Hs2. unfold eval_shape in Hs2. clear Hs1 IH.
  apply existsb_exists in Hx as [d [Hd Hl]].
  destruct d; simpl in Hl; try discriminate. apply String.eqb_eq in Hl. subst x0.
  clear H2 H2'. induction ds as [|d' ds IHds]; [contradiction|]. simpl in Hs2.
  injection Hs2 as Hh Ht. destruct Hd as [Hd|Hd]; [subst d'|].
  - simpl in Hh. injection Hh as Hh. exact Hh.
  - apply IHds; [exact Hd|exact Ht].
Qed.

(** The valuation the entry check returns is the only one: any valuation
    under which the inputs have the parameter types agrees with it on every
    shape variable of the entry. *)
Theorem entry_binding_unique : forall {V : Type} dims cs params (inputs : list (tensor V))
                                      rho rho',
  entry_scoped dims cs params ->
  bind_entry dims cs params inputs = Some rho ->
  Forall2 (fun p t => val_has_type rho' t (snd p)) params inputs ->
  forall x, In x dims -> rho' x = rho x.
Proof.
  intros V dims cs params inputs rho rho' Hsc H Hty x Hx.
  destruct (bind_entry_env_ok dims cs params inputs rho Hsc H) as (_ & _ & Hall).
  apply bind_entry_parts in H as (_ & Hdet & _).
  unfold determined in Hdet. rewrite forallb_forall in Hdet.
  eapply bare_vars_determined; [exact Hty|exact Hall|]. apply Hdet. exact Hx.
Qed.

(** ** The 64-bit limit *)

Lemma eval_dim_64_val_of : forall b d z,
  (forall x, In x (dim_vars d) -> (1 <= b x)%Z) ->
  eval_dim_64 b d = Some z ->
  eval_dim_64 (fun x => Zpos (val_of b x)) d = Some z.
Proof.
  intros b d. induction d as [n|x|d1 IH1 d2 IH2|d1 IH1 d2 IH2|d1 IH1 d2 IH2|d1 IH1 c|d1 IH1 c];
    intros z Hpos H; simpl in *;
    try (destruct (eval_dim_64 b d1) as [u|] eqn:E1; [|discriminate]);
    try (destruct (eval_dim_64 b d2) as [v|] eqn:E2; [|discriminate]);
    try (rewrite (IH1 u) by (auto || (intros y Hy; apply Hpos; apply in_or_app; auto)));
    try (rewrite (IH2 v) by (auto || (intros y Hy; apply Hpos; apply in_or_app; auto)));
    try exact H.
  unfold val_of. rewrite Z2Pos.id by (specialize (Hpos x (or_introl eq_refl)); lia). exact H.
Qed.

Lemma Forall2_in_l : forall {A B : Type} (R : A -> B -> Prop) l1 l2 a,
  Forall2 R l1 l2 -> In a l1 -> exists b, R a b.
Proof.
  intros A B R l1 l2 a H. induction H as [|x y l1 l2 Hxy _ IH]; intros Hin; [contradiction|].
  destruct Hin as [<-|Hin]; [exists y; exact Hxy|]. apply IH. exact Hin.
Qed.

(** Under the accepted valuation, every parameter dimension and every side
    of every [where] constraint evaluates in checked 64-bit arithmetic
    (every intermediate value in [i64_min .. i64_max]) to its integer
    value: the binding never overflows. *)
Theorem bind_entry_in_i64 : forall {V : Type} dims cs params (inputs : list (tensor V)) rho,
  entry_scoped dims cs params ->
  bind_entry dims cs params inputs = Some rho ->
  (forall p d, In p params -> In d (ty_dims (snd p)) ->
     eval_dim_64 (fun x => Zpos (rho x)) d = Some (eval_dim rho d)) /\
  (forall c d, In c cs -> In d (cstr_sides c) ->
     eval_dim_64 (fun x => Zpos (rho x)) d = Some (eval_dim rho d)).
Proof.
  intros V dims cs params inputs rho [Hsc Hwc] H.
  apply bind_entry_parts in H as (-> & _ & Hin & Hfit & Hw).
  set (b := binding_of (bind_params [] params inputs)) in *. clearbody b.
  destruct (rt_check_sound dims cs b Hwc Hw) as [Hdims _].
  assert (Hpos : forall x, In x dims -> (1 <= b x)%Z).
  { intros x Hx. rewrite <- (Hdims x Hx). lia. }
  assert (Hgen : forall d z, (forall x, In x (dim_vars d) -> In x dims) ->
            eval_dim_64 b d = Some z ->
            eval_dim_64 (fun x => Zpos (val_of b x)) d = Some (eval_dim (val_of b) d)).
  { intros d z Hv E. pose proof (eval_dim_64_val_of b d z (fun x Hx => Hpos x (Hv x Hx)) E) as E'.
    rewrite E'. f_equal. rewrite <- eval_dim_b_val. apply eval_dim_64_sound in E'. apply E'. }
  split.
  - intros p d Hp Hd.
    apply all2_Forall2 in Hin.
    destruct (Forall2_in_l _ _ _ _ Hin Hp) as [t Ht]. destruct p as [n [dt ds dev]]. unfold check_input in Ht. simpl in *.
    apply andb_true_iff in Ht as [Ht _]. apply andb_true_iff in Ht as [_ Ht].
    apply all2_Forall2 in Ht.
    destruct (Forall2_in_l _ _ _ _ Ht Hd) as [k Hm]. unfold dim_matches in Hm.
    destruct (eval_dim_64 b d) as [z|] eqn:E; [|discriminate].
    apply (Hgen d z); [|exact E]. intros x Hx. eapply Hsc; [exact Hp|exact Hd|exact Hx].
  - intros c d Hc Hd. rewrite forallb_forall in Hfit.
    specialize (Hfit c Hc). rewrite forallb_forall in Hfit. specialize (Hfit d Hd).
    unfold fits64 in Hfit. destruct (eval_dim_64 b d) as [z|] eqn:E; [|discriminate].
    apply (Hgen d z); [|exact E]. intros x Hx. apply (Hwc c Hc).
    destruct c; simpl in Hd |- *; (destruct Hd as [<-|[<-|[]]]; apply in_or_app; auto).
Qed.

(** ** Examples *)

Local Open Scope string_scope.

(** [(func f (dims N D) (where (divides 2 D)) (params (x (tensor f32 (N D)
    host)) (y (tensor f32 (D) host))) ...)]. *)
Definition ex_params : ctx :=
  [("x"%string, TTensor DF32 [DVar "N"; DVar "D"] Host);
   ("y"%string, TTensor DF32 [DVar "D"] Host)].
Definition ex_where : list cstr := [CDivides (DLit 2) (DVar "D")].
Definition ex_in (s : list nat) : tensor nat := mkT DF32 s Host (repeat 0 (prod s)).

(** Accepted: N = 3, D = 4. *)
Example entry_accepts : exists rho,
  bind_entry ["N"; "D"]%string ex_where ex_params [ex_in [3; 4]; ex_in [4]] = Some rho /\
  rho "N"%string = 3%positive /\ rho "D"%string = 4%positive.
Proof. eexists. split; [reflexivity|]. split; reflexivity. Qed.

(** D bound to 4 by [x] and to 5 by [y]: rejected (the review's "input of
    the wrong length"). *)
Example entry_rejects_conflict :
  bind_entry ["N"; "D"]%string ex_where ex_params [ex_in [3; 4]; ex_in [5]] = None.
Proof. reflexivity. Qed.

(** The [where] clause fails (D = 3). *)
Example entry_rejects_where :
  bind_entry ["N"; "D"]%string ex_where ex_params [ex_in [2; 3]; ex_in [3]] = None.
Proof. reflexivity. Qed.

(** A variable no parameter determines (E0308): rejected. *)
Example entry_rejects_undetermined :
  bind_entry ["N"; "D"; "K"]%string ex_where ex_params [ex_in [3; 4]; ex_in [4]] = None.
Proof. reflexivity. Qed.

(** ** Completeness: the check accepts every well-typed call within 64 bits *)

Local Close Scope string_scope.

Lemma lookup_app_some : forall {A : Type} x (l l' : list (dvar * A)) a,
  lookup x l = Some a -> lookup x (l ++ l') = Some a.
Proof.
  intros A x l l' a. induction l as [|[y c] l IH]; simpl; [discriminate|].
  destruct (String.eqb x y); auto.
Qed.

Lemma lookup_in : forall {A : Type} x (l : list (dvar * A)) a,
  lookup x l = Some a -> In (x, a) l.
Proof.
  intros A x l a. induction l as [|[y c] l IH]; simpl; [discriminate|].
  destruct (String.eqb x y) eqn:E; intros H; [|right; auto].
  apply String.eqb_eq in E. subst. injection H as ->. left. reflexivity.
Qed.

Lemma lookup_app_none : forall {A : Type} x (l : list (dvar * A)) a,
  lookup x l = None -> lookup x (l ++ [(x, a)]) = Some a.
Proof.
  intros A x l a. induction l as [|[y c] l IH]; simpl.
  - rewrite String.eqb_refl. reflexivity.
  - destruct (String.eqb x y); [discriminate|exact IH].
Qed.

(* bind_dims only adds bindings. *)
Lemma bind_dims_mono : forall x acc ds ns a,
  lookup x acc = Some a -> lookup x (bind_dims acc ds ns) = Some a.
Proof.
  intros x acc ds. revert acc. induction ds as [|d ds IH]; intros acc ns a Ha;
    [destruct ns; exact Ha|].
  destruct ns as [|n ns]; [destruct d; exact Ha|].
  destruct d as [m|y|d1 d2|d1 d2|d1 d2|d1 c|d1 c]; simpl; try (apply IH; exact Ha).
  destruct (lookup y acc); apply IH; [exact Ha|]. apply lookup_app_some. exact Ha.
Qed.

Definition acc_ok (rho : valuation) (acc : list (dvar * nat)) : Prop :=
  forall x n, In (x, n) acc -> Z.of_nat n = Zpos (rho x).

Lemma bind_dims_ok : forall rho acc ds ns,
  acc_ok rho acc -> map Z.of_nat ns = eval_shape rho ds ->
  acc_ok rho (bind_dims acc ds ns) /\
  (forall x a, lookup x acc = Some a -> lookup x (bind_dims acc ds ns) = Some a) /\
  (forall x, In (DVar x) ds -> exists a, lookup x (bind_dims acc ds ns) = Some a).
Proof.
  intros rho acc ds. revert acc. induction ds as [|d ds IH]; intros acc [|n ns] Hacc Hs;
    simpl in Hs; try discriminate.
  - simpl. split; [exact Hacc|]. split; [auto|]. intros x [].
  - injection Hs as Hd Hs.
    assert (Hstep : forall acc', acc_ok rho acc' ->
              (forall x a, lookup x acc = Some a -> lookup x acc' = Some a) ->
              acc_ok rho (bind_dims acc' ds ns) /\
              (forall x a, lookup x acc = Some a -> lookup x (bind_dims acc' ds ns) = Some a) /\
              (forall x, In (DVar x) ds -> exists a, lookup x (bind_dims acc' ds ns) = Some a)).
    { intros acc' Hok Hmono. destruct (IH acc' ns Hok Hs) as (H1 & H2 & H3).
      split; [exact H1|]. split; [intros; apply H2, Hmono; assumption|exact H3]. }
    destruct d as [m|y|a b|a b|a b|a c|a c]; simpl;
      try (destruct (Hstep acc Hacc (fun _ _ h => h)) as (H1 & H2 & H3);
           split; [exact H1|]; split; [exact H2|];
           intros x [Hx|Hx]; [discriminate|exact (H3 x Hx)]).
    destruct (lookup y acc) as [a0|] eqn:Ey.
    + destruct (Hstep acc Hacc (fun _ _ h => h)) as (H1 & H2 & H3).
      split; [exact H1|]. split; [exact H2|].
      intros x [Hx|Hx]; [injection Hx as <-; exists a0; apply H2; exact Ey|exact (H3 x Hx)].
    + assert (Hok : acc_ok rho (acc ++ [(y, n)])).
      { intros x k Hin. apply in_app_or in Hin as [Hin|[Hin|[]]]; [apply Hacc; exact Hin|].
        injection Hin as <- <-. simpl in Hd. exact Hd. }
      assert (Hmono : forall x a, lookup x acc = Some a -> lookup x (acc ++ [(y, n)]) = Some a).
      { intros x a h. apply lookup_app_some. exact h. }
      destruct (Hstep _ Hok Hmono) as (H1 & H2 & H3).
      split; [exact H1|]. split; [exact H2|].
      intros x [Hx|Hx]; [|exact (H3 x Hx)]. injection Hx as <-.
      destruct (IH (acc ++ [(y, n)]) ns Hok Hs) as (_ & H2' & _).
      exists n. apply H2'. apply lookup_app_none. exact Ey.
Qed.

Lemma bind_params_ok : forall {V : Type} rho (params : ctx) (inputs : list (tensor V)) acc,
  acc_ok rho acc ->
  Forall2 (fun p t => val_has_type rho t (snd p)) params inputs ->
  acc_ok rho (bind_params acc params inputs) /\
  (forall x, existsb (fun p => existsb (is_lone x) (ty_dims (snd p))) params = true ->
     exists a, lookup x (bind_params acc params inputs) = Some a).
Proof.
  intros V rho params inputs acc Hacc H. revert acc Hacc.
  induction H as [|p t ps ts Ht _ IH]; intros acc Hacc; simpl.
  - split; [exact Hacc|]. intros x Hx. discriminate.
  - destruct p as [n [dt ds dev]]. simpl in *. destruct Ht as (_ & _ & Hs & _).
    destruct (bind_dims_ok rho acc ds (t_shape t) Hacc Hs) as (H1 & _ & H3).
    clear Hs.
    destruct (IH _ H1) as (I1 & I3). split; [exact I1|].
    intros x Hx. apply orb_true_iff in Hx as [Hx|Hx]; [|exact (I3 x Hx)].
    apply existsb_exists in Hx as [d [Hd Hl]].
    destruct d; simpl in Hl; try discriminate. apply String.eqb_eq in Hl. subst.
    destruct (H3 x0 Hd) as [a Ha].
    assert (Hmono : forall acc' ps' (ts' : list (tensor V)) a',
              lookup x0 acc' = Some a' -> lookup x0 (bind_params acc' ps' ts') = Some a').
    { clear. intros acc' ps'. revert acc'. induction ps' as [|p' ps' IHp]; intros acc' [|t' ts'] a' Ha';
        simpl; auto.
      apply IHp. apply bind_dims_mono. exact Ha'. }
    exists a. apply Hmono. exact Ha.
Qed.

Lemma eval_dim_64_ext : forall b1 b2 d,
  (forall x, In x (dim_vars d) -> b1 x = b2 x) -> eval_dim_64 b1 d = eval_dim_64 b2 d.
Proof.
  intros b1 b2 d. induction d as [n|x|d1 IH1 d2 IH2|d1 IH1 d2 IH2|d1 IH1 d2 IH2|d1 IH1 c|d1 IH1 c];
    intros H; simpl in *;
    try (rewrite IH1, IH2 by (intros y Hy; apply H; apply in_or_app; auto); reflexivity);
    try (rewrite IH1 by exact H; reflexivity).
  - reflexivity.
  - rewrite (H x (or_introl eq_refl)). reflexivity.
Qed.

Lemma eval_dim_b_ext : forall b1 b2 d,
  (forall x, In x (dim_vars d) -> b1 x = b2 x) -> eval_dim_b b1 d = eval_dim_b b2 d.
Proof.
  intros b1 b2 d. induction d as [n|x|d1 IH1 d2 IH2|d1 IH1 d2 IH2|d1 IH1 d2 IH2|d1 IH1 c|d1 IH1 c];
    intros H; simpl in *;
    try (rewrite IH1, IH2 by (intros y Hy; apply H; apply in_or_app; auto); reflexivity);
    try (rewrite IH1 by exact H; reflexivity).
  - reflexivity.
  - apply H. left. reflexivity.
Qed.

Lemma forallb_ext_in_l : forall {A : Type} (f g : A -> bool) l,
  (forall a, In a l -> f a = g a) -> forallb f l = forallb g l.
Proof.
  intros A f g l H. induction l as [|a l IH]; simpl; [reflexivity|].
  rewrite H by (left; reflexivity). rewrite IH by (intros; apply H; right; assumption).
  reflexivity.
Qed.

Lemma rt_check_where_ext : forall dims cs b1 b2,
  (forall c, In c cs -> forall x, In x (cstr_vars c) -> In x dims) ->
  (forall x, In x dims -> b1 x = b2 x) ->
  rt_check_where dims cs b1 = rt_check_where dims cs b2.
Proof.
  intros dims cs b1 b2 Hwc Hb. unfold rt_check_where. f_equal.
  - apply forallb_ext_in_l. intros x Hx. rewrite Hb by exact Hx. reflexivity.
  - apply forallb_ext_in_l. intros c Hc.
    assert (He : forall d, (forall x, In x (dim_vars d) -> In x (cstr_vars c)) ->
                   eval_dim_b b1 d = eval_dim_b b2 d).
    { intros d Hd. apply eval_dim_b_ext. intros x Hx. apply Hb. eapply Hwc; [exact Hc|]. auto. }
    destruct c as [x y|x y|x y|x y|x y|x y|x y]; simpl;
      rewrite !(He x), !(He y) by (intros z Hz; simpl; apply in_or_app; auto); reflexivity.
Qed.

Lemma Forall2_all2 : forall {A B : Type} (f : A -> B -> bool) l1 l2,
  Forall2 (fun a b => f a b = true) l1 l2 -> all2 f l1 l2 = true.
Proof.
  intros A B f l1 l2 H. induction H as [|a b l1 l2 Hab _ IH]; simpl; [reflexivity|].
  rewrite Hab, IH. reflexivity.
Qed.

(** The check is not stronger than typing: inputs that have the parameter
    types under a valuation satisfying the [where] clause, whose parameter
    dimensions and [where] sides evaluate without 64-bit overflow, pass
    it, and it returns that valuation (on the entry's shape variables). *)
Theorem bind_entry_complete : forall {V : Type} dims cs params (inputs : list (tensor V)) rho,
  entry_scoped dims cs params ->
  determined dims params = true ->
  Forall2 (fun p t => val_has_type rho t (snd p)) params inputs ->
  where_constraint cs rho ->
  (forall p d, In p params -> In d (ty_dims (snd p)) ->
     fits64 (fun x => Zpos (rho x)) d = true) ->
  (forall c d, In c cs -> In d (cstr_sides c) ->
     fits64 (fun x => Zpos (rho x)) d = true) ->
  exists rho', bind_entry dims cs params inputs = Some rho' /\
               (forall x, In x dims -> rho' x = rho x).
Proof.
  intros V dims cs params inputs rho [Hsc Hwc] Hdet Hty HPhi Hfp Hfc.
  set (b := binding_of (bind_params [] params inputs)).
  destruct (bind_params_ok rho params inputs [] (fun x n h => match h with end) Hty) as [Hok Hbound].
  assert (Hb : forall x, In x dims -> b x = Zpos (rho x)).
  { intros x Hx. unfold determined in Hdet. rewrite forallb_forall in Hdet.
    destruct (Hbound x (Hdet x Hx)) as [a Ha]. unfold b, binding_of. rewrite Ha.
    apply Hok. apply lookup_in. exact Ha. }
  assert (Hin : all2 (check_input b) params inputs = true).
  { apply Forall2_all2.
    assert (Hsc' : forall p, In p params -> forall d x, In d (ty_dims (snd p)) ->
                     In x (dim_vars d) -> In x dims) by (intros; eapply Hsc; eassumption).
    assert (Hfp' : forall p, In p params -> forall d, In d (ty_dims (snd p)) ->
                     fits64 (fun x => Zpos (rho x)) d = true) by (intros; eapply Hfp; eassumption).
    clear Hsc Hfp Hbound Hok Hdet HPhi Hfc Hwc. clearbody b.
    induction Hty as [|[n [dt ds dev]] t ps ts Ht _ IH]; constructor.
    - simpl in Ht. destruct Ht as (Hdt & Hdev & Hs & Hlen). unfold check_input. simpl.
      destruct (dtype_eq_dec (t_dtype t) dt); [|contradiction].
      destruct (device_eq_dec (t_device t) dev); [|contradiction].
      rewrite Hlen, Nat.eqb_refl, andb_true_r. simpl.
      specialize (Hsc' _ (or_introl eq_refl)). specialize (Hfp' _ (or_introl eq_refl)).
      simpl in Hsc', Hfp'. clear IH.
      revert Hs Hsc' Hfp'. generalize (t_shape t). clear - Hb. intros ns.
      revert ns. induction ds as [|d ds IHd]; intros [|k ns] Hs Hsc Hfp; simpl in *;
        try discriminate; [reflexivity|].
      injection Hs as Hk Hs. apply andb_true_iff. split.
      + unfold dim_matches. rewrite (eval_dim_64_ext b (fun x => Zpos (rho x)))
          by (intros x Hx; apply Hb; eapply Hsc; [left; reflexivity|exact Hx]).
        specialize (Hfp d (or_introl eq_refl)). unfold fits64 in Hfp.
        destruct (eval_dim_64 (fun x => Zpos (rho x)) d) as [z|] eqn:E; [|discriminate].
        apply eval_dim_64_sound in E as [-> _]. rewrite eval_dim_b_val, Hk.
        apply Z.eqb_refl.
      + apply IHd; [exact Hs| |]; intros; [eapply Hsc|apply Hfp]; eauto; right; assumption.
    - apply IH; intros p' Hp'; [apply Hsc'|apply Hfp']; right; exact Hp'. }
  assert (Hfit : forallb (fun c => forallb (fits64 b) (cstr_sides c)) cs = true).
  { apply forallb_forall. intros c Hc. apply forallb_forall. intros d Hd.
    unfold fits64. rewrite (eval_dim_64_ext b (fun x => Zpos (rho x))).
    - apply (Hfc c d Hc Hd).
    - intros x Hx. apply Hb. apply (Hwc c Hc).
      destruct c; simpl in Hd |- *; (destruct Hd as [<-|[<-|[]]]; apply in_or_app; auto). }
  assert (Hw : rt_check_where dims cs b = true).
  { rewrite (rt_check_where_ext dims cs b (fun x => Zpos (rho x)) Hwc Hb).
    apply rt_check_complete. exact HPhi. }
  exists (val_of b). split.
  - unfold bind_entry. fold b. rewrite Hdet, Hin, Hfit, Hw. reflexivity.
  - intros x Hx. unfold val_of. rewrite Hb by exact Hx. reflexivity.
Qed.
