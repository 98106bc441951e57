(** * Bundles.v — parameter bundles (spec §4.32) as the checker receives them

    Bundles are expanded before checking (src/syntax/bundles.cpp): a value
    of a bundle type is one name per leaf field, in declared order, and the
    bundle's parameters (dtypes, devices, dimensions, in that order) are
    substituted into its field types.  So the typing relation of Typing.v
    and Generic.v applies to the expansion unchanged, and what a bundle adds
    is the expansion itself.  This file states it — declarations, textual
    substitution into field types, the leaves of an application — and
    proves the two facts the checker and the C ABI rely on:

    - [leaves_paths_distinct]: when every declaration's field names are
      distinct, the leaves' paths are distinct, so the expanded parameter
      list never names a parameter twice;
    - [leaves_paths_independent]: the paths (the ABI's parameter names,
      `m.b1.wq` ...) and whether the expansion succeeds do not depend on the
      arguments a bundle is applied to — one bundle has one ABI layout at
      every dtype, device and size.

    Not modelled: the E0107 rules (arity is a side condition of [leaves]),
    map_fields and templates (§4.33), gradients of bundles. *)

From Coq Require Import String List Bool Arith.
Import ListNotations.

(** Field types as the expander sees them: S-expressions. *)
Inductive sexp : Type :=
| Atom (s : string)
| SList (l : list sexp).

(** Every atom bound in [sg] replaced by its value (the bundle's
    parameters by the arguments of an application). *)
Fixpoint subst (sg : list (string * sexp)) (e : sexp) : sexp :=
  match e with
  | Atom s =>
      match find (fun p => String.eqb (fst p) s) sg with
      | Some p => snd p
      | None => Atom s
      end
  | SList l => SList (map (subst sg) l)
  end.

Inductive ftype : Type :=
| FLeaf (t : sexp)                          (* a tensor type *)
| FBundle (b : string) (args : list sexp).  (* a bundle applied to its arguments *)

Record bundle : Type := { bparams : list string; bfields : list (string * ftype) }.

Definition benv := list (string * bundle).

Fixpoint blookup (b : string) (env : benv) : option bundle :=
  match env with
  | [] => None
  | (c, d) :: rest => if String.eqb b c then Some d else blookup b rest
  end.

