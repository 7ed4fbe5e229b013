// RUN: moecomm-opt %s --moecomm-raise-dispatch -verify-diagnostics -split-input-file | FileCheck %s
// Each per-expert exchange here fails one condition of moecomm-raise-dispatch:
// a remark says which, and the chain is left as it is. The same chain with
// everything right is raised (raise-dispatch-row-wise.mlir); the conditions
// of the grouped form: raise-dispatch-grouped-remarks.mlir.

// CHECK-NOT: moecomm.dispatch
// CHECK-NOT: moecomm.combine

// The group sizes are not reshaped to [W, L].
func.func @sizes_not_reshaped(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %shape = arith.constant dense<[4, 2]> : tensor<2xi64>
  %zeros = arith.constant dense<0> : tensor<4xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: the group sizes of 'moecomm.permute_tokens' are not reshaped to [W, L] by a 'tensor.expand_shape'}}
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.reshape %sizes(%shape) : (tensor<8xi64>, tensor<2xi64>) -> tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// The group sizes are also returned.
func.func @sizes_escape(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> (tensor<?x16xf32>, tensor<8xi64>) {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'func.return' uses the group sizes outside the per-expert exchange}}
  return %out, %sizes : tensor<?x16xf32>, tensor<8xi64>
}

// -----

// The group sizes reshaped to [2, 2, 2].
func.func @groups_3d(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %zeros = arith.constant dense<0> : tensor<2xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'tensor.expand_shape' must reshape the group sizes of 'moecomm.permute_tokens' to [W, L]}}
  %groups = tensor.expand_shape %sizes [[0, 1, 2]] output_shape [2, 2, 2] : tensor<8xi64> into tensor<2x2x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<2x2x2xi64>) outs(%zeros : tensor<2xi64>) dimensions = [1, 2]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 2, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<2xi64>
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 2, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<2xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// The [W, L] group sizes are also returned.
func.func @groups_escape(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> (tensor<?x16xf32>, tensor<4x2xi64>) {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'func.return' uses the [W, L] group sizes outside the per-expert exchange}}
  return %out, %groups : tensor<?x16xf32>, tensor<4x2xi64>
}

// -----

// The rows are not exchanged.
func.func @rows_not_sent(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: the rows of 'moecomm.permute_tokens' are not sent by a 'moecomm.all_to_all'}}
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %x, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// The permuted rows are also returned.
func.func @rows_escape(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'func.return' uses the permuted rows outside the per-expert exchange}}
  return %out, %rows : tensor<?x16xf32>, tensor<?x16xf32>
}

// -----

// The forward exchange has an expert placement.
func.func @placement(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'moecomm.all_to_all' has an expert placement (a per-expert exchange has none)}}
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2, experts = 8, slots = 8, placement = array<i64: 0, 1, 2, 3, 4, 5, 6, 7>>
      : tensor<?x16xf32>, tensor<4xi64>
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// The exchanges are on 2 ranks, the group sizes reshaped for 4.
func.func @other_ranks(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %sums = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %send_counts = tensor.cast %sums : tensor<4xi64> to tensor<?xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'moecomm.all_to_all' has 2 ranks but the group sizes are reshaped to [4, 2]}}
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 2, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<?xi64>
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 2, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<2xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// The send counts are a constant.
func.func @counts_not_sums(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> (tensor<?x16xf32>, tensor<4xi64>) {
  %even = arith.constant dense<2> : tensor<4xi64>
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  // expected-remark @below {{moecomm-raise-dispatch: not raised: the send counts of 'moecomm.all_to_all' are not the per-rank sums of the group sizes (linalg.reduce of the [W, L] tensor.expand_shape over dimension 1 with arith.addi, from zeros)}}
  %recv, %recv_counts = moecomm.all_to_all %rows, %even topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out, %send_counts : tensor<?x16xf32>, tensor<4xi64>
}

// -----

// The per-rank sums start from ones.
func.func @counts_not_from_zeros(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %zeros = arith.constant dense<1> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  // expected-remark @below {{moecomm-raise-dispatch: not raised: the send counts of 'moecomm.all_to_all' are not the per-rank sums of the group sizes (linalg.reduce of the [W, L] tensor.expand_shape over dimension 1 with arith.addi, from zeros)}}
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// The group sizes reduced with arith.maxsi.
func.func @counts_max(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.maxsi %a, %acc : i64
      linalg.yield %s : i64
    }
  // expected-remark @below {{moecomm-raise-dispatch: not raised: the send counts of 'moecomm.all_to_all' are not the per-rank sums of the group sizes (linalg.reduce of the [W, L] tensor.expand_shape over dimension 1 with arith.addi, from zeros)}}
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// The group sizes summed over dimension 0.
func.func @counts_over_ranks(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %z2 = arith.constant dense<0> : tensor<2xi64>
  %sums = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%z2 : tensor<2xi64>) dimensions = [0]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %send_counts = tensor.cast %sums : tensor<2xi64> to tensor<?xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: the send counts of 'moecomm.all_to_all' are not the per-rank sums of the group sizes (linalg.reduce of the [W, L] tensor.expand_shape over dimension 1 with arith.addi, from zeros)}}
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<?xi64>
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// The send counts are also returned.
func.func @counts_escape(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> (tensor<?x16xf32>, tensor<4xi64>) {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'func.return' uses the send counts outside the per-expert exchange}}
  return %out, %send_counts : tensor<?x16xf32>, tensor<4xi64>
}

