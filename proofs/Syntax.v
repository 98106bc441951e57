(** * Syntax.v — types, dimension expressions, constraints, core expressions

    Mechanizes docs/spec/language.md §2 (grammar) and §3 (types and
    dimension expressions) for the core fragment of shapeml.  Everything
    here is a definition; the few lemmas at the end are proven. *)

From Coq Require Import String List ZArith Bool Lia.
Import ListNotations.

(** ** §3.1 Dtypes *)
Inductive dtype : Type :=
| DF32 | DF64 | DBF16   (* floating *)
| DI32 | DI64          (* integral *)
| DBool.               (* boolean  *)

Definition dtype_eq_dec : forall a b : dtype, {a = b} + {a <> b}.
Proof. decide equality. Defined.

Definition is_floating (dt : dtype) : bool :=
  match dt with DF32 | DF64 | DBF16 => true | _ => false end.
Definition is_integral (dt : dtype) : bool :=
  match dt with DI32 | DI64 => true | _ => false end.
(** Numeric = floating ∪ integral. *)
Definition is_numeric (dt : dtype) : bool := is_floating dt || is_integral dt.

(** ** §3.2 Devices *)
Inductive device : Type :=
| Host
| Cuda (n : nat).

Definition device_eq_dec : forall a b : device, {a = b} + {a <> b}.
Proof. decide equality. apply Nat.eq_dec. Defined.

(** ** §2 / §3.3 Dimension expressions *)
Definition dvar := string.

(** [dim ::= INT | DIMVAR | (+ dim dim) | (- dim dim) | ( * dim dim)
             | (floordiv dim INT) | (mod dim INT)]; the n-ary [+] and [ * ]
    of the surface syntax are nested binary nodes.  Divisors are positive
    constants (§2). *)
Inductive dim : Type :=
| DLit (n : Z)
| DVar (x : dvar)
| DAdd (a b : dim)
| DSub (a b : dim)
| DMul (a b : dim)
| DFloorDiv (a : dim) (c : positive)
| DMod (a : dim) (c : positive).

(** Syntactic equality of dimensions.  The checker compares normal forms
    (§3.3); the model compares the expressions themselves, which is a
    sound under-approximation (structurally equal dims have equal normal
    forms), and it is decidable. *)
Definition dim_eq_dec : forall a b : dim, {a = b} + {a <> b}.
Proof.
  decide equality; auto using Z.eq_dec, string_dec, Pos.eq_dec.
Defined.

(** A shape is a list of dimension expressions. *)
Definition shape := list dim.

Fixpoint dim_vars (d : dim) : list dvar :=
  match d with
  | DLit _ => []
  | DVar x => [x]
  | DAdd a b | DSub a b | DMul a b => dim_vars a ++ dim_vars b
  | DFloorDiv a _ | DMod a _ => dim_vars a
  end.

(** ** Valuations
    A valuation assigns every shape variable a positive integer (§2: every
    dimension variable is [>= 1]). *)
Definition valuation := dvar -> positive.

(** Dimension expressions evaluate to integers (they are polynomials with
    integer coefficients, §3.3); [floordiv] and [mod] are floor division and
    its remainder. *)
Fixpoint eval_dim (rho : valuation) (d : dim) : Z :=
  match d with
  | DLit n => n
  | DVar x => Zpos (rho x)
  | DAdd a b => eval_dim rho a + eval_dim rho b
  | DSub a b => eval_dim rho a - eval_dim rho b
  | DMul a b => eval_dim rho a * eval_dim rho b
  | DFloorDiv a c => eval_dim rho a / Zpos c
  | DMod a c => eval_dim rho a mod Zpos c
  end%Z.

Definition eval_shape (rho : valuation) (ds : shape) : list Z :=
  map (eval_dim rho) ds.

(** The concrete (run-time) shape of a symbolic shape under a valuation. *)
Definition shape_at (rho : valuation) (ds : shape) : list nat :=
  map (fun d => Z.to_nat (eval_dim rho d)) ds.