(** A leaf: its path (the field names from the value down; the ABI joins
    them with dots after the value's name) and its tensor type. *)
Definition leaf := (list string * sexp)%type.

Definition prefix (f : string) (l : list leaf) : list leaf := map (fun p => (f :: fst p, snd p)) l.

(** The leaves of a value of bundle [b] applied to [args]; [fuel] bounds the
    nesting (the expander's limit), None for an unknown bundle, a wrong
    number of arguments or nesting beyond the fuel. *)
Fixpoint leaves (fuel : nat) (env : benv) (b : string) (args : list sexp) : option (list leaf) :=
  match fuel with
  | O => None
  | S n =>
      match blookup b env with
      | None => None
      | Some d =>
          if Nat.eqb (length (bparams d)) (length args) then
            let sg := combine (bparams d) args in
            (fix go (fs : list (string * ftype)) : option (list leaf) :=
               match fs with
               | [] => Some []
               | (f, FLeaf t) :: rest =>
                   match go rest with Some r => Some ((f :: [], subst sg t) :: r) | None => None end
               | (f, FBundle c a) :: rest =>
                   match leaves n env c (map (subst sg) a), go rest with
                   | Some l, Some r => Some (prefix f l ++ r)
                   | _, _ => None
                   end
               end) (bfields d)
          else None
      end
  end.

(** The field-level step of [leaves], named, for the proofs. *)
Fixpoint fields_leaves (rec : string -> list sexp -> option (list leaf)) (sg : list (string * sexp))
    (fs : list (string * ftype)) : option (list leaf) :=
  match fs with
  | [] => Some []
  | (f, FLeaf t) :: rest =>
      match fields_leaves rec sg rest with Some r => Some ((f :: [], subst sg t) :: r) | None => None end
  | (f, FBundle c a) :: rest =>
      match rec c (map (subst sg) a), fields_leaves rec sg rest with
      | Some l, Some r => Some (prefix f l ++ r)
      | _, _ => None
      end
  end.

Lemma leaves_unfold : forall n env b args,
    leaves (S n) env b args =
    match blookup b env with
    | None => None
    | Some d =>
        if Nat.eqb (length (bparams d)) (length args)
        then fields_leaves (fun c a => leaves n env c a) (combine (bparams d) args) (bfields d)
        else None
    end.
Proof.
  intros n env b args. simpl. destruct (blookup b env) as [d|]; [|reflexivity].
  destruct (Nat.eqb (length (bparams d)) (length args)); [|reflexivity].
  induction (bfields d) as [|[f [t|c a]] rest IH]; simpl; [reflexivity| |].
  - rewrite IH. reflexivity.
  - rewrite IH. reflexivity.
Qed.

(** Every path of [fields_leaves] starts with the name of the field it
    came from. *)
Lemma fields_leaves_heads : forall rec sg fs l p,
    fields_leaves rec sg fs = Some l -> In p l -> exists f rest, fst p = f :: rest /\ In f (map fst fs).
Proof.
  intros rec sg fs. induction fs as [|[f [t|c a]] fs IH]; simpl; intros l p H Hin.
  - inversion H; subst. destruct Hin.
  - destruct (fields_leaves rec sg fs) as [r|] eqn:E; [|discriminate]. inversion H; subst.
    destruct Hin as [<-|Hin].
    + exists f, []. split; [reflexivity | left; reflexivity].
    + destruct (IH r p eq_refl Hin) as (g & rest & Hp & Hg). exists g, rest. split; [exact Hp | right; exact Hg].
  - destruct (rec c (map (subst sg) a)) as [l1|]; [|discriminate].
    destruct (fields_leaves rec sg fs) as [r|] eqn:E; [|discriminate]. inversion H; subst.
    apply in_app_or in Hin. destruct Hin as [Hin|Hin].
    + unfold prefix in Hin. apply in_map_iff in Hin. destruct Hin as (q & <- & _).
      exists f, (fst q). split; [reflexivity | left; reflexivity].
    + destruct (IH r p eq_refl Hin) as (g & rest & Hp & Hg). exists g, rest. split; [exact Hp | right; exact Hg].
Qed.

Lemma NoDup_app_disjoint : forall (A : Type) (l1 l2 : list A),
    NoDup l1 -> NoDup l2 -> (forall x, In x l1 -> ~ In x l2) -> NoDup (l1 ++ l2).
Proof.
  intros A l1 l2 H1. induction H1 as [|x l1 Hx H1 IH]; simpl; intros H2 Hdis; [exact H2|].
  constructor.
  - intros Hin. apply in_app_or in Hin. destruct Hin as [Hin|Hin]; [exact (Hx Hin)|].
    exact (Hdis x (or_introl eq_refl) Hin).
  - apply IH; [exact H2|]. intros y Hy. apply Hdis. right. exact Hy.
Qed.

Lemma NoDup_prefix : forall f l, NoDup (map fst l) -> NoDup (map fst (prefix f l)).
Proof.
  intros f l. unfold prefix. rewrite map_map. simpl. intros H.
  apply (NoDup_map_inv (fun p => tl p)). rewrite map_map. simpl. exact H.
Qed.

(** Declarations whose field names are distinct. *)
Definition distinct_fields (env : benv) : Prop :=
  forall b d, blookup b env = Some d -> NoDup (map fst (bfields d)).

Lemma fields_leaves_distinct : forall rec sg fs l,
    (forall c a l', rec c a = Some l' -> NoDup (map fst l')) ->
    NoDup (map fst fs) -> fields_leaves rec sg fs = Some l -> NoDup (map fst l).
Proof.
  intros rec sg fs. induction fs as [|[f ft] fs IH]; intros l Hrec Hnd H.
  - simpl in H. inversion H; subst. constructor.
  - simpl in Hnd. inversion Hnd as [|? ? Hf Hnd']; subst.
    assert (Hother : forall r p, fields_leaves rec sg fs = Some r -> In p (map fst r) -> hd_error p <> Some f).
    { intros r p Er Hp Hhd. apply in_map_iff in Hp. destruct Hp as (q & <- & Hq).
      destruct (fields_leaves_heads rec sg fs r q Er Hq) as (g & rest & Hqp & Hg).
      rewrite Hqp in Hhd. simpl in Hhd. inversion Hhd; subst. exact (Hf Hg). }
    destruct ft as [t|c a]; simpl in H.
    + destruct (fields_leaves rec sg fs) as [r|] eqn:E; [|discriminate]. inversion H; subst. simpl.
      constructor; [|exact (IH r Hrec Hnd' eq_refl)].
      intros Hin. exact (Hother r [f] eq_refl Hin eq_refl).
    + destruct (rec c (map (subst sg) a)) as [l1|] eqn:E1; [|discriminate].
      destruct (fields_leaves rec sg fs) as [r|] eqn:E; [|discriminate]. inversion H; subst.
      rewrite map_app. apply NoDup_app_disjoint.
      * apply NoDup_prefix. exact (Hrec c _ l1 E1).
      * exact (IH r Hrec Hnd' eq_refl).
      * intros p Hp Hpr. unfold prefix in Hp. rewrite map_map in Hp. simpl in Hp.
        apply in_map_iff in Hp. destruct Hp as (q & <- & _).
        exact (Hother r (f :: fst q) eq_refl Hpr eq_refl).
Qed.

(** The expansion names no parameter twice. *)
Theorem leaves_paths_distinct : forall fuel env b args l,
    distinct_fields env -> leaves fuel env b args = Some l -> NoDup (map fst l).
Proof.
  intros fuel. induction fuel as [|n IH]; intros env b args l Henv H; [discriminate|].
  rewrite leaves_unfold in H. destruct (blookup b env) as [d|] eqn:Eb; [|discriminate].
  destruct (Nat.eqb (length (bparams d)) (length args)); [|discriminate].
  eapply fields_leaves_distinct; [| exact (Henv b d Eb) | exact H].
  intros c a l' Hc. exact (IH env c a l' Henv Hc).
Qed.

Lemma fields_leaves_independent : forall rec1 rec2 sg1 sg2 fs l1,
    (forall c a1 a2 l', length a1 = length a2 -> rec1 c a1 = Some l' ->
       exists l'', rec2 c a2 = Some l'' /\ map fst l' = map fst l'') ->
    fields_leaves rec1 sg1 fs = Some l1 ->
    exists l2, fields_leaves rec2 sg2 fs = Some l2 /\ map fst l1 = map fst l2.
Proof.
  intros rec1 rec2 sg1 sg2 fs. induction fs as [|[f [t|c a]] fs IH]; simpl; intros l1 Hrec H.
  - inversion H; subst. exists []. split; reflexivity.
  - destruct (fields_leaves rec1 sg1 fs) as [r|] eqn:E; [|discriminate]. inversion H; subst.
    destruct (IH r Hrec eq_refl) as (r2 & E2 & Hr). rewrite E2.
    exists (([f], subst sg2 t) :: r2). split; [reflexivity | simpl; rewrite Hr; reflexivity].
  - destruct (rec1 c (map (subst sg1) a)) as [x|] eqn:E1; [|discriminate].
    destruct (fields_leaves rec1 sg1 fs) as [r|] eqn:E; [|discriminate]. inversion H; subst.
    destruct (Hrec c (map (subst sg1) a) (map (subst sg2) a) x) as (y & Ey & Hxy);
      [rewrite !map_length; reflexivity | exact E1 |].
    destruct (IH r Hrec eq_refl) as (r2 & E2 & Hr). rewrite Ey, E2.
    exists (prefix f y ++ r2). split; [reflexivity|].
    rewrite !map_app. unfold prefix. rewrite !map_map. simpl.
    f_equal; [|exact Hr].
    replace (map (fun x0 => f :: fst x0) x) with (map (cons f) (map fst x)) by (rewrite map_map; reflexivity).
    replace (map (fun x0 => f :: fst x0) y) with (map (cons f) (map fst y)) by (rewrite map_map; reflexivity).
    rewrite Hxy. reflexivity.
Qed.

(** The ABI layout of a bundle does not depend on what it is applied to. *)
Theorem leaves_paths_independent : forall fuel env b a1 a2 l1,
    length a1 = length a2 -> leaves fuel env b a1 = Some l1 ->
    exists l2, leaves fuel env b a2 = Some l2 /\ map fst l1 = map fst l2.
Proof.
  intros fuel. induction fuel as [|n IH]; intros env b a1 a2 l1 Hlen H; [discriminate|].
  rewrite leaves_unfold in H. rewrite leaves_unfold.
  destruct (blookup b env) as [d|]; [|discriminate].
  rewrite <- Hlen. destruct (Nat.eqb (length (bparams d)) (length a1)); [|discriminate].
  eapply fields_leaves_independent; [| exact H].
  intros c x y l' Hxy Hc. exact (IH env c x y l' Hxy Hc).
Qed.

(** An example: StoryLM-0's shape of model — a block applied twice inside
    a model — expands to distinct paths, the block's in each. *)
Definition ex_block : bundle :=
  {| bparams := ["Ty"; "Dv"; "D"]%string;
     bfields := [("g1"%string, FLeaf (SList [Atom "tensor"; Atom "Ty"; SList [Atom "D"]; Atom "Dv"]));
                 ("wq"%string, FLeaf (SList [Atom "tensor"; Atom "Ty"; SList [Atom "D"; Atom "D"]; Atom "Dv"]))] |}%string.
Definition ex_model : bundle :=
  {| bparams := ["Ty"; "Dv"; "D"]%string;
     bfields := [("b1"%string, FBundle "Block" [Atom "Ty"; Atom "Dv"; Atom "D"]);
                 ("b2"%string, FBundle "Block" [Atom "Ty"; Atom "Dv"; Atom "D"])] |}%string.
Definition ex_env : benv := [("Block"%string, ex_block); ("Model"%string, ex_model)].

Example ex_model_paths :
  option_map (map fst) (leaves 3 ex_env "Model" [Atom "bf16"; SList [Atom "cuda"; Atom "0"]; Atom "32"]) =
  Some [["b1"; "g1"]; ["b1"; "wq"]; ["b2"; "g1"]; ["b2"; "wq"]]%string.
Proof. reflexivity. Qed.
