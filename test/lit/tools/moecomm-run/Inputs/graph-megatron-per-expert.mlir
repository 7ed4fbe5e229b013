// A Megatron-style MoE layer (Megatron-Core's all-to-all token dispatcher:
// permute, the exchange of num_local_tokens_per_expert, the ragged
// all-to-all to the experts' ranks, sort_chunks_by_idxs, the experts,
// sort_chunks_by_idxs back, the ragged all-to-all home, unpermute with the
// routing weights), written with moecomm's framework-level ops in the form
// moecomm-raise-dispatch recognises. W = 4 ranks (2 per node), E = 8
// experts (L = 2 per rank), K = 4, H = 16, bf16 rows, identity experts.
// Every entry takes moecomm-run's graph contract (docs/moecomm-run.md,
// "Graphs") and returns `out` only: its exchanges are moecomm.all_to_all,
// and the weights of the received rows never travel (Megatron applies them
// at unpermute, at home), so moecomm-run checks the combine bit for bit,
// the drops and the all_to_all bytes against the lower bound
// (megatron-per-expert.test).
//
// Entries:
// - @moe_layer: the exchange with expert-major experts (sort_chunks before
//   them, unsort_chunks after), as Megatron runs its grouped GEMM.
// - @moe_layer_rowwise: without the regrouping: the identity experts work
//   on the received rows as they arrive (by source rank), which are sent
//   back as they are.
// - @training_step: @moe_layer's forward (inline, values prefixed f_), then
//   the backward on the output gradient (moecomm-run's training contract:
//   grad_out in, grad_x out): each row sent is grad_out's row times its
//   routing weight (permute_tokens with weights), the identity experts'
//   backward copies their segments, and the rows come home summed without
//   weights. The backward recomputes its permutation and counts (as
//   Megatron-Core does under MoE activation recomputation) rather than
//   reading the forward's.
// - @bad_expert_id: @moe_layer on ids whose first one is 8 (no such
//   expert): permute_tokens' runtime check fails on every rank with tokens.
// - @repeated_expert_id: @moe_layer on ids whose first token has its first
//   id in slot 1 too: permute_tokens' check that an id appears once per
//   token fails likewise (every first token here has a kept first id).

