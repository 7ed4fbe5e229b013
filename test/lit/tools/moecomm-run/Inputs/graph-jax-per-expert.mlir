// A JAX-style MoE layer (MaxText's sparse path with expert parallelism),
// written as JAX exports it where moecomm can read it: the two exchanges
// are jax.lax.ragged_all_to_all, "stablehlo.custom_call" @ragged_all_to_all
// in the generic form, with the offsets MaxText's get_all_to_all_params
// computes (exclusive cumulative sums of the sizes, as scf.for loops; the
// receivers' offsets sent to the senders); jnp.argsort + take + bincount
// (MaxText's permute) is moecomm.permute_tokens, the regrouping by local
// expert moecomm.sort_chunks / unsort_chunks, and the exchanges of sizes
// (jax.lax.all_to_all) moecomm.all_to_all of i64 rows. W = 4 ranks (2 per
// node), E = 8 experts (L = 2 per rank), K = 4, H = 16, bf16 rows, identity
// experts. Every entry takes moecomm-run's graph contract (docs/moecomm-run.md,
// "Graphs") and returns `out` only.
//
// moecomm-import-ragged-all-to-all converts the calls as XLA defines them
// (the per-expert program as written); moecomm-raise-dispatch proves from
// the offsets that each exchange moves contiguous segments in rank order
// and raises the layer to dispatch / combine (raise-dispatch-jax.test).
//
// Entries:
// - @moe_layer: grouped experts (sort_chunks before them, unsort_chunks
//   after), as MaxText's grouped matmul runs.
// - @moe_layer_rowwise: the identity experts work on the received rows as
//   they arrive (by source rank), which go back as they are.