(** ** Constraints and entailment (§2 [where], §4 [Φ ⊨ P], §6)
    A constraint is a proposition over valuations.  [entails Phi P] is
    [Φ ⊨ P]: P holds under every valuation (all variables >= 1 by
    construction of [valuation]) that satisfies Φ.  This is exactly the
    question the implementation sends to Z3. *)
Definition constraint := valuation -> Prop.

Definition entails (Phi : constraint) (P : valuation -> Prop) : Prop :=
  forall rho, Phi rho -> P rho.

(** Surface [where] constraints (§2) and their meaning. *)
Inductive cstr : Type :=
| CEq (a b : dim)
| CNe (a b : dim)
| CLt (a b : dim)
| CLe (a b : dim)
| CGt (a b : dim)
| CGe (a b : dim)
| CDivides (a b : dim).   (* (divides a b) : a >= 1 and b mod a = 0 (§2) *)

Definition cstr_holds (rho : valuation) (c : cstr) : Prop :=
  match c with
  | CEq a b => eval_dim rho a = eval_dim rho b
  | CNe a b => eval_dim rho a <> eval_dim rho b
  | CLt a b => eval_dim rho a < eval_dim rho b
  | CLe a b => eval_dim rho a <= eval_dim rho b
  | CGt a b => eval_dim rho a > eval_dim rho b
  | CGe a b => eval_dim rho a >= eval_dim rho b
  | CDivides a b => 1 <= eval_dim rho a /\ eval_dim rho b mod eval_dim rho a = 0
  end%Z.

(** The shape variables a constraint names (a [where] clause naming one
    the function does not declare is E0104, §2). *)
Definition cstr_vars (c : cstr) : list dvar :=
  match c with
  | CEq x y | CNe x y | CLt x y | CLe x y | CGt x y | CGe x y | CDivides x y =>
      dim_vars x ++ dim_vars y
  end.