// %em holds each local expert's rows contiguously, %tpe[l] of them: the
// identity expert copies its segment (where a grouped GEMM would multiply).
func.func @moe_layer(%x: tensor<?x16xbf16>, %idx: tensor<?x4xi32>, %w: tensor<?x4xf32>)
    -> tensor<?x16xbf16> attributes {llvm.emit_c_interface} {
  %rows, %gs, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xbf16>, tensor<?x4xi32>
  %gs2 = tensor.expand_shape %gs [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %c0_i64 = arith.constant 0 : i64
  %empty = tensor.empty() : tensor<4xi64>
  %zeros = linalg.fill ins(%c0_i64 : i64) outs(%empty : tensor<4xi64>) -> tensor<4xi64>
  %send_counts = linalg.reduce { arith.addi } ins(%gs2 : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
  %ones = arith.constant dense<1> : tensor<4xi64>
  // counts[src][l]: the rows source src sends to each local expert.
  %cm, %cmc = moecomm.all_to_all %gs2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x2xi64>, tensor<4xi64>
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2> : tensor<?x16xbf16>, tensor<4xi64>
  %em, %tpe = moecomm.sort_chunks %recv, %cm : tensor<?x16xbf16>, tensor<?x2xi64>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = tensor.dim %em, %c0 : tensor<?x16xbf16>
  %y0 = tensor.empty(%n) : tensor<?x16xbf16>
  %experts:2 = scf.for %l = %c0 to %c2 step %c1 iter_args(%at = %c0, %acc = %y0) -> (index, tensor<?x16xbf16>) {
    %rows_l64 = tensor.extract %tpe[%l] : tensor<2xi64>
    %rows_l = arith.index_cast %rows_l64 : i64 to index
    %segment = tensor.extract_slice %em[%at, 0] [%rows_l, 16] [1, 1] : tensor<?x16xbf16> to tensor<?x16xbf16>
    %acc1 = tensor.insert_slice %segment into %acc[%at, 0] [%rows_l, 16] [1, 1] : tensor<?x16xbf16> into tensor<?x16xbf16>
    %next = arith.addi %at, %rows_l : index
    scf.yield %next, %acc1 : index, tensor<?x16xbf16>
  }
  %sm = moecomm.unsort_chunks %experts#1, %cm : tensor<?x16xbf16>, tensor<?x2xi64>
  %back, %bc = moecomm.all_to_all %sm, %recv_counts topology<ranks = 4, ranks_per_node = 2> : tensor<?x16xbf16>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x4xf32>) : tensor<?x16xbf16>, tensor<?x4xi64>
  return %out : tensor<?x16xbf16>
}

func.func @moe_layer_rowwise(%x: tensor<?x16xbf16>, %idx: tensor<?x4xi32>, %w: tensor<?x4xf32>)
    -> tensor<?x16xbf16> attributes {llvm.emit_c_interface} {
  %rows, %gs, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xbf16>, tensor<?x4xi32>
  %gs2 = tensor.expand_shape %gs [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %c0_i64 = arith.constant 0 : i64
  %empty = tensor.empty() : tensor<4xi64>
  %zeros = linalg.fill ins(%c0_i64 : i64) outs(%empty : tensor<4xi64>) -> tensor<4xi64>
  %send_counts = linalg.reduce { arith.addi } ins(%gs2 : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2> : tensor<?x16xbf16>, tensor<4xi64>
  %back, %bc = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 2> : tensor<?x16xbf16>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x4xf32>) : tensor<?x16xbf16>, tensor<?x4xi64>
  return %out : tensor<?x16xbf16>
}

func.func @training_step(%x: tensor<?x16xbf16>, %idx: tensor<?x4xi32>, %w: tensor<?x4xf32>, %grad_out: tensor<?x16xbf16>)
    -> (tensor<?x16xbf16>, tensor<?x16xbf16>) attributes {llvm.emit_c_interface} {
  // The forward: @moe_layer.
  %f_rows, %f_gs, %f_slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xbf16>, tensor<?x4xi32>
  %f_gs2 = tensor.expand_shape %f_gs [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %f_c0_i64 = arith.constant 0 : i64
  %f_empty = tensor.empty() : tensor<4xi64>
  %f_zeros = linalg.fill ins(%f_c0_i64 : i64) outs(%f_empty : tensor<4xi64>) -> tensor<4xi64>
  %f_send_counts = linalg.reduce { arith.addi } ins(%f_gs2 : tensor<4x2xi64>) outs(%f_zeros : tensor<4xi64>) dimensions = [1]
  %f_ones = arith.constant dense<1> : tensor<4xi64>
  // counts[src][l]: the rows source src sends to each local expert.
  %f_cm, %f_cmc = moecomm.all_to_all %f_gs2, %f_ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x2xi64>, tensor<4xi64>
  %f_recv, %f_recv_counts = moecomm.all_to_all %f_rows, %f_send_counts topology<ranks = 4, ranks_per_node = 2> : tensor<?x16xbf16>, tensor<4xi64>
  %f_em, %f_tpe = moecomm.sort_chunks %f_recv, %f_cm : tensor<?x16xbf16>, tensor<?x2xi64>
  %f_c0 = arith.constant 0 : index
  %f_c1 = arith.constant 1 : index
  %f_c2 = arith.constant 2 : index
  %f_n = tensor.dim %f_em, %f_c0 : tensor<?x16xbf16>
  %f_y0 = tensor.empty(%f_n) : tensor<?x16xbf16>
  %f_experts:2 = scf.for %f_l = %f_c0 to %f_c2 step %f_c1 iter_args(%f_at = %f_c0, %f_acc = %f_y0) -> (index, tensor<?x16xbf16>) {
    %f_rows_l64 = tensor.extract %f_tpe[%f_l] : tensor<2xi64>
    %f_rows_l = arith.index_cast %f_rows_l64 : i64 to index
    %f_segment = tensor.extract_slice %f_em[%f_at, 0] [%f_rows_l, 16] [1, 1] : tensor<?x16xbf16> to tensor<?x16xbf16>
    %f_acc1 = tensor.insert_slice %f_segment into %f_acc[%f_at, 0] [%f_rows_l, 16] [1, 1] : tensor<?x16xbf16> into tensor<?x16xbf16>
    %f_next = arith.addi %f_at, %f_rows_l : index
    scf.yield %f_next, %f_acc1 : index, tensor<?x16xbf16>
  }
  %f_sm = moecomm.unsort_chunks %f_experts#1, %f_cm : tensor<?x16xbf16>, tensor<?x2xi64>
  %f_back, %f_bc = moecomm.all_to_all %f_sm, %f_recv_counts topology<ranks = 4, ranks_per_node = 2> : tensor<?x16xbf16>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %f_back, %f_slots weights(%w : tensor<?x4xf32>) : tensor<?x16xbf16>, tensor<?x4xi64>
  // The backward.
  %rows, %gs, %slots = moecomm.permute_tokens %grad_out, %idx weights(%w : tensor<?x4xf32>) experts(8) : tensor<?x16xbf16>, tensor<?x4xi32>
  %gs2 = tensor.expand_shape %gs [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %c0_i64 = arith.constant 0 : i64
  %empty = tensor.empty() : tensor<4xi64>
  %zeros = linalg.fill ins(%c0_i64 : i64) outs(%empty : tensor<4xi64>) -> tensor<4xi64>
  %send_counts = linalg.reduce { arith.addi } ins(%gs2 : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
  %ones = arith.constant dense<1> : tensor<4xi64>
  %cm, %cmc = moecomm.all_to_all %gs2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x2xi64>, tensor<4xi64>
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2> : tensor<?x16xbf16>, tensor<4xi64>
  %em, %tpe = moecomm.sort_chunks %recv, %cm : tensor<?x16xbf16>, tensor<?x2xi64>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = tensor.dim %em, %c0 : tensor<?x16xbf16>
  %y0 = tensor.empty(%n) : tensor<?x16xbf16>
  %experts:2 = scf.for %l = %c0 to %c2 step %c1 iter_args(%at = %c0, %acc = %y0) -> (index, tensor<?x16xbf16>) {
    %rows_l64 = tensor.extract %tpe[%l] : tensor<2xi64>
    %rows_l = arith.index_cast %rows_l64 : i64 to index
    %segment = tensor.extract_slice %em[%at, 0] [%rows_l, 16] [1, 1] : tensor<?x16xbf16> to tensor<?x16xbf16>
    %acc1 = tensor.insert_slice %segment into %acc[%at, 0] [%rows_l, 16] [1, 1] : tensor<?x16xbf16> into tensor<?x16xbf16>
    %next = arith.addi %at, %rows_l : index
    scf.yield %next, %acc1 : index, tensor<?x16xbf16>
  }
  %sm = moecomm.unsort_chunks %experts#1, %cm : tensor<?x16xbf16>, tensor<?x2xi64>
  %back, %bc = moecomm.all_to_all %sm, %recv_counts topology<ranks = 4, ranks_per_node = 2> : tensor<?x16xbf16>, tensor<4xi64>
  %grad_x = moecomm.unpermute_tokens %back, %slots : tensor<?x16xbf16>, tensor<?x4xi64>
  return %out, %grad_x : tensor<?x16xbf16>, tensor<?x16xbf16>
}

func.func @bad_expert_id(%x: tensor<?x16xbf16>, %idx: tensor<?x4xi32>, %w: tensor<?x4xf32>)
    -> tensor<?x16xbf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : i32
  %false = arith.constant false
  %bad = call @first_token_id(%idx, %c0, %c8, %false) : (tensor<?x4xi32>, index, i32, i1) -> tensor<?x4xi32>
  %out = call @moe_layer(%x, %bad, %w) : (tensor<?x16xbf16>, tensor<?x4xi32>, tensor<?x4xf32>) -> tensor<?x16xbf16>
  return %out : tensor<?x16xbf16>
}

func.func @repeated_expert_id(%x: tensor<?x16xbf16>, %idx: tensor<?x4xi32>, %w: tensor<?x4xf32>)
    -> tensor<?x16xbf16> attributes {llvm.emit_c_interface} {
  %c1 = arith.constant 1 : index
  %c0_i32 = arith.constant 0 : i32
  %true = arith.constant true
  %bad = call @first_token_id(%idx, %c1, %c0_i32, %true) : (tensor<?x4xi32>, index, i32, i1) -> tensor<?x4xi32>
  %out = call @moe_layer(%x, %bad, %w) : (tensor<?x16xbf16>, tensor<?x4xi32>, tensor<?x4xf32>) -> tensor<?x16xbf16>
  return %out : tensor<?x16xbf16>
}

// %idx with the first token's slot %k set to %id, or with %copy to the
// token's first id; unchanged on a rank without tokens.
func.func private @first_token_id(%idx: tensor<?x4xi32>, %k: index, %id: i32, %copy: i1) -> tensor<?x4xi32> {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %idx, %c0 : tensor<?x4xi32>
  %any = arith.cmpi sgt, %t, %c0 : index
  %out = scf.if %any -> (tensor<?x4xi32>) {
    %first = tensor.extract %idx[%c0, %c0] : tensor<?x4xi32>
    %v = arith.select %copy, %first, %id : i32
    %i = tensor.insert %v into %idx[%c0, %k] : tensor<?x4xi32>
    scf.yield %i : tensor<?x4xi32>
  } else {
    scf.yield %idx : tensor<?x4xi32>
  }
  return %out : tensor<?x4xi32>
}