func.func @moe_layer(%x: tensor<?x16xbf16>, %idx: tensor<?x4xi32>, %w: tensor<?x4xf32>)
    -> tensor<?x16xbf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c0_i64 = arith.constant 0 : i64
  %ones = arith.constant dense<1> : tensor<4xi64>
  // MaxText's permute: rows sorted by expert, group sizes.
  %rows, %gs, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xbf16>, tensor<?x4xi32>
  %gs2 = tensor.expand_shape %gs [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %empty = tensor.empty() : tensor<4xi64>
  %zeros = linalg.fill ins(%c0_i64 : i64) outs(%empty : tensor<4xi64>) -> tensor<4xi64>
  %send = linalg.reduce { arith.addi } ins(%gs2 : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
  // Every source's group sizes for this rank's experts; their per-rank
  // sums are the rows each source sends here.
  %cm, %cmc = moecomm.all_to_all %gs2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x2xi64>, tensor<4xi64>
  %cm4 = tensor.cast %cm : tensor<?x2xi64> to tensor<4x2xi64>
  %recv = linalg.reduce { arith.addi } ins(%cm4 : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
  // get_all_to_all_params: where each segment starts, on each side.
  %in_off:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %empty) -> (i64, tensor<4xi64>) {
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    %n = tensor.extract %send[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
    scf.yield %s1, %t1 : i64, tensor<4xi64>
  }
  %recv_off:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %empty) -> (i64, tensor<4xi64>) {
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    %n = tensor.extract %recv[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
    scf.yield %s1, %t1 : i64, tensor<4xi64>
  }
  // The receivers' offsets, sent to the senders: output_offsets.
  %ro2 = tensor.expand_shape %recv_off#1 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %oo2, %ooc = moecomm.all_to_all %ro2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x1xi64>, tensor<4xi64>
  %oo1 = tensor.collapse_shape %oo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %out_off = tensor.cast %oo1 : tensor<?xi64> to tensor<4xi64>
  %R = arith.index_cast %recv_off#0 : i64 to index
  %buf = tensor.empty(%R) : tensor<?x16xbf16>
  %got = "stablehlo.custom_call"(%rows, %buf, %in_off#1, %send, %out_off, %recv) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xbf16>
  // The grouped experts: rows by local expert (identity).
  %em, %tpe = moecomm.sort_chunks %got, %cm : tensor<?x16xbf16>, tensor<?x2xi64>
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
  // Home: the senders' offsets, sent to the experts' ranks.
  %io2 = tensor.expand_shape %in_off#1 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %bo2, %boc = moecomm.all_to_all %io2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x1xi64>, tensor<4xi64>
  %bo1 = tensor.collapse_shape %bo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %back_off = tensor.cast %bo1 : tensor<?xi64> to tensor<4xi64>
  %S = arith.index_cast %in_off#0 : i64 to index
  %hbuf = tensor.empty(%S) : tensor<?x16xbf16>
  %home = "stablehlo.custom_call"(%sm, %hbuf, %recv_off#1, %recv, %back_off, %send) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xbf16>
  %out = moecomm.unpermute_tokens %home, %slots weights(%w : tensor<?x4xf32>) : tensor<?x16xbf16>, tensor<?x4xi64>
  return %out : tensor<?x16xbf16>
}

func.func @moe_layer_rowwise(%x: tensor<?x16xbf16>, %idx: tensor<?x4xi32>, %w: tensor<?x4xf32>)
    -> tensor<?x16xbf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c0_i64 = arith.constant 0 : i64
  %ones = arith.constant dense<1> : tensor<4xi64>
  %rows, %gs, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xbf16>, tensor<?x4xi32>
  %gs2 = tensor.expand_shape %gs [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %empty = tensor.empty() : tensor<4xi64>
  %zeros = linalg.fill ins(%c0_i64 : i64) outs(%empty : tensor<4xi64>) -> tensor<4xi64>
  %send = linalg.reduce { arith.addi } ins(%gs2 : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
  %cm, %cmc = moecomm.all_to_all %gs2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x2xi64>, tensor<4xi64>
  %cm4 = tensor.cast %cm : tensor<?x2xi64> to tensor<4x2xi64>
  %recv = linalg.reduce { arith.addi } ins(%cm4 : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
  %in_off:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %empty) -> (i64, tensor<4xi64>) {
    %n = tensor.extract %send[%i] : tensor<4xi64>
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    %s1 = arith.addi %n, %s : i64
    scf.yield %s1, %t1 : i64, tensor<4xi64>
  }
  %recv_off:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%t = %empty, %s = %c0_i64) -> (tensor<4xi64>, i64) {
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    %n = tensor.extract %recv[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
    scf.yield %t1, %s1 : tensor<4xi64>, i64
  }
  %ro2 = tensor.expand_shape %recv_off#0 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %oo2, %ooc = moecomm.all_to_all %ro2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x1xi64>, tensor<4xi64>
  %out_off = tensor.collapse_shape %oo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %out_off4 = tensor.cast %out_off : tensor<?xi64> to tensor<4xi64>
  %R = arith.index_cast %recv_off#1 : i64 to index
  %buf = tensor.empty(%R) : tensor<?x16xbf16>
  %got = "stablehlo.custom_call"(%rows, %buf, %in_off#1, %send, %out_off4, %recv) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xbf16>
  %io2 = tensor.expand_shape %in_off#1 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %bo2, %boc = moecomm.all_to_all %io2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x1xi64>, tensor<4xi64>
  %bo1 = tensor.collapse_shape %bo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %back_off = tensor.cast %bo1 : tensor<?xi64> to tensor<4xi64>
  %S = arith.index_cast %in_off#0 : i64 to index
  %hbuf = tensor.empty(%S) : tensor<?x16xbf16>
  %home = "stablehlo.custom_call"(%got, %hbuf, %recv_off#0, %recv, %back_off, %send) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xbf16>
  %out = moecomm.unpermute_tokens %home, %slots weights(%w : tensor<?x4xf32>) : tensor<?x16xbf16>, tensor<?x4xi64>
  return %out : tensor<?x16xbf16>
}
