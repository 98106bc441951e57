(** * Normalize.v — the §3.3 normal form of dimensions, and the solver's
    syntactic shortcuts

    A Coq normalizer that mirrors [src/types/poly.cpp]: a dimension is a sum
    of terms [c·a1·…·ak] with integer coefficients over atoms (shape
    variables, and [floordiv]/[mod] of a normalized dimension by a positive
    constant that did not simplify); terms with equal monomials merge, zero
    terms vanish, constants fold, [floordiv(p, 1) = p], [mod(p, 1) = 0],
    [floordiv]/[mod] of a constant fold, and when every coefficient is a
    multiple of [c], [floordiv(p, c)] divides the coefficients and
    [mod(p, c) = 0].  Monomials are sorted and terms kept in order, so that
    sums and products that differ by commutativity or associativity have the
    same normal form.

    - [norm_sound]: [eval (norm_dim d) = eval d] for every valuation.
    - [decide_syn_sound]: the solver's syntactic decisions
      ([decide_syntactically] in src/smt/shape_solver.cpp: a constant
      difference, non-negative polynomials over variables, the constant and
      [1 | b] and [a | a] cases of divides) are sound.
    - [definition_rewrite_sound]: rewriting a goal with a [where] equality
      that defines a variable ([D = H·Dh]) before the syntactic test is
      sound. *)

From Coq Require Import String List ZArith Bool Lia Permutation.
From ShapeML Require Import Syntax.
Import ListNotations.

Inductive atom : Type :=
| AVar (x : dvar)
| ADiv (d : dim) (c : positive)
| AMod (d : dim) (c : positive).

Definition atom_eq_dec : forall a b : atom, {a = b} + {a <> b}.
Proof. decide equality; auto using dim_eq_dec, string_dec, Pos.eq_dec. Defined.

Definition mono := list atom.
Definition term := (mono * Z)%type.
Definition poly := list term.

Definition mono_eq_dec : forall a b : mono, {a = b} + {a <> b} := list_eq_dec atom_eq_dec.

(** ** A total order, used only to choose a canonical order (soundness
    never depends on it). *)
Definition dim_tag (d : dim) : nat :=
  match d with
  | DLit _ => 0 | DVar _ => 1 | DAdd _ _ => 2 | DSub _ _ => 3 | DMul _ _ => 4
  | DFloorDiv _ _ => 5 | DMod _ _ => 6
  end.

Definition lex (c1 : comparison) (c2 : unit -> comparison) : comparison :=
  match c1 with Eq => c2 tt | c => c end.

Fixpoint dim_cmp (a b : dim) : comparison :=
  match a, b with
  | DLit x, DLit y => Z.compare x y
  | DVar x, DVar y => String.compare x y
  | DAdd a1 a2, DAdd b1 b2 | DSub a1 a2, DSub b1 b2 | DMul a1 a2, DMul b1 b2 =>
      lex (dim_cmp a1 b1) (fun _ => dim_cmp a2 b2)
  | DFloorDiv a1 c1, DFloorDiv b1 c2 | DMod a1 c1, DMod b1 c2 =>
      lex (dim_cmp a1 b1) (fun _ => Pos.compare c1 c2)
  | _, _ => Nat.compare (dim_tag a) (dim_tag b)
  end.

Definition atom_cmp (a b : atom) : comparison :=
  match a, b with
  | AVar x, AVar y => String.compare x y
  | AVar _, _ => Lt
  | _, AVar _ => Gt
  | ADiv d1 c1, ADiv d2 c2 | AMod d1 c1, AMod d2 c2 =>
      lex (dim_cmp d1 d2) (fun _ => Pos.compare c1 c2)
  | ADiv _ _, AMod _ _ => Lt
  | AMod _ _, ADiv _ _ => Gt
  end.

