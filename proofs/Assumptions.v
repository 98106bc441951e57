(** * Assumptions.v — run by check.sh (not part of the build)

    One [Print Assumptions] per theorem, lemma and example of the proven
    files; each must print "Closed under the global context".  check.sh
    fails if a theorem of a proven file is missing from this list.
    Stated.v is deliberately not imported. *)

From ShapeML Require Syntax Normalize Solver Broadcast Typing Semantics Bounds Reshape Constructs Soundness Where Necessity Generic.

(* Syntax.v *)
Print Assumptions ShapeML.Syntax.norm_floordiv_mul_sound.
Print Assumptions ShapeML.Syntax.norm_mod_mul_sound.
Print Assumptions ShapeML.Syntax.eval_var_pos.
Print Assumptions ShapeML.Syntax.prodZ_of_nat.
Print Assumptions ShapeML.Syntax.reduce_dims_map.
Print Assumptions ShapeML.Syntax.replace_at_app.
Print Assumptions ShapeML.Syntax.map_replace_at.
Print Assumptions ShapeML.Syntax.subst_eval.
Print Assumptions ShapeML.Syntax.subst_eval_shape.
Print Assumptions ShapeML.Syntax.subst_cstr_holds.
Print Assumptions ShapeML.Syntax.sub_of_pos.

(* Normalize.v *)
Print Assumptions ShapeML.Normalize.norm_comm.
Print Assumptions ShapeML.Normalize.norm_mul_comm.
Print Assumptions ShapeML.Normalize.norm_floordiv_exact.
Print Assumptions ShapeML.Normalize.norm_cancel.
Print Assumptions ShapeML.Normalize.norm_one.
Print Assumptions ShapeML.Normalize.eval_mono_dim.
Print Assumptions ShapeML.Normalize.constant_of_spec.
Print Assumptions ShapeML.Normalize.eval_to_dim.
Print Assumptions ShapeML.Normalize.eval_const.
Print Assumptions ShapeML.Normalize.eval_add_term.
Print Assumptions ShapeML.Normalize.eval_padd.
Print Assumptions ShapeML.Normalize.eval_pneg.
Print Assumptions ShapeML.Normalize.eval_psub.
Print Assumptions ShapeML.Normalize.eval_mono_app.
Print Assumptions ShapeML.Normalize.eval_mono_perm.
Print Assumptions ShapeML.Normalize.insert_atom_perm.
Print Assumptions ShapeML.Normalize.sort_mono_perm.
Print Assumptions ShapeML.Normalize.eval_pmul.
Print Assumptions ShapeML.Normalize.eval_div_coeffs.
Print Assumptions ShapeML.Normalize.eval_pfloordiv.
Print Assumptions ShapeML.Normalize.eval_pmod.
Print Assumptions ShapeML.Normalize.eval_poly_of.
Print Assumptions ShapeML.Normalize.norm_sound.

(* Solver.v *)
Print Assumptions ShapeML.Solver.eval_mono_vars_pos.
Print Assumptions ShapeML.Solver.nonneg_sound.
Print Assumptions ShapeML.Solver.eval_diff.
Print Assumptions ShapeML.Solver.remove_one_perm.
Print Assumptions ShapeML.Solver.remove_atoms_perm.
Print Assumptions ShapeML.Solver.divides_mono_sound.
Print Assumptions ShapeML.Solver.decide_syn_sound.
Print Assumptions ShapeML.Solver.subst_eval_agree.
Print Assumptions ShapeML.Solver.definition_rewrite_sound.
Print Assumptions ShapeML.Solver.where_definition_sound.
Print Assumptions ShapeML.Solver.eval_agree.
Print Assumptions ShapeML.Solver.witness_rewrite_sound.
Print Assumptions ShapeML.Solver.decide_ge.
Print Assumptions ShapeML.Solver.decide_reshape_by_definition.
Print Assumptions ShapeML.Solver.decide_by_witness.
Print Assumptions ShapeML.Solver.decide_divides_monomial.

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
Print Assumptions ShapeML.Broadcast.bshape_n_runtime.
Print Assumptions ShapeML.Broadcast.norm_dim_ok.
Print Assumptions ShapeML.Broadcast.bshape_runtime.

(* Typing.v *)
Print Assumptions ShapeML.Typing.bto_minus_one_is_one.
Print Assumptions ShapeML.Typing.call_of_an_undeclared_dimension_is_untyped.

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

(* Bounds.v *)
Print Assumptions ShapeML.Bounds.unravel_in_bounds.
Print Assumptions ShapeML.Bounds.ravel_in_bounds.
Print Assumptions ShapeML.Bounds.in_bounds_app_inv.
Print Assumptions ShapeML.Bounds.in_bounds_app.
Print Assumptions ShapeML.Bounds.Forall2_len.
Print Assumptions ShapeML.Bounds.in_bounds_length.
Print Assumptions ShapeML.Bounds.bidx_in_bounds_aligned.
Print Assumptions ShapeML.Bounds.bidx_in_bounds.
Print Assumptions ShapeML.Bounds.expand_read_in_bounds.
Print Assumptions ShapeML.Bounds.Forall2_rev.
Print Assumptions ShapeML.Bounds.rbcast_rev_into.
Print Assumptions ShapeML.Bounds.rbcast_into.
Print Assumptions ShapeML.Bounds.bcast_into_trans.
Print Assumptions ShapeML.Bounds.expand_reads_in_bounds.
Print Assumptions ShapeML.Bounds.select_reads_in_bounds.
Print Assumptions ShapeML.Bounds.all_some_map.
Print Assumptions ShapeML.Bounds.tabulate_opt_some.
Print Assumptions ShapeML.Bounds.nth_error_lt.
Print Assumptions ShapeML.Bounds.expand_some.
Print Assumptions ShapeML.Bounds.swap_last2_app.
Print Assumptions ShapeML.Bounds.transpose_some.
Print Assumptions ShapeML.Bounds.firstn_nth_app2.
Print Assumptions ShapeML.Bounds.in_bounds_last2.
Print Assumptions ShapeML.Bounds.matmul_some.
Print Assumptions ShapeML.Bounds.existsb_eqb_In.
Print Assumptions ShapeML.Bounds.merge_idx_in_bounds.
Print Assumptions ShapeML.Bounds.reduce_some.