// -----

// The experts read the received rows with an op that is not elementwise.
func.func @not_row_wise(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>, %m: tensor<16x16xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %zf = arith.constant 0.0 : f32
  %n = tensor.dim %recv, %c0 : tensor<?x16xf32>
  %e = tensor.empty(%n) : tensor<?x16xf32>
  %z = linalg.fill ins(%zf : f32) outs(%e : tensor<?x16xf32>) -> tensor<?x16xf32>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'linalg.matmul' uses the received rows but is neither the exchange back nor an elementwise op of received rows only}}
  %y = linalg.matmul ins(%recv, %m : tensor<?x16xf32>, tensor<16x16xf32>) outs(%z : tensor<?x16xf32>) -> tensor<?x16xf32>
  %back, %back_counts = moecomm.all_to_all %y, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// The received rows go nowhere.
func.func @not_sent_back(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  // expected-remark @below {{moecomm-raise-dispatch: not raised: the received rows of 'moecomm.all_to_all' are not sent back by a 'moecomm.all_to_all'}}
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %back, %back_counts = moecomm.all_to_all %x, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// The exchange back sends with other counts.
func.func @back_other_counts(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>, %c: tensor<4xi64>) -> tensor<?x16xf32> {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: the exchange back ('moecomm.all_to_all') does not send with the forward exchange's receive counts}}
  %back, %back_counts = moecomm.all_to_all %recv, %c topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// The exchange back has other nodes.
func.func @back_other_topology(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: the exchange back ('moecomm.all_to_all') has another topology than the forward exchange}}
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 4>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// The receive counts are also returned.
func.func @recv_counts_escape(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> (tensor<?x16xf32>, tensor<4xi64>) {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'func.return' uses the receive counts outside the per-expert exchange}}
  return %out, %recv_counts : tensor<?x16xf32>, tensor<4xi64>
}

// -----

// The receive counts of the exchange back are returned.
func.func @back_counts_used(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> (tensor<?x16xf32>, tensor<4xi64>) {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'func.return' uses the receive counts of the exchange back outside the per-expert exchange}}
  return %out, %back_counts : tensor<?x16xf32>, tensor<4xi64>
}

// -----

// The rows back are returned as they are.
func.func @not_home(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: the rows of the exchange back are not brought home by a 'moecomm.unpermute_tokens'}}
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %x, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out, %back : tensor<?x16xf32>, tensor<?x16xf32>
}

// -----

// The rows back are unpermuted with other slot rows.
func.func @other_slots(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>, %other: tensor<?x2xi64>) -> (tensor<?x16xf32>, tensor<?x2xi64>) {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'moecomm.unpermute_tokens' takes other slot rows than the 'moecomm.permute_tokens' of its rows}}
  %out = moecomm.unpermute_tokens %back, %other weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out, %slots : tensor<?x16xf32>, tensor<?x2xi64>
}

// -----

// A backward reads the same slot rows (not raised: the dispatch would not give it those rows).
func.func @backward_on_slots(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>, %grad: tensor<?x16xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'moecomm.unpermute_tokens' uses the slot rows outside the per-expert exchange}}
  %dgrad = moecomm.unpermute_tokens %grad, %slots : tensor<?x16xf32>, tensor<?x2xi64>
  return %out, %dgrad : tensor<?x16xf32>, tensor<?x16xf32>
}

