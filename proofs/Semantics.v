(** * Semantics.v — big-step semantics (§5)

    Values are dense row-major tensors of a concrete shape.  The element
    type [V] and the scalar operations are parameters (a [prims] record),
    so the development says nothing about floating-point arithmetic; it is
    about shapes, dtypes and devices.  The evaluation relation covers the
    whole core; its soundness is proven in Soundness.v and Reshape.v. *)

From Coq Require Import String List ZArith Lia Permutation.
From ShapeML Require Import Syntax Broadcast.
Import ListNotations.

(** ** Scalar primitives (parameters of the semantics) *)
Record prims (V : Type) : Type := mk_prims {
  p_unary   : unop -> V -> V;
  p_binary  : binop -> V -> V -> V;
  p_compare : cmpop -> V -> V -> V;       (* result encodes a bool *)
  p_select  : V -> V -> V -> V;           (* select c a b *)
  p_cast    : dtype -> dtype -> V -> V;   (* from, to *)
  p_zero    : V;
  p_add     : V -> V -> V;
  p_mul     : V -> V -> V;
  p_red_init : redop -> V;
  p_red_step : redop -> V -> V -> V;
  p_red_fin  : redop -> nat -> V -> V;    (* reduce_mean divides by the count *)
  p_num     : dtype -> number -> V;      (* a literal at a dtype *)
  p_of_nat  : dtype -> nat -> V          (* iota's elements *)
}.
Arguments p_unary {V}. Arguments p_binary {V}.
Arguments p_compare {V}. Arguments p_select {V}. Arguments p_cast {V}.
Arguments p_zero {V}. Arguments p_add {V}. Arguments p_mul {V}.
Arguments p_red_init {V}. Arguments p_red_step {V}. Arguments p_red_fin {V}.
Arguments p_num {V}. Arguments p_of_nat {V}.

(** ** Tensors *)
Record tensor (V : Type) : Type := mkT {
  t_dtype : dtype;
  t_shape : list nat;
  t_device : device;
  t_data : list V
}.
Arguments mkT {V}. Arguments t_dtype {V}. Arguments t_shape {V}.
Arguments t_device {V}. Arguments t_data {V}.

(** ** Row-major indexing *)
Fixpoint unravel (s : list nat) (i : nat) : list nat :=
  match s with
  | [] => []
  | _ :: s' => (i / prod s') :: unravel s' (i mod prod s')
  end.

Fixpoint ravel (s idx : list nat) : nat :=
  match s, idx with
  | _ :: s', k :: idx' => k * prod s' + ravel s' idx'
  | _, _ => 0
  end.

(** The tensor of shape [s] whose element at multi-index [idx] is [f idx]. *)
Definition tabulate {A : Type} (s : list nat) (f : list nat -> A) : list A :=
  map (fun i => f (unravel s i)) (seq 0 (prod s)).

(** The same, when reading an element may fail: [None] as soon as one
    element is [None].  Reads use [nth_error], so an out-of-bounds read makes
    evaluation stuck instead of returning a default value. *)
Definition tabulate_opt {A : Type} (s : list nat) (f : list nat -> option A)
  : option (list A) :=
  all_some (map (fun i => f (unravel s i)) (seq 0 (prod s))).

Definition zipw {A B C : Type} (f : A -> B -> C) (l1 : list A) (l2 : list B) : list C :=
  map (fun p => f (fst p) (snd p)) (combine l1 l2).

Definition zipw3 {A B C D : Type} (f : A -> B -> C -> D)
           (l1 : list A) (l2 : list B) (l3 : list C) : list D :=
  map (fun p => f (fst (fst p)) (snd (fst p)) (snd p)) (combine (combine l1 l2) l3).

(** ** Broadcasting of data (§4.5 / §5)
    An index of the target shape [tgt] is mapped to an index of the source
    shape [src]: leading target coordinates beyond the source rank are
    dropped (right alignment), and a source dimension of 1 is read at
    coordinate 0 (it stretches). *)
Definition bidx (src idx : list nat) : list nat :=
  map (fun p => if Nat.eqb (fst p) 1 then 0 else snd p)
      (combine src (skipn (length idx - length src) idx)).

Section Prims.
Context {V : Type} (P : prims V).

Definition expand (src tgt : list nat) (data : list V) : option (list V) :=
  tabulate_opt tgt (fun idx => nth_error data (ravel src (bidx src idx))).

