(** * Assumptions.v — run by check.sh (not part of the build)

    One [Print Assumptions] per theorem, lemma and example of the proven
    files; each must print "Closed under the global context".  check.sh
    fails if a theorem of a proven file is missing from this list.
    Stated.v is deliberately not imported. *)

From ShapeML Require Syntax Broadcast Typing Semantics Reshape Soundness.

(* Syntax.v *)
Print Assumptions ShapeML.Syntax.norm_floordiv_mul_sound.
Print Assumptions ShapeML.Syntax.norm_mod_mul_sound.
Print Assumptions ShapeML.Syntax.eval_var_pos.
Print Assumptions ShapeML.Syntax.prodZ_of_nat.
Print Assumptions ShapeML.Syntax.reduce_dims_map.

(* Broadcast.v *)
Print Assumptions ShapeML.Broadcast.bdim_function.
Print Assumptions ShapeML.Broadcast.bdim_deterministic.
Print Assumptions ShapeML.Broadcast.bshape_rev_function.
Print Assumptions ShapeML.Broadcast.bshape_function.
Print Assumptions ShapeML.Broadcast.bshape_deterministic.
Print Assumptions ShapeML.Broadcast.bdim_complete.
Print Assumptions ShapeML.Broadcast.bdim_sound_obl.
Print Assumptions ShapeML.Broadcast.bshape_rev_complete.
Print Assumptions ShapeML.Broadcast.bshape_rev_obl.
Print Assumptions ShapeML.Broadcast.bshape_iff_obligations.
Print Assumptions ShapeML.Broadcast.map_of_nat_nil.
Print Assumptions ShapeML.Broadcast.bshape_rev_runtime.
Print Assumptions ShapeML.Broadcast.bshape_runtime.

(* Semantics.v *)
Print Assumptions ShapeML.Semantics.expand_row.
Print Assumptions ShapeML.Semantics.expand_col.
Print Assumptions ShapeML.Semantics.expand_lower_rank.
Print Assumptions ShapeML.Semantics.expand_scalar.
Print Assumptions ShapeML.Semantics.transpose_2x3.
Print Assumptions ShapeML.Semantics.matmul_2x2.
Print Assumptions ShapeML.Semantics.matmul_batch_broadcast.
Print Assumptions ShapeML.Semantics.reduce_rows.
Print Assumptions ShapeML.Semantics.reduce_cols_keepdims.
Print Assumptions ShapeML.Semantics.broadcast_add.

(* Reshape.v *)
Print Assumptions ShapeML.Reshape.shape_at_of_nat.
Print Assumptions ShapeML.Reshape.wf_ty_nonneg.
Print Assumptions ShapeML.Reshape.reshape_obligation_sound.
Print Assumptions ShapeML.Reshape.reshape_obligation_sound_wf.
Print Assumptions ShapeML.Reshape.reshape_obligation_necessary.

(* Soundness.v *)
Print Assumptions ShapeML.Soundness.tabulate_length.
Print Assumptions ShapeML.Soundness.zipw_length.
Print Assumptions ShapeML.Soundness.zipw3_length.
Print Assumptions ShapeML.Soundness.app_last2_inj.
Print Assumptions ShapeML.Soundness.env_ok_cons.
Print Assumptions ShapeML.Soundness.env_ok_nil.
Print Assumptions ShapeML.Soundness.sub_sound.
Print Assumptions ShapeML.Soundness.expand_length.
Print Assumptions ShapeML.Soundness.split_shape_last2.
Print Assumptions ShapeML.Soundness.transpose_sound.
Print Assumptions ShapeML.Soundness.matmul_sound.
Print Assumptions ShapeML.Soundness.reduce_sound.
Print Assumptions ShapeML.Soundness.type_soundness_mut.
Print Assumptions ShapeML.Soundness.type_soundness.
Print Assumptions ShapeML.Soundness.type_soundness_check.
Print Assumptions ShapeML.Soundness.type_soundness_closed.
Print Assumptions ShapeML.Soundness.progress.
Print Assumptions ShapeML.Soundness.eval_deterministic.
Print Assumptions ShapeML.Soundness.preservation.
Print Assumptions ShapeML.Soundness.preservation_check.
Print Assumptions ShapeML.Soundness.type_soundness_core.
Print Assumptions ShapeML.Soundness.preservation_core.
Print Assumptions ShapeML.Soundness.preservation_matmul.
Print Assumptions ShapeML.Soundness.preservation_transpose.
Print Assumptions ShapeML.Soundness.preservation_reduce.