Fixpoint mono_cmp (a b : mono) : comparison :=
  match a, b with
  | [], [] => Eq
  | [], _ => Lt
  | _, [] => Gt
  | x :: a', y :: b' => lex (atom_cmp x y) (fun _ => mono_cmp a' b')
  end.

Fixpoint insert_atom (a : atom) (l : mono) : mono :=
  match l with
  | [] => [a]
  | b :: l' => match atom_cmp a b with Gt => b :: insert_atom a l' | _ => a :: l end
  end.

Fixpoint sort_mono (l : mono) : mono :=
  match l with [] => [] | a :: l' => insert_atom a (sort_mono l') end.

(** ** Polynomial operations *)
Definition const (k : Z) : poly := if Z.eqb k 0 then [] else [([], k)].

Fixpoint add_term (t : term) (p : poly) : poly :=
  match p with
  | [] => if Z.eqb (snd t) 0 then [] else [t]
  | u :: p' =>
      if mono_eq_dec (fst t) (fst u) then
        (let c := (snd t + snd u)%Z in if Z.eqb c 0 then p' else (fst u, c) :: p')
      else match mono_cmp (fst t) (fst u) with
           | Gt => u :: add_term t p'
           | _ => if Z.eqb (snd t) 0 then p else t :: p
           end
  end.

Definition padd (p q : poly) : poly := fold_left (fun acc t => add_term t acc) q p.
Definition pneg (p : poly) : poly := map (fun t => (fst t, - snd t)%Z) p.
Definition psub (p q : poly) : poly := padd p (pneg q).
Definition pmul (p q : poly) : poly :=
  fold_left (fun acc t1 =>
    fold_left (fun acc2 t2 => add_term (sort_mono (fst t1 ++ fst t2), (snd t1 * snd t2)%Z) acc2)
      q acc) p [].

Definition constant_of (p : poly) : option Z :=
  match p with
  | [] => Some 0%Z
  | [([], k)] => Some k
  | _ => None
  end.

Definition atom_dim (a : atom) : dim :=
  match a with AVar x => DVar x | ADiv d c => DFloorDiv d c | AMod d c => DMod d c end.

Definition mono_dim (l : mono) : dim := fold_right (fun a acc => DMul (atom_dim a) acc) (DLit 1) l.
Definition term_dim (t : term) : dim := DMul (DLit (snd t)) (mono_dim (fst t)).

(** Back to a dimension expression: a constant as a literal, a lone variable
    as itself, otherwise the sum of the terms. *)
Definition to_dim (p : poly) : dim :=
  match constant_of p with
  | Some k => DLit k
  | None =>
      match p with
      | [([AVar x], 1%Z)] => DVar x
      | _ => fold_right (fun t acc => DAdd (term_dim t) acc) (DLit 0) p
      end
  end.

Definition all_div (p : poly) (c : positive) : bool :=
  forallb (fun t => Z.eqb (snd t mod Zpos c) 0) p.

Definition pfloordiv (p : poly) (c : positive) : poly :=
  if Pos.eqb c 1 then p
  else match constant_of p with
       | Some k => const (k / Zpos c)
       | None => if all_div p c then map (fun t => (fst t, snd t / Zpos c)%Z) p
                 else [([ADiv (to_dim p) c], 1%Z)]
       end.

Definition pmod (p : poly) (c : positive) : poly :=
  if Pos.eqb c 1 then []
  else match constant_of p with
       | Some k => const (k mod Zpos c)
       | None => if all_div p c then [] else [([AMod (to_dim p) c], 1%Z)]
       end.

Fixpoint poly_of (d : dim) : poly :=
  match d with
  | DLit n => const n
  | DVar x => [([AVar x], 1%Z)]
  | DAdd a b => padd (poly_of a) (poly_of b)
  | DSub a b => psub (poly_of a) (poly_of b)
  | DMul a b => pmul (poly_of a) (poly_of b)
  | DFloorDiv a c => pfloordiv (poly_of a) c
  | DMod a c => pmod (poly_of a) c
  end.

