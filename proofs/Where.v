(** * Where.v — from [where] to Z3 to the run-time check (§2, §5.1, §6)

    - Φ is the meaning of a function's [where] clause ([where_constraint],
      Syntax.v), as the spec defines it; [(divides a b)] means [a >= 1] and
      [b mod a = 0].
    - The run-time check of a call (§5.1: every variable [>= 1], then every
      constraint evaluated on the bound values; [ShapeConstraint::eval] in
      src/types/tensor_type.cpp) is the boolean function [rt_check_where].
      It is exact: it passes iff the bound values satisfy Φ
      ([rt_check_sound], [rt_check_complete]).
    - The SMT encoding is abstract ([smt_enc]); [smt_contract] is what it
      must meet: hypotheses implied by the run-time check, goals that imply
      the meaning.  Under the contract, an obligation Z3 proves holds
      ([smt_discharges]).  The encoding the checker dumps
      ([dumped_enc]: [(and (>= a 1) (= (mod b a) 0))] for divides, the
      relation itself otherwise) meets it ([dumped_enc_contract]); SMT-LIB's
      [div]/[mod] are Euclidean and agree with [floordiv]/[mod] for positive
      divisors ([smt_mod_agrees]).  tests/obligations/where_diff.sh tests
      the dumped SMT-LIB against the C++ run-time check on a grid.
    - [runtime_checked_sound]: values that pass the run-time check make a
      well-typed body evaluate to a value of its type. *)

From Coq Require Import List ZArith Bool Lia.
From ShapeML Require Import Syntax Broadcast Typing Semantics Soundness.
Import ListNotations.

(** ** Run-time values of the shape variables *)

(** The run-time binding: 64-bit values, modelled as integers. *)
Definition binding := dvar -> Z.

Fixpoint eval_dim_b (b : binding) (d : dim) : Z :=
  match d with
  | DLit n => n
  | DVar x => b x
  | DAdd a c => eval_dim_b b a + eval_dim_b b c
  | DSub a c => eval_dim_b b a - eval_dim_b b c
  | DMul a c => eval_dim_b b a * eval_dim_b b c
  | DFloorDiv a c => eval_dim_b b a / Zpos c
  | DMod a c => eval_dim_b b a mod Zpos c
  end%Z.

(** [ShapeConstraint::eval]. *)
Definition rt_check_cstr (b : binding) (c : cstr) : bool :=
  match c with
  | CEq x y => Z.eqb (eval_dim_b b x) (eval_dim_b b y)
  | CNe x y => negb (Z.eqb (eval_dim_b b x) (eval_dim_b b y))
  | CLt x y => Z.ltb (eval_dim_b b x) (eval_dim_b b y)
  | CLe x y => Z.leb (eval_dim_b b x) (eval_dim_b b y)
  | CGt x y => Z.ltb (eval_dim_b b y) (eval_dim_b b x)
  | CGe x y => Z.leb (eval_dim_b b y) (eval_dim_b b x)
  | CDivides x y => Z.leb 1 (eval_dim_b b x) &&
                    Z.eqb (Z.modulo (eval_dim_b b y) (eval_dim_b b x)) 0
  end.

(** §5.1: every shape variable [>= 1], then every [where] constraint. *)
Definition rt_check_where (dims : list dvar) (cs : list cstr) (b : binding) : bool :=
  forallb (fun x => Z.leb 1 (b x)) dims && forallb (rt_check_cstr b) cs.

