// A per-expert MoE layer as a framework writes it (Megatron-Core's
// all-to-all dispatcher, MaxText's sparse path) with identity experts: token
// rows sorted by expert (moecomm.permute_tokens), sent to the experts' ranks
// with counts that are the per-rank sums of the group sizes, sent straight
// back, summed per token with the routing weights
// (moecomm.unpermute_tokens). W = 4 ranks as 2 nodes x 2, E = 8 experts
// (L = 2 per rank), K = 4, H = 16, bf16 rows. moecomm-raise-dispatch turns
// it into moecomm.dispatch / combine (raise-dispatch.test); @moe_layer takes
// moecomm-run's graph contract (docs/moecomm-run.md, "Graphs").
func.func @moe_layer(%x: tensor<?x16xbf16>, %idx: tensor<?x4xi32>, %w: tensor<?x4xf32>)
    -> tensor<?x16xbf16> attributes {llvm.emit_c_interface} {
  %c0_i64 = arith.constant 0 : i64
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xbf16>, tensor<?x4xi32>
  // Rows per destination rank: the sums of its experts' group sizes.
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %init = tensor.empty() : tensor<4xi64>
  %zeros = linalg.fill ins(%c0_i64 : i64) outs(%init : tensor<4xi64>) -> tensor<4xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xbf16>, tensor<4xi64>
  // Identity experts: the received rows go back as they are.
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xbf16>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x4xf32>) : tensor<?x16xbf16>, tensor<?x4xi64>
  return %out : tensor<?x16xbf16>
}