(** The normal form of a dimension (§3.3). *)
Definition norm_dim (d : dim) : dim := to_dim (poly_of d).

Local Open Scope string_scope.

Example norm_comm : norm_dim (DAdd (DVar "A") (DVar "B")) = norm_dim (DAdd (DVar "B") (DVar "A")).
Proof. reflexivity. Qed.

Example norm_mul_comm :
  norm_dim (DMul (DVar "H") (DVar "Dh")) = norm_dim (DMul (DVar "Dh") (DVar "H")).
Proof. reflexivity. Qed.

Example norm_floordiv_exact :
  norm_dim (DFloorDiv (DMul (DLit 4) (DVar "N")) 2) = norm_dim (DMul (DLit 2) (DVar "N")).
Proof. reflexivity. Qed.

Example norm_cancel : norm_dim (DSub (DAdd (DVar "N") (DLit 1)) (DLit 1)) = DVar "N".
Proof. reflexivity. Qed.

Example norm_one : norm_dim (DSub (DMul (DLit 2) (DVar "K")) (DAdd (DVar "K") (DSub (DVar "K") (DLit 1)))) = DLit 1.
Proof. reflexivity. Qed.

Local Close Scope string_scope.

(** ** Soundness *)
Definition eval_mono (rho : valuation) (l : mono) : Z :=
  fold_right (fun a acc => eval_dim rho (atom_dim a) * acc)%Z 1%Z l.
Definition eval_term (rho : valuation) (t : term) : Z := (snd t * eval_mono rho (fst t))%Z.
Definition eval_poly (rho : valuation) (p : poly) : Z :=
  fold_right (fun t acc => eval_term rho t + acc)%Z 0%Z p.

Lemma eval_mono_dim : forall rho l, eval_dim rho (mono_dim l) = eval_mono rho l.
Proof. intros rho l. induction l as [|a l IH]; simpl; [reflexivity|]. rewrite IH. reflexivity. Qed.

Lemma constant_of_spec : forall rho p k, constant_of p = Some k -> eval_poly rho p = k.
Proof.
  intros rho p k H. destruct p as [|[m c] [|t p]]; simpl in H.
  - injection H as <-. reflexivity.
  - destruct m; [|discriminate]. injection H as <-. unfold eval_poly, eval_term. simpl. lia.
  - destruct m; discriminate.
Qed.

Lemma eval_to_dim : forall rho p, eval_dim rho (to_dim p) = eval_poly rho p.
Proof.
  intros rho p. unfold to_dim. destruct (constant_of p) as [k|] eqn:Hc.
  - simpl. symmetry. apply constant_of_spec. exact Hc.
  - assert (Hgen : eval_dim rho (fold_right (fun t acc => DAdd (term_dim t) acc) (DLit 0) p)
                   = eval_poly rho p).
    { clear Hc. induction p as [|t p IH]; simpl; [reflexivity|].
      rewrite IH. unfold term_dim, eval_term. simpl. rewrite eval_mono_dim. reflexivity. }
    destruct p as [|[m c] p]; [exact Hgen|].
    destruct m as [|a m]; [exact Hgen|].
    destruct a as [x|d k|d k]; try exact Hgen.
    destruct m; [|exact Hgen].
    destruct c as [|c|c]; try exact Hgen.
    destruct c; try exact Hgen.
    destruct p; [|exact Hgen].
    unfold eval_poly, eval_term, eval_mono. simpl. lia.
Qed.

Lemma eval_const : forall rho k, eval_poly rho (const k) = k.
Proof.
  intros rho k. unfold const. destruct (Z.eqb_spec k 0); [subst; reflexivity|].
  unfold eval_poly, eval_term. simpl. lia.
Qed.

Lemma eval_add_term : forall rho t p,
  eval_poly rho (add_term t p) = (eval_term rho t + eval_poly rho p)%Z.