(* [cstr_vars] (the shape variables a constraint names) is in Syntax.v:
   T-Call uses it for the scoping of the callee's [where] clause (E0104). *)

(** The valuation a passing binding denotes. *)
Definition val_of (b : binding) : valuation := fun x => Z.to_pos (b x).

Lemma eval_dim_b_val : forall (rho : valuation) d,
  eval_dim_b (fun x => Zpos (rho x)) d = eval_dim rho d.
Proof. intros rho d. induction d; simpl; congruence. Qed.

Lemma eval_dim_val_of : forall b d,
  (forall x, In x (dim_vars d) -> (1 <= b x)%Z) ->
  eval_dim (val_of b) d = eval_dim_b b d.
Proof.
  intros b d. induction d as [n|x|d1 IH1 d2 IH2|d1 IH1 d2 IH2|d1 IH1 d2 IH2|d1 IH1 c|d1 IH1 c];
    intros H; simpl in *;
    try (rewrite IH1, IH2 by (intros y Hy; apply H; apply in_or_app; auto); reflexivity);
    try (rewrite IH1 by exact H; reflexivity).
  - reflexivity.
  - unfold val_of. specialize (H x (or_introl eq_refl)). rewrite Z2Pos.id by lia. reflexivity.
Qed.

Lemma rt_check_cstr_iff : forall (rho : valuation) c,
  rt_check_cstr (fun x => Zpos (rho x)) c = true <-> cstr_holds rho c.
Proof.
  intros rho c. destruct c as [x y|x y|x y|x y|x y|x y|x y]; simpl;
    rewrite ?eval_dim_b_val;
    rewrite ?andb_true_iff, ?negb_true_iff, ?Z.eqb_eq, ?Z.eqb_neq, ?Z.ltb_lt, ?Z.leb_le;
    lia.
Qed.

(** The run-time check implies Φ: a binding that passes it denotes a
    valuation (the same values) that satisfies the [where] clause. *)
Theorem rt_check_sound : forall dims cs b,
  (forall c, In c cs -> forall x, In x (cstr_vars c) -> In x dims) ->
  rt_check_where dims cs b = true ->
  (forall x, In x dims -> Zpos (val_of b x) = b x) /\ where_constraint cs (val_of b).
Proof.
  intros dims cs b Hvars Hchk. unfold rt_check_where in Hchk.
  apply andb_true_iff in Hchk as [Hd Hc].
  rewrite forallb_forall in Hd, Hc.
  assert (Hpos : forall x, In x dims -> (1 <= b x)%Z).
  { intros x Hx. apply Z.leb_le. apply Hd. exact Hx. }
  split.
  - intros x Hx. unfold val_of. apply Z2Pos.id. specialize (Hpos x Hx). lia.
  - unfold where_constraint. apply Forall_forall. intros c Hin.
    apply rt_check_cstr_iff.
    assert (Hv : forall x, In x (cstr_vars c) -> (1 <= b x)%Z).
    { intros x Hx. apply Hpos. eapply Hvars; eassumption. }
    specialize (Hc c Hin).
    destruct c as [x y|x y|x y|x y|x y|x y|x y]; simpl in Hv |- *;
      rewrite !eval_dim_b_val, !eval_dim_val_of
        by (intros z Hz; apply Hv; apply in_or_app; auto);
      exact Hc.
Qed.

(** ... and it is exact: a valuation satisfying Φ passes it. *)
Theorem rt_check_complete : forall dims cs (rho : valuation),
  where_constraint cs rho -> rt_check_where dims cs (fun x => Zpos (rho x)) = true.
Proof.
  intros dims cs rho H. unfold rt_check_where. apply andb_true_iff. split.
  - apply forallb_forall. intros x _. apply Z.leb_le. lia.
  - apply forallb_forall. intros c Hc. apply rt_check_cstr_iff.
    unfold where_constraint in H. rewrite Forall_forall in H. apply H. exact Hc.
Qed.

(** ** The contract of the SMT encoding *)

(** An encoding gives each constraint a hypothesis form (a [where]
    constraint assumed) and a goal form (an obligation proved), both read as
    propositions over valuations: the model-theoretic meaning of the
    SMT-LIB terms. *)
Record smt_enc : Type := mk_enc {
  enc_hyp : cstr -> valuation -> Prop;
  enc_goal : cstr -> valuation -> Prop
}.

(** Assumptions implied by the run-time check, goals that imply the meaning. *)
Definition smt_contract (enc : smt_enc) : Prop :=
  forall c (rho : valuation),
    (rt_check_cstr (fun x => Zpos (rho x)) c = true -> enc_hyp enc c rho) /\
    (enc_goal enc c rho -> cstr_holds rho c).

(** Z3 answers unsat for [hypotheses ∧ ¬goal] over variables [>= 1]: every
    valuation satisfying the encoded hypotheses satisfies the encoded goal. *)
Definition smt_proved (enc : smt_enc) (cs : list cstr) (g : cstr) : Prop :=
  forall rho : valuation, Forall (fun c => enc_hyp enc c rho) cs -> enc_goal enc g rho.

(** Under the contract, an obligation Z3 proves holds under Φ: this is the
    [entails] every typing rule uses. *)
Theorem smt_discharges : forall enc cs g,
  smt_contract enc -> smt_proved enc cs g ->
  entails (where_constraint cs) (fun rho => cstr_holds rho g).
Proof.
  intros enc cs g Hc Hp rho HPhi. apply (proj2 (Hc g rho)). apply Hp.
  unfold where_constraint in HPhi. rewrite Forall_forall in HPhi |- *.
  intros c Hin. apply (proj1 (Hc c rho)). apply rt_check_cstr_iff. apply HPhi. exact Hin.
Qed.

(** For instance the dimension equality of B-Shape, T-Sub and matmul. *)
Corollary smt_discharges_dim_eq : forall enc cs a b,
  smt_contract enc -> smt_proved enc cs (CEq a b) ->
  dim_eq_obl (where_constraint cs) a b.
Proof. intros enc cs a b Hc Hp. exact (smt_discharges enc cs (CEq a b) Hc Hp). Qed.

(** SMT-LIB's [div] and [mod] are Euclidean: [b = c·q + r], [0 <= r < |c|].
    For a positive divisor that is floor division and its remainder, which
    is what [eval_dim] (and [ShapeConstraint::eval]) computes. *)
Theorem smt_mod_agrees : forall b c q r,
  (0 < c)%Z -> b = (c * q + r)%Z -> (0 <= r < c)%Z ->
  q = (b / c)%Z /\ r = (b mod c)%Z.
Proof.
  intros b c q r Hc -> Hr. split.
  - rewrite Z.mul_comm, Z.div_add_l by lia. rewrite Z.div_small by lia. lia.
  - rewrite Z.mul_comm, Z.add_comm, Z.mod_add by lia. rewrite Z.mod_small by lia. reflexivity.
Qed.

(** The encoding the checker dumps (src/smt, `--dump-obligations`): each
    relation as itself, [(divides a b)] as [(and (>= a 1) (= (mod b a) 0))],
    the same term as hypothesis and as goal.  With [a >= 1] in the
    conjunction, [mod] is only read at a positive divisor. *)
Definition dumped_term (c : cstr) (rho : valuation) : Prop :=
  match c with
  | CEq x y => eval_dim rho x = eval_dim rho y
  | CNe x y => ~ (eval_dim rho x = eval_dim rho y)
  | CLt x y => eval_dim rho x < eval_dim rho y
  | CLe x y => eval_dim rho x <= eval_dim rho y
  | CGt x y => eval_dim rho x > eval_dim rho y
  | CGe x y => eval_dim rho x >= eval_dim rho y
  | CDivides x y => eval_dim rho x >= 1 /\ eval_dim rho y mod eval_dim rho x = 0
  end%Z.

Definition dumped_enc : smt_enc := mk_enc dumped_term dumped_term.

Theorem dumped_enc_contract : smt_contract dumped_enc.
Proof.
  intros c rho. simpl. split.
  - intros H. apply rt_check_cstr_iff in H. destruct c; simpl in *; lia.
  - intros H. destruct c; simpl in *; lia.
Qed.

(** ** The run-time check and soundness, end to end *)

(** A function body, well typed under its shape variables and the meaning
    of its [where] clause, evaluates, when called with a binding that
    passes the run-time check and arguments of the parameter types, to a
    value of its result type. *)
Theorem runtime_checked_sound : forall {V : Type} (P : prims V) dims cs G e ty
                                       (b : binding) (E : list (var * tensor V)),
  (forall c, In c cs -> forall x, In x (cstr_vars c) -> In x dims) ->
  check dims (where_constraint cs) G e ty ->
  rt_check_where dims cs b = true ->
  env_ok (val_of b) G E ->
  exists t, eval P (val_of b) E e t /\ val_has_type (val_of b) t ty.
Proof.
  intros V P dims cs G e ty b E Hvars Hty Hchk HE.
  destruct (rt_check_sound dims cs b Hvars Hchk) as [_ HPhi].
  eapply type_soundness_check; eassumption.
Qed.