(** The constraint denoted by a function's [where] clause. *)
Definition where_constraint (cs : list cstr) : constraint :=
  fun rho => Forall (cstr_holds rho) cs.

(** Obligation forms used by the typing rules. *)
Definition dim_eq_obl (Phi : constraint) (a b : dim) : Prop :=
  entails Phi (fun rho => eval_dim rho a = eval_dim rho b).

(** ** Types: [T(dt, [d1..dn], dev)] *)
Inductive ty : Type :=
| TTensor (dt : dtype) (ds : shape) (dev : device).

(** ** §3.4 Well-formed types (rule T-Tensor)
    Every dimension names only the function's shape variables Δ (E0104)
    and is [>= 1] under the constraints (E0305). *)
Definition wf_dim (Delta : list dvar) (Phi : constraint) (d : dim) : Prop :=
  (forall x, In x (dim_vars d) -> In x Delta) /\
  entails Phi (fun rho => (1 <= eval_dim rho d)%Z).

Inductive wf_ty (Delta : list dvar) (Phi : constraint) : ty -> Prop :=
(* §3.4 T-Tensor *)
| T_Tensor : forall dt ds dev,
    Forall (wf_dim Delta Phi) ds ->
    wf_ty Delta Phi (TTensor dt ds dev).

(** ** Operators of the core (§4.4, §4.6, §4.7, §4.16) *)
Inductive unop : Type :=
| UNeg | UAbs | URelu                                    (* numeric  *)
| UExp | ULog | USqrt | URsqrt | UTanh | USigmoid | UGelu | USilu. (* floating *)

Definition unop_ok (op : unop) (dt : dtype) : bool :=
  match op with
  | UNeg | UAbs | URelu => is_numeric dt
  | _ => is_floating dt
  end.

Inductive binop : Type := BAdd | BSub | BMul | BDiv | BMax | BMin | BPow.

Definition binop_ok (op : binop) (dt : dtype) : bool :=
  match op with
  | BPow => is_floating dt
  | _ => is_numeric dt
  end.

Inductive cmpop : Type := CmpEq | CmpNe | CmpLt | CmpLe | CmpGt | CmpGe.

Inductive redop : Type := RSum | RMax | RMean.

Definition redop_ok (op : redop) (dt : dtype) : bool :=
  match op with
  | RMean => is_floating dt
  | _ => is_numeric dt
  end.

(** §4.21: [(softmax x :axis a)] and [(log_softmax x :axis a)]. *)
Inductive smop : Type := SSoftmax | SLogSoftmax.

(** ** §2 numbers and §4.9 representability
    A numeric literal is an integer or a literal with a fraction or an
    exponent (kept as its text: the model never computes with it). *)
Inductive number : Type :=
| NInt (z : Z)
| NReal (text : string).

(** §4.9: an integral dtype needs an integer literal, [bool] needs 0 or 1. *)
Definition num_ok (dt : dtype) (n : number) : bool :=
  match dt, n with
  | (DF32 | DF64 | DBF16), _ => true
  | (DI32 | DI64), NInt _ => true
  | DBool, NInt z => (z =? 0)%Z || (z =? 1)%Z
  | _, _ => false
  end.

(** ** Core expressions
    [ELet x e1 e2] is the statement [(let x e1)] followed by the rest of
    the function body [e2]; [ELetAsc] is [(let x τ e1)].  Reduction axes
    are the surface [:axes] list ([None] = the default, all axes; negative
    axes count from the end). *)
Definition var := string.

Inductive expr : Type :=
| EVar (x : var)
| ELet (x : var) (e1 e2 : expr)
| ELetAsc (x : var) (t : ty) (e1 e2 : expr)
| EUnary (op : unop) (e : expr)
| EBinary (op : binop) (e1 e2 : expr)
| ECompare (op : cmpop) (e1 e2 : expr)
| ESelect (c a b : expr)
| ECast (e : expr) (dt : dtype)
| EMatmul (e1 e2 : expr)
| ETranspose (e : expr)
| EReshape (e : expr) (ds : shape)
| EReduce (op : redop) (axes : option (list Z)) (keepdims : bool) (e : expr)
| ECopyToDevice (e : expr) (n : nat)   (* (copy_to_device e (cuda n)) *)
| ECopyToHost (e : expr)
| ESlice (e : expr) (axis : Z) (start size : dim)   (* §4.15 *)
| EConcat (e1 e2 : expr) (axis : Z)   (* §4.14, two operands; see proofs.md *)
| EBroadcastTo (e : expr) (ds : shape) (* §4.13 *)
| EPermute (e : expr) (p : list nat)   (* §4.11 *)
| EConst (n : number) (dt : dtype) (dev : device)  (* §4.9 *)
| EFill (n : number) (t : ty)          (* §4.9, the form with a type *)
| EIota (t : ty) (axis : nat)          (* §4.9 *)
| ENum (n : number)                    (* §2 bare number, an operand of T-Binary *)
| ESoftmax (op : smop) (axis : Z) (e : expr)  (* §4.21 softmax / log_softmax along one axis *)
(* §4.18 a call in the typed IR (A-normal form, §7): the arguments are
   variables, the callee's definition ([dims], [where], parameters, result
   type, body) is carried by the call, and [sub] gives the callee's shape
   variables the caller's dimensions (inferred by §5.2 or given by [:dims]). *)
| ECall (f : string) (dims : list dvar) (wh : list cstr) (params : list (var * ty))
        (ret : ty) (body : expr) (sub : list (dvar * dim)) (args : list var).

(** Association lists: typing contexts Γ and run-time environments. *)
Fixpoint lookup {A : Type} (x : var) (l : list (var * A)) : option A :=
  match l with
  | [] => None
  | (y, a) :: l' => if String.eqb x y then Some a else lookup x l'
  end.

Definition ctx := list (var * ty).

(** ** Helpers on shapes shared by typing and semantics *)

(** Products of dimensions, in Z (type level) and nat (run time). *)
Fixpoint prodZ (l : list Z) : Z :=
  match l with [] => 1%Z | z :: l' => (z * prodZ l')%Z end.