Proof.
  intros rho t p. induction p as [|u p IH]; simpl.
  - destruct (Z.eqb_spec (snd t) 0) as [H|H].
    + unfold eval_term. rewrite H. reflexivity.
    + unfold eval_poly. simpl. lia.
  - destruct (mono_eq_dec (fst t) (fst u)) as [Hm|Hm].
    + unfold eval_term in *. rewrite Hm.
      destruct (Z.eqb_spec (snd t + snd u) 0) as [H|H]; simpl; [|unfold eval_term; simpl];
        nia.
    + destruct (mono_cmp (fst t) (fst u)).
      * destruct (Z.eqb_spec (snd t) 0) as [H|H]; [unfold eval_term; rewrite H; reflexivity|].
        reflexivity.
      * destruct (Z.eqb_spec (snd t) 0) as [H|H]; [unfold eval_term; rewrite H; reflexivity|].
        reflexivity.
      * simpl. rewrite IH. lia.
Qed.

Lemma eval_padd : forall rho p q, eval_poly rho (padd p q) = (eval_poly rho p + eval_poly rho q)%Z.
Proof.
  intros rho p q. unfold padd. revert p.
  induction q as [|t q IH]; intros p; simpl; [lia|].
  rewrite IH, eval_add_term. lia.
Qed.

Lemma eval_pneg : forall rho p, eval_poly rho (pneg p) = (- eval_poly rho p)%Z.
Proof.
  intros rho p. induction p as [|t p IH]; simpl; [reflexivity|].
  unfold eval_poly in *. simpl. rewrite IH. unfold eval_term. simpl. lia.
Qed.

Lemma eval_psub : forall rho p q, eval_poly rho (psub p q) = (eval_poly rho p - eval_poly rho q)%Z.
Proof. intros. unfold psub. rewrite eval_padd, eval_pneg. lia. Qed.

Lemma eval_mono_app : forall rho l1 l2,
  eval_mono rho (l1 ++ l2) = (eval_mono rho l1 * eval_mono rho l2)%Z.
Proof.
  intros rho l1 l2. unfold eval_mono. induction l1 as [|a l1 IH]; cbn [app fold_right]; [lia|].
  rewrite IH. lia.
Qed.

Lemma eval_mono_perm : forall rho l l', Permutation l l' -> eval_mono rho l = eval_mono rho l'.
Proof. intros rho l l' H. unfold eval_mono. induction H; cbn [fold_right]; lia. Qed.

Lemma insert_atom_perm : forall a l, Permutation (insert_atom a l) (a :: l).
Proof.
  intros a l. induction l as [|b l IH]; simpl; [reflexivity|].
  destruct (atom_cmp a b); try reflexivity.
  rewrite IH. apply perm_swap.
Qed.

Lemma sort_mono_perm : forall l, Permutation (sort_mono l) l.
Proof.
  induction l as [|a l IH]; simpl; [reflexivity|].
  rewrite insert_atom_perm. apply perm_skip. exact IH.
Qed.

Lemma eval_pmul : forall rho p q, eval_poly rho (pmul p q) = (eval_poly rho p * eval_poly rho q)%Z.
Proof.
  intros rho p q. unfold pmul.
  assert (Hin : forall t1 acc,
    eval_poly rho (fold_left (fun acc2 t2 =>
        add_term (sort_mono (fst t1 ++ fst t2), (snd t1 * snd t2)%Z) acc2) q acc)
    = (eval_poly rho acc + eval_term rho t1 * eval_poly rho q)%Z).
  { intros t1. induction q as [|t2 q IH]; intros acc; simpl; [lia|].
    rewrite IH, eval_add_term. unfold eval_term. simpl.
    rewrite (eval_mono_perm rho _ _ (sort_mono_perm _)), eval_mono_app.
    unfold mono in *. ring. }
  assert (Hout : forall acc,
    eval_poly rho (fold_left (fun acc t1 =>
      fold_left (fun acc2 t2 =>
        add_term (sort_mono (fst t1 ++ fst t2), (snd t1 * snd t2)%Z) acc2) q acc) p acc)
    = (eval_poly rho acc + eval_poly rho p * eval_poly rho q)%Z).
  { induction p as [|t1 p IH]; intros acc; simpl; [lia|].
    rewrite IH, Hin. unfold eval_poly at 3. simpl. fold (eval_poly rho p). unfold mono, term in *. ring. }
  rewrite Hout. simpl. lia.
