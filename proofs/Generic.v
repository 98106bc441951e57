(** * Generic.v — dtype and device variables (spec §3.5), the elementwise core

    A generic function is checked once, symbolically: a dtype variable is a
    dtype of its own (equal only to itself) and an operation's dtype class
    must hold for every dtype the variable ranges over.  This file states
    that check for the elementwise fragment (§4.1 variables, §4.4 unary,
    §4.6 binary, §4.7 compare and select, §4.8 cast) and proves what the
    back ends rely on: every instance of an accepted expression — every
    dtype variable given a dtype of its set, every device variable any
    device — is well typed by the concrete rules of Typing.v, at the
    instantiated type.  Calls, literals and the other operations are not
    covered here (docs/design/proofs.md). *)

From Coq Require Import String List Bool.
From ShapeML Require Import Syntax Normalize Broadcast Typing.
Import ListNotations.

(** Dtypes and devices as a generic function's types hold them. *)
Inductive gdtype : Type :=
| GC (d : dtype)        (* a concrete dtype *)
| GV (v : string).      (* a dtype variable *)

Inductive gdevice : Type :=
| GDC (d : device)
| GDV (v : string).

Inductive gty : Type :=
| GTensor (g : gdtype) (ds : shape) (dev : gdevice).

Definition gctx := list (var * gty).

(** What a dtype variable ranges over ((dtypes (T f32 bf16))). *)
Definition dsets := string -> list dtype.

(** The dtypes [g] may be: itself, or its variable's set. *)
Definition may (S : dsets) (g : gdtype) : list dtype :=
  match g with GC d => [d] | GV v => S v end.

(** An instance: a dtype for every dtype variable, a device for every
    device variable. *)
Record inst : Type := { idt : string -> dtype; idev : string -> device }.

Definition admissible (S : dsets) (s : inst) : Prop := forall v, In (idt s v) (S v).

Definition inst_dt (s : inst) (g : gdtype) : dtype := match g with GC d => d | GV v => idt s v end.
Definition inst_dev (s : inst) (g : gdevice) : device := match g with GDC d => d | GDV v => idev s v end.
Definition inst_ty (s : inst) (t : gty) : ty :=
  match t with GTensor g ds dv => TTensor (inst_dt s g) ds (inst_dev s dv) end.
Definition inst_ctx (s : inst) (G : gctx) : ctx := map (fun p => (fst p, inst_ty s (snd p))) G.

(** The elementwise fragment with generic casts. *)
Inductive gexpr : Type :=
| GEVar (x : var)
| GEUnary (op : unop) (e : gexpr)
| GEBinary (op : binop) (e1 e2 : gexpr)
| GECompare (op : cmpop) (e1 e2 : gexpr)
| GESelect (c a b : gexpr)
| GECast (e : gexpr) (g : gdtype).

Fixpoint erase (s : inst) (e : gexpr) : expr :=
  match e with
  | GEVar x => EVar x
  | GEUnary op e => EUnary op (erase s e)
  | GEBinary op a b => EBinary op (erase s a) (erase s b)
  | GECompare op a b => ECompare op (erase s a) (erase s b)
  | GESelect c a b => ESelect (erase s c) (erase s a) (erase s b)
  | GECast e g => ECast (erase s e) (inst_dt s g)
  end.

(** The symbolic check (the C++ elaborator's rules for variables): a class
    must hold for every dtype [g] may be; dtypes and devices are compared
    as written, so a variable equals only itself. *)
Inductive gsynth (S : dsets) (Delta : list dvar) (Phi : constraint) (G : gctx) : gexpr -> gty -> Prop :=
| G_Var : forall x t,
    lookup x G = Some t ->
    gsynth S Delta Phi G (GEVar x) t
| G_Unary : forall op e g ds dv,
    gsynth S Delta Phi G e (GTensor g ds dv) ->
    forallb (unop_ok op) (may S g) = true ->
    gsynth S Delta Phi G (GEUnary op e) (GTensor g ds dv)
| G_Binary : forall op e1 e2 g ds1 ds2 ds dv,
    gsynth S Delta Phi G e1 (GTensor g ds1 dv) ->
    gsynth S Delta Phi G e2 (GTensor g ds2 dv) ->
    forallb (binop_ok op) (may S g) = true ->
    bshape Phi ds1 ds2 ds ->
    gsynth S Delta Phi G (GEBinary op e1 e2) (GTensor g ds dv)
| G_Compare : forall op e1 e2 g ds1 ds2 ds dv,
    gsynth S Delta Phi G e1 (GTensor g ds1 dv) ->
    gsynth S Delta Phi G e2 (GTensor g ds2 dv) ->
    bshape Phi ds1 ds2 ds ->
    gsynth S Delta Phi G (GECompare op e1 e2) (GTensor (GC DBool) ds dv)
| G_Select : forall c a b g dsc dsa dsb ds1 ds dv,
    gsynth S Delta Phi G c (GTensor (GC DBool) dsc dv) ->
    gsynth S Delta Phi G a (GTensor g dsa dv) ->
    gsynth S Delta Phi G b (GTensor g dsb dv) ->
    bshape Phi dsc dsa ds1 ->
    bshape Phi ds1 dsb ds ->
    gsynth S Delta Phi G (GESelect c a b) (GTensor g ds dv)
| G_Cast : forall e g g' ds dv,
    gsynth S Delta Phi G e (GTensor g ds dv) ->
    gsynth S Delta Phi G (GECast e g') (GTensor g' ds dv).

Lemma lookup_inst : forall s x G, lookup x (inst_ctx s G) = option_map (inst_ty s) (lookup x G).
Proof.
  intros s x G. induction G as [|[y t] G IH]; simpl; [reflexivity|].
  destruct (String.eqb x y); [reflexivity | exact IH].
Qed.

(** An instance of an admissible binding is among the dtypes [g] may be. *)
Lemma inst_in_may : forall S s g, admissible S s -> In (inst_dt s g) (may S g).
Proof. intros S s [d|v] Hs; simpl; [left; reflexivity | apply Hs]. Qed.

(** A class that holds for every member holds for the instance. *)
Lemma forallb_inst : forall (p : dtype -> bool) S s g,
    admissible S s -> forallb p (may S g) = true -> p (inst_dt s g) = true.
Proof.
  intros p S s g Hs Hall. rewrite forallb_forall in Hall. apply Hall, inst_in_may, Hs.
Qed.

(** The theorem: checked once, every instance checks (spec §3.5). *)
Theorem gsynth_instances : forall S Delta Phi G e t s,
    gsynth S Delta Phi G e t -> admissible S s ->
    synth Delta Phi (inst_ctx s G) (erase s e) (inst_ty s t).
Proof.
  intros S Delta Phi G e t s H Hs.
  induction H; simpl in *.
  - apply T_Var. rewrite lookup_inst, H. reflexivity.
  - eapply T_Unary; [exact IHgsynth | eapply forallb_inst; eauto].
  - eapply T_Binary; [exact IHgsynth1 | exact IHgsynth2 | eapply forallb_inst; eauto | exact H2].
  - eapply T_Compare; eauto.
  - eapply T_Select; eauto.
  - eapply T_Cast; exact IHgsynth.
Qed.

(** Why the class must hold for every member: a variable that may be i32
    is no floating dtype even if it may also be f32 — the instance at i32
    would not check. *)
Example class_needs_every_member :
  forall op, unop_ok op DI32 = false ->
  forallb (unop_ok op) (may (fun _ => [DF32; DI32]) (GV "T"%string)) = false.
Proof. intros op H. simpl. rewrite H. apply andb_false_r. Qed.