Fixpoint prod (l : list nat) : nat :=
  match l with [] => 1 | n :: l' => n * prod l' end.

(** §4.16: resolving [:axes] against a rank [n]. *)
Definition resolve_axis (n : nat) (a : Z) : option nat :=
  if (0 <=? a)%Z && (a <? Z.of_nat n)%Z then Some (Z.to_nat a)
  else if (- Z.of_nat n <=? a)%Z && (a <? 0)%Z then Some (Z.to_nat (a + Z.of_nat n))
  else None.

Fixpoint all_some {A : Type} (l : list (option A)) : option (list A) :=
  match l with
  | [] => Some []
  | None :: _ => None
  | Some a :: l' => match all_some l' with Some r => Some (a :: r) | None => None end
  end.

Definition resolve_axes (n : nat) (axes : option (list Z)) : option (list nat) :=
  match axes with
  | None => Some (seq 0 n)
  | Some l => all_some (map (resolve_axis n) l)
  end.

(** Result dimensions of a reduction over positions [axs] (positions are
    counted from [i]): reduced positions are removed, or replaced by [one]
    with keepdims.  Generic so that the same function computes symbolic
    ([one = DLit 1]) and concrete ([one = 1]) shapes. *)
Fixpoint reduce_dims {A : Type} (one : A) (axs : list nat) (kd : bool) (i : nat)
         (ds : list A) : list A :=
  match ds with
  | [] => []
  | d :: ds' =>
      if existsb (Nat.eqb i) axs
      then (if kd then one :: reduce_dims one axs kd (S i) ds'
            else reduce_dims one axs kd (S i) ds')
      else d :: reduce_dims one axs kd (S i) ds'
  end.

(** ** Substitution of shape variables (§4.18) *)
Fixpoint subst_dim (s : dvar -> dim) (d : dim) : dim :=
  match d with
  | DLit n => DLit n
  | DVar x => s x
  | DAdd a b => DAdd (subst_dim s a) (subst_dim s b)
  | DSub a b => DSub (subst_dim s a) (subst_dim s b)
  | DMul a b => DMul (subst_dim s a) (subst_dim s b)
  | DFloorDiv a c => DFloorDiv (subst_dim s a) c
  | DMod a c => DMod (subst_dim s a) c
  end.

Definition subst_cstr (s : dvar -> dim) (c : cstr) : cstr :=
  match c with
  | CEq a b => CEq (subst_dim s a) (subst_dim s b)
  | CNe a b => CNe (subst_dim s a) (subst_dim s b)
  | CLt a b => CLt (subst_dim s a) (subst_dim s b)
  | CLe a b => CLe (subst_dim s a) (subst_dim s b)
  | CGt a b => CGt (subst_dim s a) (subst_dim s b)
  | CGe a b => CGe (subst_dim s a) (subst_dim s b)
  | CDivides a b => CDivides (subst_dim s a) (subst_dim s b)
  end.

(** A call's substitution as a function; a variable it does not give stays. *)
Definition sub_of (sub : list (dvar * dim)) : dvar -> dim :=
  fun x => match lookup x sub with Some d => d | None => DVar x end.

(** [ρ ∘ σ]: the callee's valuation, the caller's valuation of each
    substituted dimension (positive by the call's obligations). *)
Definition compose (rho : valuation) (s : dvar -> dim) : valuation :=
  fun x => Z.to_pos (eval_dim rho (s x)).

(** [l] with its element at position [a] replaced by [x] (slice and concat
    change one dimension). *)
Definition replace_at {A : Type} (a : nat) (x : A) (l : list A) : list A :=
  firstn a l ++ x :: skipn (S a) l.

(** ** Lemmas: soundness of the §3.3 normalization steps on [floordiv]/[mod]. *)
Lemma norm_floordiv_mul_sound : forall rho (c : positive) p,
  eval_dim rho (DFloorDiv (DMul (DLit (Zpos c)) p) c) = eval_dim rho p.
Proof.
  intros. cbn [eval_dim]. rewrite Z.mul_comm. apply Z.div_mul. lia.
Qed.

Lemma norm_mod_mul_sound : forall rho (c : positive) p,
  eval_dim rho (DMod (DMul (DLit (Zpos c)) p) c) = 0%Z.
Proof.
  intros. cbn [eval_dim]. rewrite Z.mul_comm. apply Z.mod_mul. lia.
Qed.

Lemma eval_var_pos : forall rho x, (1 <= eval_dim rho (DVar x))%Z.
Proof. intros. simpl. lia. Qed.

Lemma prodZ_of_nat : forall l, prodZ (map Z.of_nat l) = Z.of_nat (prod l).
Proof.
  induction l as [|n l IH]; simpl; [reflexivity|].
  rewrite IH. lia.
Qed.

Lemma reduce_dims_map : forall {A B : Type} (f : A -> B) one axs kd i ds,
  map f (reduce_dims one axs kd i ds) = reduce_dims (f one) axs kd i (map f ds).
Proof.
  intros A B f one axs kd i ds. revert i.
  induction ds as [|d ds IH]; intros i; simpl; [reflexivity|].
  destruct (existsb (Nat.eqb i) axs), kd; simpl; rewrite ?IH; reflexivity.
Qed.

Lemma replace_at_app : forall {A : Type} (l1 l2 : list A) x y,
  replace_at (length l1) x (l1 ++ y :: l2) = l1 ++ x :: l2.
Proof.
  intros A l1 l2 x y. unfold replace_at.
  induction l1 as [|z l1 IH]; [reflexivity|].
  cbn [length firstn skipn app]. f_equal. exact IH.
Qed.

Lemma map_replace_at : forall {A B : Type} (f : A -> B) a x l,
  map f (replace_at a x l) = replace_at a (f x) (map f l).
Proof.
  intros A B f a x l. unfold replace_at. rewrite map_app. cbn [map].
  rewrite firstn_map, skipn_map. reflexivity.
Qed.

(** The substitution lemma: [eval (subst σ d) = eval (ρ ∘ σ) d] when σ maps
    every variable to a positive value under ρ. *)
Lemma subst_eval : forall rho s d,
  (forall x, (1 <= eval_dim rho (s x))%Z) ->
  eval_dim rho (subst_dim s d) = eval_dim (compose rho s) d.
Proof.
  intros rho s d Hs. induction d; simpl; try congruence.
  unfold compose. rewrite Z2Pos.id; [reflexivity|]. specialize (Hs x). lia.
Qed.

Lemma subst_eval_shape : forall rho s ds,
  (forall x, (1 <= eval_dim rho (s x))%Z) ->
  eval_shape rho (map (subst_dim s) ds) = eval_shape (compose rho s) ds.
Proof.
  intros rho s ds Hs. unfold eval_shape. rewrite map_map. apply map_ext.
  intros d. apply subst_eval. exact Hs.
Qed.

Lemma subst_cstr_holds : forall rho s c,
  (forall x, (1 <= eval_dim rho (s x))%Z) ->
  (cstr_holds rho (subst_cstr s c) <-> cstr_holds (compose rho s) c).
Proof.
  intros rho s c Hs. destruct c; simpl; rewrite !subst_eval by exact Hs; reflexivity.
Qed.

Lemma sub_of_pos : forall rho sub,
  Forall (fun p => (1 <= eval_dim rho (snd p))%Z) sub ->
  forall x, (1 <= eval_dim rho (sub_of sub x))%Z.
Proof.
  intros rho sub H x. unfold sub_of. induction H as [|[y d] sub Hd _ IH]; simpl.
  - lia.
  - destruct (String.eqb x y); [exact Hd | exact IH].
Qed.