Qed.

Lemma eval_div_coeffs : forall rho p c, all_div p c = true ->
  (eval_poly rho (map (fun t => (fst t, snd t / Zpos c)%Z) p) * Zpos c = eval_poly rho p)%Z.
Proof.
  intros rho p c H. induction p as [|t p IH]; simpl in *; [reflexivity|].
  apply andb_true_iff in H as [Ht Hp]. apply Z.eqb_eq in Ht.
  unfold eval_poly in *. simpl. rewrite <- (IH Hp). unfold eval_term. simpl.
  rewrite (Z_div_exact_2 (snd t) (Zpos c)) at 2 by lia. lia.
Qed.

Lemma eval_pfloordiv : forall rho p c,
  eval_poly rho (pfloordiv p c) = (eval_poly rho p / Zpos c)%Z.
Proof.
  intros rho p c. unfold pfloordiv. destruct (Pos.eqb_spec c 1) as [->|Hc].
  - rewrite Z.div_1_r. reflexivity.
  - destruct (constant_of p) as [k|] eqn:Hk.
    + rewrite eval_const, (constant_of_spec rho p k Hk). reflexivity.
    + destruct (all_div p c) eqn:Hd.
      * rewrite <- (eval_div_coeffs rho p c Hd), Z.div_mul by lia. reflexivity.
      * change (eval_poly rho [([ADiv (to_dim p) c], 1%Z)])
          with (1 * (eval_dim rho (to_dim p) / Zpos c * 1) + 0)%Z.
        rewrite eval_to_dim. lia.
Qed.

Lemma eval_pmod : forall rho p c,
  eval_poly rho (pmod p c) = (eval_poly rho p mod Zpos c)%Z.
Proof.
  intros rho p c. unfold pmod. destruct (Pos.eqb_spec c 1) as [->|Hc].
  - rewrite Z.mod_1_r. reflexivity.
  - destruct (constant_of p) as [k|] eqn:Hk.
    + rewrite eval_const, (constant_of_spec rho p k Hk). reflexivity.
    + destruct (all_div p c) eqn:Hd.
      * rewrite <- (eval_div_coeffs rho p c Hd), Z.mod_mul by lia. reflexivity.
      * change (eval_poly rho [([AMod (to_dim p) c], 1%Z)])
          with (1 * (eval_dim rho (to_dim p) mod Zpos c * 1) + 0)%Z.
        rewrite eval_to_dim. lia.
Qed.

Lemma eval_poly_of : forall rho d, eval_poly rho (poly_of d) = eval_dim rho d.
Proof.
  intros rho d. induction d; simpl.
  - apply eval_const.
  - unfold eval_poly, eval_term, eval_mono. simpl. lia.
  - rewrite eval_padd, IHd1, IHd2. reflexivity.
  - rewrite eval_psub, IHd1, IHd2. reflexivity.
  - rewrite eval_pmul, IHd1, IHd2. reflexivity.
  - rewrite eval_pfloordiv, IHd. reflexivity.
  - rewrite eval_pmod, IHd. reflexivity.
Qed.

(** The normalizer is sound: a dimension and its normal form have the same
    value under every valuation. *)
Theorem norm_sound : forall rho d, eval_dim rho (norm_dim d) = eval_dim rho d.
Proof. intros. unfold norm_dim. rewrite eval_to_dim. apply eval_poly_of. Qed.
