(** * Typing.v — §4 typing rules for the core

    Judgments [Δ; Φ; Γ ⊢ e ⇒ τ] ([synth Delta Phi G e τ]) and
    [Δ; Φ; Γ ⊢ e ⇐ τ] ([check Delta Phi G e τ]); one constructor per spec
    rule, each commented with the section it states.  Side conditions that
    the implementation discharges with Z3 are [entails Phi _] propositions
    (over all valuations satisfying Φ). *)

From Coq Require Import List ZArith Permutation.
From ShapeML Require Import Syntax Normalize Broadcast.
Import ListNotations.

(** §4.10: either [b] has rank 2 (shared weight, no batch dims) or the
    batch dimensions are pairwise equal (obligations; [Forall2] also forces
    equal rank). *)

(** §4.12: the reshape obligation [Φ ⊨ ∏ d = ∏ d']. *)
Definition reshape_obl (Phi : constraint) (ds ds' : shape) : Prop :=
  entails Phi (fun rho => prodZ (eval_shape rho ds) = prodZ (eval_shape rho ds')).

(** §4.13: aligned from the right, each source dimension is 1 (its normal
    form is the literal 1, as the checker decides ≡ 1: [(- 2 1)] is 1) or
    equal to the target's under Φ; the target may have extra leading
    dimensions. *)
Definition bto_obl (Phi : constraint) (ds ds' : shape) : Prop :=
  exists pre tl, ds' = pre ++ tl /\
    Forall2 (fun a b => norm_dim a = DLit 1 \/ dim_eq_obl Phi a b) ds tl.

(** The divergence found in review (issue 27): [(- 2 1)] broadcasts to any
    dimension, as [shapemlc check] accepts it; the model used to require the
    literal [DLit 1]. *)
Example bto_minus_one_is_one : forall Phi x, bto_obl Phi [DSub (DLit 2) (DLit 1)] [DVar x].
Proof. intros Phi x. exists [], [DVar x]. split; [reflexivity|]. constructor; [left; reflexivity | constructor]. Qed.

Inductive synth : list dvar -> constraint -> ctx -> expr -> ty -> Prop :=
(* §4.1 T-Var *)
| T_Var : forall Delta Phi G x t,
    lookup x G = Some t ->
    synth Delta Phi G (EVar x) t
(* §4.2 T-Let  (rebinding a name in scope is E0102) *)
| T_Let : forall Delta Phi G x e1 e2 t1 t2,
    lookup x G = None ->
    synth Delta Phi G e1 t1 ->
    synth Delta Phi ((x, t1) :: G) e2 t2 ->
    synth Delta Phi G (ELet x e1 e2) t2
(* §4.2 T-LetAsc *)
| T_LetAsc : forall Delta Phi G x t' e1 e2 t2,
    lookup x G = None ->
    wf_ty Delta Phi t' ->
    check Delta Phi G e1 t' ->
    synth Delta Phi ((x, t') :: G) e2 t2 ->
    synth Delta Phi G (ELetAsc x t' e1 e2) t2
(* §4.4 T-Unary *)
| T_Unary : forall Delta Phi G op e dt ds dev,
    synth Delta Phi G e (TTensor dt ds dev) ->
    unop_ok op dt = true ->
    synth Delta Phi G (EUnary op e) (TTensor dt ds dev)
(* §4.6 T-Binary  (result shape by §4.5 B-Shape) *)
| T_Binary : forall Delta Phi G op e1 e2 dt ds1 ds2 ds dev,
    synth Delta Phi G e1 (TTensor dt ds1 dev) ->
    synth Delta Phi G e2 (TTensor dt ds2 dev) ->
    binop_ok op dt = true ->
    bshape Phi ds1 ds2 ds ->
    synth Delta Phi G (EBinary op e1 e2) (TTensor dt ds dev)
(* §4.7 T-Compare *)
| T_Compare : forall Delta Phi G op e1 e2 dt ds1 ds2 ds dev,
    synth Delta Phi G e1 (TTensor dt ds1 dev) ->
    synth Delta Phi G e2 (TTensor dt ds2 dev) ->
    bshape Phi ds1 ds2 ds ->
    synth Delta Phi G (ECompare op e1 e2) (TTensor DBool ds dev)
(* §4.7 T-Select *)
| T_Select : forall Delta Phi G c a b dt dsc dsa dsb ds1 ds dev,
    synth Delta Phi G c (TTensor DBool dsc dev) ->
    synth Delta Phi G a (TTensor dt dsa dev) ->
    synth Delta Phi G b (TTensor dt dsb dev) ->
    bshape Phi dsc dsa ds1 ->
    bshape Phi ds1 dsb ds ->
    synth Delta Phi G (ESelect c a b) (TTensor dt ds dev)
(* §4.8 T-Cast *)
| T_Cast : forall Delta Phi G e dt dt' ds dev,
    synth Delta Phi G e (TTensor dt ds dev) ->
    synth Delta Phi G (ECast e dt') (TTensor dt' ds dev)
(* §4.10 T-Matmul *)
| T_Matmul : forall Delta Phi G e1 e2 dt da db dc m k k' n dev,
    synth Delta Phi G e1 (TTensor dt (da ++ [m; k]) dev) ->
    synth Delta Phi G e2 (TTensor dt (db ++ [k'; n]) dev) ->
    is_numeric dt = true ->
    dim_eq_obl Phi k k' ->
    bshape Phi da db dc ->
    synth Delta Phi G (EMatmul e1 e2) (TTensor dt (dc ++ [m; n]) dev)
(* §4.11 T-Transpose *)
| T_Transpose : forall Delta Phi G e dt ds a b dev,
    synth Delta Phi G e (TTensor dt (ds ++ [a; b]) dev) ->
    synth Delta Phi G (ETranspose e) (TTensor dt (ds ++ [b; a]) dev)
(* §4.12 T-Reshape *)
| T_Reshape : forall Delta Phi G e dt ds ds' dev,
    synth Delta Phi G e (TTensor dt ds dev) ->
    wf_ty Delta Phi (TTensor dt ds' dev) ->
    reshape_obl Phi ds ds' ->
    synth Delta Phi G (EReshape e ds') (TTensor dt ds' dev)
(* §4.16 T-Reduce *)
| T_Reduce : forall Delta Phi G op axes kd e dt ds dev axs,
    synth Delta Phi G e (TTensor dt ds dev) ->
    redop_ok op dt = true ->
    resolve_axes (length ds) axes = Some axs ->
    NoDup axs ->
    synth Delta Phi G (EReduce op axes kd e)
          (TTensor dt (reduce_dims (DLit 1) axs kd 0 ds) dev)
(* §4.17 T-CopyToDevice *)
| T_CopyToDevice : forall Delta Phi G e dt ds dev n,
    synth Delta Phi G e (TTensor dt ds dev) ->
    synth Delta Phi G (ECopyToDevice e n) (TTensor dt ds (Cuda n))
(* §4.17 T-CopyToHost *)
| T_CopyToHost : forall Delta Phi G e dt ds dev,
    synth Delta Phi G e (TTensor dt ds dev) ->
    synth Delta Phi G (ECopyToHost e) (TTensor dt ds Host)
(* §4.15 T-Slice  (axis [a] may count from the end; the bounds name only
   the function's shape variables, E0104) *)
| T_Slice : forall Delta Phi G e dt ds dev a k st sz da,
    synth Delta Phi G e (TTensor dt ds dev) ->
    resolve_axis (length ds) a = Some k ->
    nth_error ds k = Some da ->
    entails Phi (fun rho => 0 <= eval_dim rho st)%Z ->
    entails Phi (fun rho => 1 <= eval_dim rho sz)%Z ->
    entails Phi (fun rho => eval_dim rho st + eval_dim rho sz <= eval_dim rho da)%Z ->
    (forall x, In x (dim_vars st ++ dim_vars sz) -> In x Delta) ->
    synth Delta Phi G (ESlice e a st sz) (TTensor dt (replace_at k sz ds) dev)
(* §4.14 T-Concat  (two operands; the n-ary form is their left fold) *)
| T_Concat : forall Delta Phi G e1 e2 dt ds1 ds2 dev a k d1 d2,
    synth Delta Phi G e1 (TTensor dt ds1 dev) ->
    synth Delta Phi G e2 (TTensor dt ds2 dev) ->
    length ds1 = length ds2 ->
    resolve_axis (length ds1) a = Some k ->
    nth_error ds1 k = Some d1 ->
    nth_error ds2 k = Some d2 ->
    Forall2 (dim_eq_obl Phi) (firstn k ds1) (firstn k ds2) ->
    Forall2 (dim_eq_obl Phi) (skipn (S k) ds1) (skipn (S k) ds2) ->
    synth Delta Phi G (EConcat e1 e2 a) (TTensor dt (replace_at k (DAdd d1 d2) ds1) dev)
(* §4.13 T-BroadcastTo *)
| T_BroadcastTo : forall Delta Phi G e dt ds ds' dev,
    synth Delta Phi G e (TTensor dt ds dev) ->
    wf_ty Delta Phi (TTensor dt ds' dev) ->
    bto_obl Phi ds ds' ->
    synth Delta Phi G (EBroadcastTo e ds') (TTensor dt ds' dev)
(* §4.11 T-Permute *)
| T_Permute : forall Delta Phi G e dt ds dev p,
    synth Delta Phi G e (TTensor dt ds dev) ->
    Permutation p (seq 0 (length ds)) ->
    synth Delta Phi G (EPermute e p) (TTensor dt (map (fun i => nth i ds (DLit 1)) p) dev)
(* §4.9 T-Const *)
| T_Const : forall Delta Phi G n dt dev,
    num_ok dt n = true ->
    synth Delta Phi G (EConst n dt dev) (TTensor dt [] dev)
(* §4.9 T-Fill *)
| T_Fill : forall Delta Phi G n dt ds dev,
    wf_ty Delta Phi (TTensor dt ds dev) ->
    num_ok dt n = true ->
    synth Delta Phi G (EFill n (TTensor dt ds dev)) (TTensor dt ds dev)
(* §4.9 T-Iota *)
| T_Iota : forall Delta Phi G dt ds dev k,
    wf_ty Delta Phi (TTensor dt ds dev) ->
    is_numeric dt = true ->
    k < length ds ->
    synth Delta Phi G (EIota (TTensor dt ds dev) k) (TTensor dt ds dev)
(* §2 / §4.6 T-Binary with a bare number on the right: a rank-0 constant of
   the other operand's dtype and device *)
| T_BinaryNumR : forall Delta Phi G op e1 n dt ds dev,
    synth Delta Phi G e1 (TTensor dt ds dev) ->
    binop_ok op dt = true ->
    num_ok dt n = true ->
    synth Delta Phi G (EBinary op e1 (ENum n)) (TTensor dt ds dev)
(* §2 / §4.6 T-Binary with a bare number on the left *)
| T_BinaryNumL : forall Delta Phi G op n e2 dt ds dev,
    synth Delta Phi G e2 (TTensor dt ds dev) ->
    binop_ok op dt = true ->
    num_ok dt n = true ->
    synth Delta Phi G (EBinary op (ENum n) e2) (TTensor dt ds dev)
(* §4.21 T-Softmax: a floating operand (E0202); the axis resolves against
   the rank (E0204; a rank-0 operand has no axis, E0203); the result has
   the operand's type *)
| T_Softmax : forall Delta Phi G op a e dt ds dev k,
    synth Delta Phi G e (TTensor dt ds dev) ->
    is_floating dt = true ->
    resolve_axis (length ds) a = Some k ->
    synth Delta Phi G (ESoftmax op a e) (TTensor dt ds dev)
(* §4.18 T-Call: the callee is well typed under its own shape variables and
   [where] clause; each argument's dimensions equal the parameter's,
   instantiated; every substituted dimension is >= 1 (E0305) and every
   callee constraint, instantiated, holds (E0306): obligations in the caller.
   The result type is the callee's, instantiated. *)
| T_Call : forall Delta Phi G f dims wh params rdt rds rdev body sub args,
    (* the callee's signature and [where] clause mention only its own shape
       variables (E0104) *)
    Forall (fun p => wf_ty dims (where_constraint wh) (snd p)) params ->
    wf_ty dims (where_constraint wh) (TTensor rdt rds rdev) ->
    Forall (fun c => forall x, In x (cstr_vars c) -> In x dims) wh ->
    check dims (where_constraint wh) params body (TTensor rdt rds rdev) ->
    Forall2 (fun x p => exists dt ds ds' dev,
               lookup x G = Some (TTensor dt ds dev) /\ snd p = TTensor dt ds' dev /\
               Forall2 (dim_eq_obl Phi) ds (map (subst_dim (sub_of sub)) ds'))
            args params ->
    Forall (fun p => entails Phi (fun rho => 1 <= eval_dim rho (snd p))%Z) sub ->
    Forall (fun c => entails Phi (fun rho => cstr_holds rho (subst_cstr (sub_of sub) c))) wh ->
    synth Delta Phi G (ECall f dims wh params (TTensor rdt rds rdev) body sub args)
          (TTensor rdt (map (subst_dim (sub_of sub)) rds) rdev)
with check : list dvar -> constraint -> ctx -> expr -> ty -> Prop :=
(* §4.3 T-Sub *)
| T_Sub : forall Delta Phi G e dt ds ds' dev,
    synth Delta Phi G e (TTensor dt ds dev) ->
    Forall2 (dim_eq_obl Phi) ds ds' ->
    check Delta Phi G e (TTensor dt ds' dev).

Scheme synth_mut := Minimality for synth Sort Prop
with check_mut := Minimality for check Sort Prop.

(** The second divergence found in review (issue 27): a callee whose
    signature mentions a shape variable it does not declare ([dims []] and a
    parameter of shape [(N)]) is E0104 in the checker; the model used to type
    such a call. T-Call now asks for the callee's signature to be well formed
    under its own shape variables. *)
Example call_of_an_undeclared_dimension_is_untyped : forall Delta Phi G f wh x dt n dev rdt rdev body sub args,
  ~ synth Delta Phi G (ECall f [] wh [(x, TTensor dt [DVar n] dev)] (TTensor rdt [] rdev) body sub args) (TTensor rdt [] rdev).
Proof.
  intros. intros H. inversion H; subst.
  match goal with Hf : Forall (fun p => wf_ty _ _ (snd p)) _ |- _ => inversion Hf; subst end.
  cbn [snd] in *.
  match goal with Hw : wf_ty _ _ (TTensor _ [DVar _] _) |- _ => inversion Hw; subst end.
  match goal with Hd : Forall (wf_dim _ _) [DVar _] |- _ => inversion Hd; subst end.
  match goal with Hd : wf_dim _ _ (DVar _) |- _ => destruct Hd as [Hin _]; exact (Hin _ (or_introl eq_refl)) end.
Qed.

(** The same check on the callee's [where] clause (E0104 names it too): a
    callee with [dims []] whose [where] clause names [N] is not typed. *)
Example call_where_of_an_undeclared_dimension_is_untyped :
  forall Delta Phi G f n k params ret body sub args ty,
  ~ synth Delta Phi G (ECall f [] [CEq (DVar n) k] params ret body sub args) ty.
Proof.
  intros. intros H. inversion H; subst.
  match goal with Hw : Forall (fun c => forall x, In x (cstr_vars c) -> In x []) _ |- _ =>
    inversion Hw as [|c cs Hc _]; subst end.
  exact (Hc n (or_introl eq_refl)).
Qed.

(** And on a slice's bounds (E0104): a bound naming a shape variable
    outside Δ is not typed. *)
Example slice_of_an_undeclared_dimension_is_untyped :
  forall Delta Phi G e a n sz ty, ~ In n Delta ->
  ~ synth Delta Phi G (ESlice e a (DVar n) sz) ty.
Proof.
  intros Delta Phi G e a n sz ty Hn H. inversion H; subst.
  match goal with Hv : forall x, In x (dim_vars (DVar n) ++ _) -> In x Delta |- _ =>
    exact (Hn (Hv n (or_introl eq_refl))) end.
Qed.

From Coq Require Import String.
Local Open Scope string_scope.

(** The rules still type a call whose callee declares its shape variable:
    [f] with [(dims N)] and [y : (tensor f32 (N) host)], applied to
    [x : (tensor f32 (M) host)] with [N := M]. *)
Example call_of_a_declared_dimension_is_typed :
  synth ["M"] (fun _ => True) [("x", TTensor DF32 [DVar "M"] Host)]
        (ECall "f" ["N"] [] [("y", TTensor DF32 [DVar "N"] Host)] (TTensor DF32 [DVar "N"] Host)
               (EVar "y") [("N", DVar "M")] ["x"])
        (TTensor DF32 [DVar "M"] Host).
Proof.
  assert (Hwf : wf_ty ["N"] (where_constraint []) (TTensor DF32 [DVar "N"] Host)).
  { constructor. constructor; [|constructor]. split.
    - intros x [Hx|[]]. left. exact Hx.
    - intros rho _. apply eval_var_pos. }
  change (TTensor DF32 [DVar "M"] Host)
    with (TTensor DF32 (map (subst_dim (sub_of [("N", DVar "M")])) [DVar "N"]) Host).
  apply T_Call.
  - constructor; [exact Hwf | constructor].
  - exact Hwf.
  - constructor.
  - apply (T_Sub _ _ _ _ DF32 [DVar "N"]); [constructor; reflexivity|].
    constructor; [intros rho _; reflexivity | constructor].
  - constructor; [|constructor].
    exists DF32, [DVar "M"], [DVar "N"], Host. split; [reflexivity|]. split; [reflexivity|].
    constructor; [intros rho _; reflexivity | constructor].
  - constructor; [intros rho _; apply eval_var_pos | constructor].
  - constructor.
Qed.

(** §4.13 end to end: [x : (tensor f32 ((- 2 1)) host)] broadcast to [(N)]
    is typed, as [shapemlc check] accepts it
    (tests/lit/ok/broadcast-to-normalized-one.sml). *)
Example broadcast_to_of_minus_two_one_is_typed :
  synth ["N"] (fun _ => True) [("x", TTensor DF32 [DSub (DLit 2) (DLit 1)] Host)]
        (EBroadcastTo (EVar "x") [DVar "N"]) (TTensor DF32 [DVar "N"] Host).
Proof.
  apply (T_BroadcastTo _ _ _ _ DF32 [DSub (DLit 2) (DLit 1)]).
  - constructor. reflexivity.
  - constructor. constructor; [|constructor]. split.
    + intros x [Hx|[]]. left. exact Hx.
    + intros rho _. apply eval_var_pos.
  - apply bto_minus_one_is_one.
Qed.