// -----

// The rows back are brought home in another block.
func.func @other_block(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = scf.execute_region -> tensor<?x16xf32> {
    // expected-remark @below {{moecomm-raise-dispatch: not raised: 'moecomm.unpermute_tokens' is not in the block of the 'moecomm.permute_tokens'}}
    %o = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
    scf.yield %o : tensor<?x16xf32>
  }
  return %out : tensor<?x16xf32>
}

// -----

// The routing weights are computed after the forward exchange.
func.func @late_weights(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %w2 = arith.negf %w : tensor<?x2xf32>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: the weights of 'moecomm.unpermute_tokens' are not defined before the forward 'moecomm.all_to_all', where moecomm.dispatch goes}}
  %out = moecomm.unpermute_tokens %back, %slots weights(%w2 : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}


// -----

// x has 8 tokens and the weights 4 (the ids' count is dynamic): the
// per-expert ops find that only at run time, moecomm.dispatch's verifier at
// once.
func.func @tokens_differ(%x: tensor<8x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<4x2xf32>) -> tensor<?x16xf32> {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<8x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: the tokens of 'moecomm.permute_tokens' and the weights of 'moecomm.unpermute_tokens' have different static counts (8 and 4): moecomm.dispatch needs one}}
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<4x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// Weights at both ends: neither a forward nor a backward exchange
// (raise-dispatch-backward.mlir).
func.func @weights_at_both_ends(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx weights(%w : tensor<?x2xf32>) experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: both 'moecomm.permute_tokens' and 'moecomm.unpermute_tokens' take weights: a forward exchange weighs the rows that come home, a backward one those it sends}}
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// A backward exchange whose gradient rows (8 tokens) and weights (4) differ
// in their static counts (the ids' count is dynamic): the remark is at the
// permute_tokens, which takes the weights.
func.func @backward_tokens_differ(%g: tensor<8x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<4x2xf32>) -> tensor<?x16xf32> {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: the tokens of 'moecomm.permute_tokens' and the weights of 'moecomm.permute_tokens' have different static counts (8 and 4): moecomm.dispatch needs one}}
  %rows, %sizes, %slots = moecomm.permute_tokens %g, %idx weights(%w : tensor<4x2xf32>) experts(8) : tensor<8x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// A backward that regroups its rows with the forward's counts matrix (as
// Megatron's autograd backward does) keeps both chains; the two remarks at
// its sort_chunks say whose each is.
func.func @backward_reads_forward_counts(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>, %g: tensor<?x16xf32>)
    -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %ones = arith.constant dense<1> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %matrix, %unused = moecomm.all_to_all %groups, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x2xi64>, tensor<4xi64>
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %sorted, %tpe = moecomm.sort_chunks %recv, %matrix : tensor<?x16xf32>, tensor<?x2xi64>
  %unsorted = moecomm.unsort_chunks %sorted, %matrix : tensor<?x16xf32>, tensor<?x2xi64>
  %back, %back_counts = moecomm.all_to_all %unsorted, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  %grows, %gsizes, %gslots = moecomm.permute_tokens %g, %idx weights(%w : tensor<?x2xf32>) experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %ggroups = tensor.expand_shape %gsizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %gsend_counts = linalg.reduce ins(%ggroups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %grecv, %grecv_counts = moecomm.all_to_all %grows, %gsend_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'moecomm.sort_chunks' uses the counts matrix outside the per-expert exchange (the exchange from the 'moecomm.permute_tokens' at}}
  // expected-remark @below {{moecomm-raise-dispatch: not raised: the counts of 'moecomm.sort_chunks' are not the 'moecomm.all_to_all' of the [W, L] group sizes (the exchange from the 'moecomm.permute_tokens' at}}
  %gsorted, %gtpe = moecomm.sort_chunks %grecv, %matrix : tensor<?x16xf32>, tensor<?x2xi64>
  %gunsorted = moecomm.unsort_chunks %gsorted, %matrix : tensor<?x16xf32>, tensor<?x2xi64>
  %gback, %gback_counts = moecomm.all_to_all %gunsorted, %grecv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %grad_x = moecomm.unpermute_tokens %gback, %gslots : tensor<?x16xf32>, tensor<?x2xi64>
  return %out, %grad_x : tensor<?x16xf32>, tensor<?x16xf32>
}