(* Reshape.v *)
Print Assumptions ShapeML.Reshape.shape_at_of_nat.
Print Assumptions ShapeML.Reshape.wf_ty_nonneg.
Print Assumptions ShapeML.Reshape.reshape_obligation_sound.
Print Assumptions ShapeML.Reshape.reshape_obligation_sound_wf.
Print Assumptions ShapeML.Reshape.reshape_obligation_necessary.

(* Constructs.v *)
Print Assumptions ShapeML.Constructs.in_bounds_z_of_nat.
Print Assumptions ShapeML.Constructs.map_to_nat_of_nat.
Print Assumptions ShapeML.Constructs.read_at_some.
Print Assumptions ShapeML.Constructs.in_bounds_mid_inv.
Print Assumptions ShapeML.Constructs.in_bounds_mid.
Print Assumptions ShapeML.Constructs.split_typed_shape.
Print Assumptions ShapeML.Constructs.of_nat_inj_list.
Print Assumptions ShapeML.Constructs.obl_eval_eq.
Print Assumptions ShapeML.Constructs.slice_sound.
Print Assumptions ShapeML.Constructs.firstn_mid.
Print Assumptions ShapeML.Constructs.skipn_mid.
Print Assumptions ShapeML.Constructs.nth_mid.
Print Assumptions ShapeML.Constructs.replace_mid.
Print Assumptions ShapeML.Constructs.concat_sound.
Print Assumptions ShapeML.Constructs.broadcast_to_sound.
Print Assumptions ShapeML.Constructs.in_bounds_nth.
Print Assumptions ShapeML.Constructs.in_bounds_nth_inv.
Print Assumptions ShapeML.Constructs.index_of_spec.
Print Assumptions ShapeML.Constructs.permute_sound.
Print Assumptions ShapeML.Constructs.fill_sound.
Print Assumptions ShapeML.Constructs.iota_sound.

(* Soundness.v *)
Print Assumptions ShapeML.Soundness.tabulate_length.
Print Assumptions ShapeML.Soundness.zipw_length.
Print Assumptions ShapeML.Soundness.zipw3_length.
Print Assumptions ShapeML.Soundness.app_last2_inj.
Print Assumptions ShapeML.Soundness.env_ok_cons.
Print Assumptions ShapeML.Soundness.env_ok_nil.
Print Assumptions ShapeML.Soundness.sub_sound.
Print Assumptions ShapeML.Soundness.split_shape_last2.
Print Assumptions ShapeML.Soundness.transpose_sound.
Print Assumptions ShapeML.Soundness.matmul_sound.
Print Assumptions ShapeML.Soundness.reduce_sound.
Print Assumptions ShapeML.Soundness.val_has_type_subst.
Print Assumptions ShapeML.Soundness.args_sound.
Print Assumptions ShapeML.Soundness.env_of_args.
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
Print Assumptions ShapeML.Soundness.call_sound.
Print Assumptions ShapeML.Soundness.preservation_matmul.
Print Assumptions ShapeML.Soundness.preservation_transpose.
Print Assumptions ShapeML.Soundness.preservation_reduce.

(* Where.v *)
Print Assumptions ShapeML.Where.eval_dim_b_val.
Print Assumptions ShapeML.Where.eval_dim_val_of.
Print Assumptions ShapeML.Where.rt_check_cstr_iff.
Print Assumptions ShapeML.Where.rt_check_sound.
Print Assumptions ShapeML.Where.rt_check_complete.
Print Assumptions ShapeML.Where.smt_discharges.
Print Assumptions ShapeML.Where.smt_discharges_dim_eq.
Print Assumptions ShapeML.Where.smt_mod_agrees.
Print Assumptions ShapeML.Where.dumped_enc_contract.
Print Assumptions ShapeML.Where.runtime_checked_sound.

(* Necessity.v *)
Print Assumptions ShapeML.Necessity.reshape_obligation_needed.
Print Assumptions ShapeML.Necessity.broadcast_obligation_needed.
Print Assumptions ShapeML.Necessity.ex_typed.
Print Assumptions ShapeML.Necessity.example_sound.
Print Assumptions ShapeML.Necessity.example_runs.
Print Assumptions ShapeML.Necessity.unravel_ravel.
Print Assumptions ShapeML.Necessity.all_some_none.
Print Assumptions ShapeML.Necessity.tabulate_opt_none.
Print Assumptions ShapeML.Necessity.in_bounds_z_mid.
Print Assumptions ShapeML.Necessity.in_bounds_zeros.
Print Assumptions ShapeML.Necessity.slice_obligation_needed.

(* Generic.v *)
Print Assumptions ShapeML.Generic.lookup_inst.
Print Assumptions ShapeML.Generic.inst_in_may.
Print Assumptions ShapeML.Generic.forallb_inst.
Print Assumptions ShapeML.Generic.gsynth_instances.
Print Assumptions ShapeML.Generic.class_needs_every_member.