(** ** Reshape (§4.12): defined iff the element counts agree; data unchanged. *)
Definition reshape_val (s' : list nat) (t : tensor V) : option (tensor V) :=
  if Nat.eqb (prod s') (prod (t_shape t))
  then Some (mkT (t_dtype t) s' (t_device t) (t_data t))
  else None.

(** ** Transpose (§4.11): swaps the last two dimensions. *)
Definition swap_last2 (idx : list nat) : list nat :=
  match rev idx with
  | j :: i :: r => rev r ++ [j; i]
  | _ => idx
  end.

Definition transpose_data (pre : list nat) (x y : nat) (data : list V) : option (list V) :=
  tabulate_opt (pre ++ [y; x])
               (fun idx => nth_error data (ravel (pre ++ [x; y]) (swap_last2 idx))).

(** ** Matmul (§4.10): [pa ++ [m;k]] times [pb ++ [k;n]]; the batch shapes
    broadcast ([rbcast pa pb = Some pc], as elementwise operands do) and each
    operand's batch index is the result's, mapped by [bidx]. *)
Definition matmul_data (pa pb pc : list nat) (m k n : nat) (d1 d2 : list V)
  : option (list V) :=
  tabulate_opt (pc ++ [m; n]) (fun idx =>
    let b := firstn (length pc) idx in
    let i := nth (length pc) idx 0 in
    let j := nth (S (length pc)) idx 0 in
    match all_some (map (fun kk =>
        match nth_error d1 (ravel (pa ++ [m; k]) (bidx pa b ++ [i; kk])),
              nth_error d2 (ravel (pb ++ [k; n]) (bidx pb b ++ [kk; j])) with
        | Some x, Some y => Some (p_mul P x y)
        | _, _ => None
        end) (seq 0 k)) with
    | Some prods => Some (fold_left (p_add P) prods (p_zero P))
    | None => None
    end).

(** ** Reductions (§4.16) *)
Fixpoint reduced_dims (axs : list nat) (i : nat) (s : list nat) : list nat :=
  match s with
  | [] => []
  | d :: s' => if existsb (Nat.eqb i) axs then d :: reduced_dims axs (S i) s'
               else reduced_dims axs (S i) s'
  end.

(** Rebuild a full index from an output index [oidx] and an index [ridx]
    into the reduced dimensions. *)
Fixpoint merge_idx (axs : list nat) (kd : bool) (i : nat) (s oidx ridx : list nat)
  : list nat :=
  match s with
  | [] => []
  | _ :: s' =>
      if existsb (Nat.eqb i) axs
      then hd 0 ridx :: merge_idx axs kd (S i) s' (if kd then tl oidx else oidx) (tl ridx)
      else hd 0 oidx :: merge_idx axs kd (S i) s' (tl oidx) ridx
  end.

Definition reduce_data (op : redop) (axs : list nat) (kd : bool) (s : list nat)
           (data : list V) : option (list V) :=
  let sub := reduced_dims axs 0 s in
  tabulate_opt (reduce_dims 1 axs kd 0 s) (fun oidx =>
    match all_some (map (fun r =>
        nth_error data (ravel s (merge_idx axs kd 0 s oidx (unravel sub r))))
        (seq 0 (prod sub))) with
    | Some xs => Some (p_red_fin P op (prod sub)
                          (fold_left (p_red_step P op) xs (p_red_init P op)))
    | None => None
    end).

(** ** Checked reads at an integer multi-index
    A read outside the shape, on any axis (a negative coordinate included),
    is [None]: evaluation gets stuck. *)
Fixpoint in_bounds_z (idx : list Z) (s : list nat) : bool :=
  match idx, s with
  | [], [] => true
  | i :: idx', d :: s' => (0 <=? i)%Z && (i <? Z.of_nat d)%Z && in_bounds_z idx' s'
  | _, _ => false
  end.

Definition read_at (s : list nat) (data : list V) (idx : list Z) : option V :=
  if in_bounds_z idx s then nth_error data (ravel s (map Z.to_nat idx)) else None.

(** ** Slice (§4.15): along axis [k], [sz] elements from [st]. *)
Definition slice_data (s : list nat) (k : nat) (st : Z) (sz : nat) (data : list V)
  : option (list V) :=
  tabulate_opt (replace_at k sz s) (fun idx =>
    read_at s data (replace_at k (Z.of_nat (nth k idx 0%nat) + st)%Z (map Z.of_nat idx))).

(** ** Concat (§4.14) of two operands along axis [k]. *)
Definition concat_data (s1 s2 : list nat) (k : nat) (d1 d2 : list V) : option (list V) :=
  let n1 := nth k s1 0 in
  let n2 := nth k s2 0 in
  tabulate_opt (replace_at k (n1 + n2) s1) (fun idx =>
    let j := nth k idx 0 in
    if j <? n1 then read_at s1 d1 (map Z.of_nat idx)
    else read_at s2 d2 (map Z.of_nat (replace_at k (j - n1) idx))).

(** ** Broadcast_to (§4.13): the source read through [bidx]. *)
Definition bto_data (src tgt : list nat) (data : list V) : option (list V) :=
  tabulate_opt tgt (fun idx => read_at src data (map Z.of_nat (bidx src idx))).

(** ** Permute (§4.11): result dimension [i] is source dimension [p_i]. *)
Fixpoint index_of (j : nat) (p : list nat) : nat :=
  match p with
  | [] => 0
  | x :: p' => if Nat.eqb x j then 0 else S (index_of j p')
  end.

Definition perm_src (p idx : list nat) : list nat :=
  map (fun j => nth (index_of j p) idx 0) (seq 0 (length p)).

Definition permute_data (s p : list nat) (data : list V) : option (list V) :=
  tabulate_opt (map (fun i => nth i s 0) p)
               (fun idx => read_at s data (map Z.of_nat (perm_src p idx))).

(** ** Softmax (§4.21) along axis [k]
    The spec's formula (§5): with [m] the row's maximum ([reduce_max]) and
    [z] the sum of [exp (x_r - m)] over the row ([reduce_sum]),
    softmax gives [exp (x_i - m) / z] and log_softmax [(x_i - m) - log z].
    Every scalar operation is a primitive the other operations use: the
    fold and finish of [RMax] and [RSum], [UExp], [ULog], [BSub], [BDiv].
    [xs] is the row (its [d] elements in order), [x] the element itself. *)
Definition softmax_val (op : smop) (d : nat) (xs : list V) (x : V) : V :=
  let m := p_red_fin P RMax d (fold_left (p_red_step P RMax) xs (p_red_init P RMax)) in
  let ex := fun y => p_unary P UExp (p_binary P BSub y m) in
  let z := p_red_fin P RSum d (fold_left (p_red_step P RSum) (map ex xs) (p_red_init P RSum)) in
  match op with
  | SSoftmax => p_binary P BDiv (ex x) z
  | SLogSoftmax => p_binary P BSub (p_binary P BSub x m) (p_unary P ULog z)
  end.

(** The result has the operand's shape; at [idx] the row is read at
    [replace_at k r idx] for [r < nth k s 0], and the element at [idx]. *)
Definition softmax_data (op : smop) (k : nat) (s : list nat) (data : list V)
  : option (list V) :=
  tabulate_opt s (fun idx =>
    match all_some (map (fun r => nth_error data (ravel s (replace_at k r idx)))
                        (seq 0 (nth k s 0))),
          nth_error data (ravel s idx) with
    | Some xs, Some x => Some (softmax_val op (nth k s 0) xs x)
    | _, _ => None
    end).

(** ** Environments and evaluation *)
Definition env := list (var * tensor V).

(** [eval rho E e t]: under the valuation [rho] of the shape variables and
    the environment [E], [e] evaluates to [t].  Run-time checks (dtype,
    device, broadcast compatibility, element counts) make ill-typed
    programs stuck; the soundness theorems show well-typed ones never are. *)
Inductive eval : valuation -> env -> expr -> tensor V -> Prop :=
| E_Var : forall rho E x t,
    lookup x E = Some t ->
    eval rho E (EVar x) t
| E_Let : forall rho E x e1 e2 t1 t2,
    eval rho E e1 t1 ->
    eval rho ((x, t1) :: E) e2 t2 ->
    eval rho E (ELet x e1 e2) t2
| E_LetAsc : forall rho E x ty e1 e2 t1 t2,
    eval rho E e1 t1 ->
    eval rho ((x, t1) :: E) e2 t2 ->
    eval rho E (ELetAsc x ty e1 e2) t2
| E_Unary : forall rho E op e t,
    eval rho E e t ->
    unop_ok op (t_dtype t) = true ->
    eval rho E (EUnary op e)
         (mkT (t_dtype t) (t_shape t) (t_device t) (map (p_unary P op) (t_data t)))
| E_Binary : forall rho E op e1 e2 t1 t2 s d1 d2,
    eval rho E e1 t1 ->
    eval rho E e2 t2 ->
    t_dtype t1 = t_dtype t2 ->
    binop_ok op (t_dtype t1) = true ->
    t_device t1 = t_device t2 ->
    rbcast (t_shape t1) (t_shape t2) = Some s ->
    expand (t_shape t1) s (t_data t1) = Some d1 ->
    expand (t_shape t2) s (t_data t2) = Some d2 ->
    eval rho E (EBinary op e1 e2)
         (mkT (t_dtype t1) s (t_device t1) (zipw (p_binary P op) d1 d2))
| E_Compare : forall rho E op e1 e2 t1 t2 s d1 d2,
    eval rho E e1 t1 ->
    eval rho E e2 t2 ->
    t_dtype t1 = t_dtype t2 ->
    t_device t1 = t_device t2 ->
    rbcast (t_shape t1) (t_shape t2) = Some s ->
    expand (t_shape t1) s (t_data t1) = Some d1 ->
    expand (t_shape t2) s (t_data t2) = Some d2 ->
    eval rho E (ECompare op e1 e2)
         (mkT DBool s (t_device t1) (zipw (p_compare P op) d1 d2))
| E_Select : forall rho E c a b tc ta tb s1 s dc da db,
    eval rho E c tc ->
    eval rho E a ta ->
    eval rho E b tb ->
    t_dtype tc = DBool ->
    t_dtype ta = t_dtype tb ->
    t_device tc = t_device ta ->
    t_device ta = t_device tb ->
    rbcast (t_shape tc) (t_shape ta) = Some s1 ->
    rbcast s1 (t_shape tb) = Some s ->
    expand (t_shape tc) s (t_data tc) = Some dc ->
    expand (t_shape ta) s (t_data ta) = Some da ->
    expand (t_shape tb) s (t_data tb) = Some db ->
    eval rho E (ESelect c a b)
         (mkT (t_dtype ta) s (t_device ta) (zipw3 (p_select P) dc da db))
| E_Cast : forall rho E e dt t,
    eval rho E e t ->
    eval rho E (ECast e dt)
         (mkT dt (t_shape t) (t_device t) (map (p_cast P (t_dtype t) dt) (t_data t)))
| E_Reshape : forall rho E e ds t t',
    eval rho E e t ->
    reshape_val (shape_at rho ds) t = Some t' ->
    eval rho E (EReshape e ds) t'
| E_Transpose : forall rho E e t pre x y d,
    eval rho E e t ->
    t_shape t = pre ++ [x; y] ->
    transpose_data pre x y (t_data t) = Some d ->
    eval rho E (ETranspose e) (mkT (t_dtype t) (pre ++ [y; x]) (t_device t) d)
| E_Matmul : forall rho E e1 e2 t1 t2 pa pb pc m k n d,
    eval rho E e1 t1 ->
    eval rho E e2 t2 ->
    t_shape t1 = pa ++ [m; k] ->
    t_shape t2 = pb ++ [k; n] ->
    rbcast pa pb = Some pc ->
    t_dtype t1 = t_dtype t2 ->
    is_numeric (t_dtype t1) = true ->
    t_device t1 = t_device t2 ->
    matmul_data pa pb pc m k n (t_data t1) (t_data t2) = Some d ->
    eval rho E (EMatmul e1 e2) (mkT (t_dtype t1) (pc ++ [m; n]) (t_device t1) d)
| E_Reduce : forall rho E op axes kd e t axs d,
    eval rho E e t ->
    redop_ok op (t_dtype t) = true ->
    resolve_axes (length (t_shape t)) axes = Some axs ->
    NoDup axs ->
    reduce_data op axs kd (t_shape t) (t_data t) = Some d ->
    eval rho E (EReduce op axes kd e)
         (mkT (t_dtype t) (reduce_dims 1 axs kd 0 (t_shape t)) (t_device t) d)
| E_CopyToDevice : forall rho E e n t,
    eval rho E e t ->
    eval rho E (ECopyToDevice e n) (mkT (t_dtype t) (t_shape t) (Cuda n) (t_data t))
| E_CopyToHost : forall rho E e t,
    eval rho E e t ->
    eval rho E (ECopyToHost e) (mkT (t_dtype t) (t_shape t) Host (t_data t))
| E_Slice : forall rho E e a st sz t k d,
    eval rho E e t ->
    resolve_axis (length (t_shape t)) a = Some k ->
    slice_data (t_shape t) k (eval_dim rho st) (Z.to_nat (eval_dim rho sz)) (t_data t) = Some d ->
    eval rho E (ESlice e a st sz)
         (mkT (t_dtype t) (replace_at k (Z.to_nat (eval_dim rho sz)) (t_shape t)) (t_device t) d)
| E_Concat : forall rho E e1 e2 a t1 t2 k d,
    eval rho E e1 t1 ->
    eval rho E e2 t2 ->
    t_dtype t1 = t_dtype t2 ->
    t_device t1 = t_device t2 ->
    length (t_shape t1) = length (t_shape t2) ->
    resolve_axis (length (t_shape t1)) a = Some k ->
    firstn k (t_shape t1) = firstn k (t_shape t2) ->
    skipn (S k) (t_shape t1) = skipn (S k) (t_shape t2) ->
    concat_data (t_shape t1) (t_shape t2) k (t_data t1) (t_data t2) = Some d ->
    eval rho E (EConcat e1 e2 a)
         (mkT (t_dtype t1) (replace_at k (nth k (t_shape t1) 0 + nth k (t_shape t2) 0) (t_shape t1))
              (t_device t1) d)
| E_BroadcastTo : forall rho E e ds t d,
    eval rho E e t ->
    bto_data (t_shape t) (shape_at rho ds) (t_data t) = Some d ->
    eval rho E (EBroadcastTo e ds) (mkT (t_dtype t) (shape_at rho ds) (t_device t) d)
| E_Permute : forall rho E e p t d,
    eval rho E e t ->
    Permutation p (seq 0 (length (t_shape t))) ->
    permute_data (t_shape t) p (t_data t) = Some d ->
    eval rho E (EPermute e p)
         (mkT (t_dtype t) (map (fun i => nth i (t_shape t) 0) p) (t_device t) d)
| E_Const : forall rho E n dt dev,
    eval rho E (EConst n dt dev) (mkT dt [] dev [p_num P dt n])
| E_Fill : forall rho E n dt ds dev,
    eval rho E (EFill n (TTensor dt ds dev))
         (mkT dt (shape_at rho ds) dev (repeat (p_num P dt n) (prod (shape_at rho ds))))
| E_Iota : forall rho E dt ds dev k,
    k < length ds ->
    eval rho E (EIota (TTensor dt ds dev) k)
         (mkT dt (shape_at rho ds) dev
              (tabulate (shape_at rho ds) (fun idx => p_of_nat P dt (nth k idx 0))))
| E_BinaryNumR : forall rho E op e1 n t1,
    eval rho E e1 t1 ->
    binop_ok op (t_dtype t1) = true ->
    eval rho E (EBinary op e1 (ENum n))
         (mkT (t_dtype t1) (t_shape t1) (t_device t1)
              (map (fun x => p_binary P op x (p_num P (t_dtype t1) n)) (t_data t1)))
| E_BinaryNumL : forall rho E op n e2 t2,
    eval rho E e2 t2 ->
    binop_ok op (t_dtype t2) = true ->
    eval rho E (EBinary op (ENum n) e2)
         (mkT (t_dtype t2) (t_shape t2) (t_device t2)
              (map (fun x => p_binary P op (p_num P (t_dtype t2) n) x) (t_data t2)))
| E_Softmax : forall rho E op a e t k d,
    eval rho E e t ->
    is_floating (t_dtype t) = true ->
    resolve_axis (length (t_shape t)) a = Some k ->
    softmax_data op k (t_shape t) (t_data t) = Some d ->
    eval rho E (ESoftmax op a e) (mkT (t_dtype t) (t_shape t) (t_device t) d)
(* §4.18 / §5.1: the body runs with the parameters bound to the arguments'
   values, under the callee's valuation ρ ∘ σ (which must be positive). *)
| E_Call : forall rho E f dims wh params ret body sub args ts t,
    all_some (map (fun x => lookup x E) args) = Some ts ->
    length ts = length params ->
    Forall (fun p => 1 <= eval_dim rho (snd p))%Z sub ->
    eval (compose rho (sub_of sub)) (combine (map fst params) ts) body t ->
    eval rho E (ECall f dims wh params ret body sub args) t.

End Prims.

(** ** Typing of values and environments *)

(** A tensor has type [T(dt, ds, dev)] under [rho] when its dtype and device
    are [dt] and [dev], its concrete shape is the evaluation of [ds], and it
    holds exactly [prod shape] elements. *)
Definition val_has_type {V : Type} (rho : valuation) (t : tensor V) (ty : ty) : Prop :=
  match ty with
  | TTensor dt ds dev =>
      t_dtype t = dt /\ t_device t = dev /\
      map Z.of_nat (t_shape t) = eval_shape rho ds /\
      length (t_data t) = prod (t_shape t)
  end.

Definition env_ok {V : Type} (rho : valuation) (G : ctx) (E : list (var * tensor V)) : Prop :=
  forall x ty, lookup x G = Some ty ->
    exists t, lookup x E = Some t /\ val_has_type rho t ty.

(** ** Sanity checks of the data semantics, on [nat] elements *)
Definition nat_prims : prims nat :=
  mk_prims nat (fun _ x => x) (fun _ => Nat.add) (fun _ x y => if Nat.eqb x y then 1 else 0)
           (fun c a b => if Nat.eqb c 0 then b else a) (fun _ _ x => x)
           0 Nat.add Nat.mul (fun _ => 0) (fun _ => Nat.add) (fun _ _ x => x)
           (fun _ n => match n with NInt z => Z.to_nat z | NReal _ => 0 end) (fun _ i => i).

Example expand_row : @expand nat [1; 3] [2; 3] [10; 11; 12] = Some [10; 11; 12; 10; 11; 12].
Proof. reflexivity. Qed.

Example expand_col : @expand nat [2; 1] [2; 3] [10; 20] = Some [10; 10; 10; 20; 20; 20].
Proof. reflexivity. Qed.

Example expand_lower_rank : @expand nat [3] [2; 3] [1; 2; 3] = Some [1; 2; 3; 1; 2; 3].
Proof. reflexivity. Qed.

Example expand_scalar : @expand nat [] [2; 2] [7] = Some [7; 7; 7; 7].
Proof. reflexivity. Qed.

Example transpose_2x3 :
  @transpose_data nat [] 2 3 [1; 2; 3; 4; 5; 6] = Some [1; 4; 2; 5; 3; 6].
Proof. reflexivity. Qed.

Example matmul_2x2 :
  matmul_data nat_prims [] [] [] 2 2 2 [1; 2; 3; 4] [5; 6; 7; 8] = Some [19; 22; 43; 50].
Proof. reflexivity. Qed.

(** A [1 x 2] left operand against a batch of two [2 x 1] right operands:
    the left one is read for both batches (§4.10 batch broadcasting). *)
Example matmul_batch_broadcast :
  matmul_data nat_prims [] [2] [2] 1 2 1 [1; 2] [3; 4; 5; 6] = Some [11; 17].
Proof. reflexivity. Qed.

Example reduce_rows :
  reduce_data nat_prims RSum [1] false [2; 3] [1; 2; 3; 4; 5; 6] = Some [6; 15].
Proof. reflexivity. Qed.

Example reduce_cols_keepdims :
  reduce_data nat_prims RSum [0] true [2; 3] [1; 2; 3; 4; 5; 6] = Some [5; 7; 9].
Proof. reflexivity. Qed.

(** Softmax reads its rows along the axis.  In [nat_prims] every binary
    operation and every reduction step is [+] and [exp] is the identity,
    so the element is [x_i + m + z] with [m] the row's sum and [z] the sum
    of [x_r + m]: row [1 2] gives [m = 3], [z = 9], [13 14]. *)
Example softmax_rows :
  softmax_data nat_prims SSoftmax 1 [2; 2] [1; 2; 3; 4] = Some [13; 14; 31; 32].
Proof. reflexivity. Qed.

(** Along axis 0 the rows are the columns [1 3] and [2 4]. *)
Example softmax_cols :
  softmax_data nat_prims SSoftmax 0 [2; 2] [1; 2; 3; 4] = Some [17; 26; 19; 28].
Proof. reflexivity. Qed.

Example broadcast_add :
  eval nat_prims (fun _ => 1%positive)
       [("x"%string, mkT DF32 [2; 1] Host [10; 20]);
        ("y"%string, mkT DF32 [3] Host [1; 2; 3])]
       (EBinary BAdd (EVar "x"%string) (EVar "y"%string))
       (mkT DF32 [2; 3] Host [11; 12; 13; 21; 22; 23]).
Proof.
  apply (E_Binary nat_prims _ _ BAdd _ _ (mkT DF32 [2; 1] Host [10; 20])
                  (mkT DF32 [3] Host [1; 2; 3]) [2; 3] [10; 10; 10; 20; 20; 20] [1; 2; 3; 1; 2; 3]);
    try reflexivity; constructor; reflexivity.
Qed.
