// RUN: moecomm-opt %s --moecomm-raise-dispatch -verify-diagnostics -split-input-file | FileCheck %s
// The conditions of the grouped form (sort_chunks / unsort_chunks and the
// counts matrix, an all_to_all of i64 rows): each per-expert exchange here
// fails one, a remark says which, and the chain is left as it is. The same
// chain with everything right is raised (raise-dispatch.mlir); the other
// conditions: raise-dispatch-remarks.mlir.

// CHECK-NOT: moecomm.dispatch
// CHECK-NOT: moecomm.combine

// The received rows are also returned.
func.func @recv_escape(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %ones = arith.constant dense<1> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %matrix, %matrix_counts = moecomm.all_to_all %groups, %ones topology<ranks = 4, ranks_per_node = 2>
      : tensor<4x2xi64>, tensor<4xi64>
  %sorted, %tpe = moecomm.sort_chunks %recv, %matrix : tensor<?x16xf32>, tensor<?x2xi64>
  %y = arith.addf %sorted, %sorted : tensor<?x16xf32>
  %unsorted = moecomm.unsort_chunks %y, %matrix : tensor<?x16xf32>, tensor<?x2xi64>
  %back, %back_counts = moecomm.all_to_all %unsorted, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'func.return' uses the received rows outside the per-expert exchange}}
  return %out, %recv : tensor<?x16xf32>, tensor<?x16xf32>
}

// -----

// The [W, L] group sizes are also returned.
func.func @groups_escape(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> (tensor<?x16xf32>, tensor<4x2xi64>) {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %ones = arith.constant dense<1> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %matrix, %matrix_counts = moecomm.all_to_all %groups, %ones topology<ranks = 4, ranks_per_node = 2>
      : tensor<4x2xi64>, tensor<4xi64>
  %sorted, %tpe = moecomm.sort_chunks %recv, %matrix : tensor<?x16xf32>, tensor<?x2xi64>
  %y = arith.addf %sorted, %sorted : tensor<?x16xf32>
  %unsorted = moecomm.unsort_chunks %y, %matrix : tensor<?x16xf32>, tensor<?x2xi64>
  %back, %back_counts = moecomm.all_to_all %unsorted, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'func.return' uses the [W, L] group sizes outside the per-expert exchange}}
  return %out, %groups : tensor<?x16xf32>, tensor<4x2xi64>
}

// -----

// The chunks are sorted by counts from elsewhere.
func.func @counts_not_exchanged(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>, %counts: tensor<?x2xi64>) -> tensor<?x16xf32> {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %ones = arith.constant dense<1> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %matrix, %matrix_counts = moecomm.all_to_all %groups, %ones topology<ranks = 4, ranks_per_node = 2>
      : tensor<4x2xi64>, tensor<4xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: the counts of 'moecomm.sort_chunks' are not the 'moecomm.all_to_all' of the [W, L] group sizes}}
  %sorted, %tpe = moecomm.sort_chunks %recv, %counts : tensor<?x16xf32>, tensor<?x2xi64>
  %y = arith.addf %sorted, %sorted : tensor<?x16xf32>
  %unsorted = moecomm.unsort_chunks %y, %matrix : tensor<?x16xf32>, tensor<?x2xi64>
  %back, %back_counts = moecomm.all_to_all %unsorted, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// The counts exchange sends two rows to every rank.
func.func @counts_not_ones(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %ones = arith.constant dense<2> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'moecomm.all_to_all' of the group sizes must send one row to every rank (a constant of 4 ones as send counts)}}
  %matrix, %matrix_counts = moecomm.all_to_all %groups, %ones topology<ranks = 4, ranks_per_node = 2>
      : tensor<4x2xi64>, tensor<4xi64>
  %sorted, %tpe = moecomm.sort_chunks %recv, %matrix : tensor<?x16xf32>, tensor<?x2xi64>
  %y = arith.addf %sorted, %sorted : tensor<?x16xf32>
  %unsorted = moecomm.unsort_chunks %y, %matrix : tensor<?x16xf32>, tensor<?x2xi64>
  %back, %back_counts = moecomm.all_to_all %unsorted, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// The counts exchange has other nodes.
func.func @counts_other_topology(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %ones = arith.constant dense<1> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'moecomm.all_to_all' of the group sizes has another topology than the forward exchange}}
  %matrix, %matrix_counts = moecomm.all_to_all %groups, %ones topology<ranks = 4, ranks_per_node = 1>
      : tensor<4x2xi64>, tensor<4xi64>
  %sorted, %tpe = moecomm.sort_chunks %recv, %matrix : tensor<?x16xf32>, tensor<?x2xi64>
  %y = arith.addf %sorted, %sorted : tensor<?x16xf32>
  %unsorted = moecomm.unsort_chunks %y, %matrix : tensor<?x16xf32>, tensor<?x2xi64>
  %back, %back_counts = moecomm.all_to_all %unsorted, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// The receive counts of the counts exchange are returned.
func.func @counts_counts_used(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> (tensor<?x16xf32>, tensor<4xi64>) {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %ones = arith.constant dense<1> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %matrix, %matrix_counts = moecomm.all_to_all %groups, %ones topology<ranks = 4, ranks_per_node = 2>
      : tensor<4x2xi64>, tensor<4xi64>
  %sorted, %tpe = moecomm.sort_chunks %recv, %matrix : tensor<?x16xf32>, tensor<?x2xi64>
  %y = arith.addf %sorted, %sorted : tensor<?x16xf32>
  %unsorted = moecomm.unsort_chunks %y, %matrix : tensor<?x16xf32>, tensor<?x2xi64>
  %back, %back_counts = moecomm.all_to_all %unsorted, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'func.return' uses the receive counts of the counts exchange outside the per-expert exchange}}
  return %out, %matrix_counts : tensor<?x16xf32>, tensor<4xi64>
}

// -----

// The counts matrix is also returned (through a tensor.cast).
func.func @matrix_escape(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> (tensor<?x16xf32>, tensor<4x2xi64>) {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %ones = arith.constant dense<1> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %matrix, %matrix_counts = moecomm.all_to_all %groups, %ones topology<ranks = 4, ranks_per_node = 2>
      : tensor<4x2xi64>, tensor<4xi64>
  %cast = tensor.cast %matrix : tensor<?x2xi64> to tensor<4x2xi64>
  %sorted, %tpe = moecomm.sort_chunks %recv, %matrix : tensor<?x16xf32>, tensor<?x2xi64>
  %y = arith.addf %sorted, %sorted : tensor<?x16xf32>
  %unsorted = moecomm.unsort_chunks %y, %matrix : tensor<?x16xf32>, tensor<?x2xi64>
  %back, %back_counts = moecomm.all_to_all %unsorted, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'func.return' uses the counts matrix outside the per-expert exchange}}
  return %out, %cast : tensor<?x16xf32>, tensor<4x2xi64>
}

// -----

// The chunks are unsorted by other counts.
func.func @other_unsort(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>, %counts: tensor<?x2xi64>) -> tensor<?x16xf32> {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %ones = arith.constant dense<1> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %matrix, %matrix_counts = moecomm.all_to_all %groups, %ones topology<ranks = 4, ranks_per_node = 2>
      : tensor<4x2xi64>, tensor<4xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: the counts matrix of 'moecomm.sort_chunks' is not used by a 'moecomm.unsort_chunks'}}
  %sorted, %tpe = moecomm.sort_chunks %recv, %matrix : tensor<?x16xf32>, tensor<?x2xi64>
  %y = arith.addf %sorted, %sorted : tensor<?x16xf32>
  %unsorted = moecomm.unsort_chunks %y, %counts : tensor<?x16xf32>, tensor<?x2xi64>
  %back, %back_counts = moecomm.all_to_all %unsorted, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// The unsorted rows are not sent back.
func.func @unsorted_not_sent(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %ones = arith.constant dense<1> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %matrix, %matrix_counts = moecomm.all_to_all %groups, %ones topology<ranks = 4, ranks_per_node = 2>
      : tensor<4x2xi64>, tensor<4xi64>
  %sorted, %tpe = moecomm.sort_chunks %recv, %matrix : tensor<?x16xf32>, tensor<?x2xi64>
  %y = arith.addf %sorted, %sorted : tensor<?x16xf32>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: the rows of 'moecomm.unsort_chunks' are not sent back by a 'moecomm.all_to_all'}}
  %unsorted = moecomm.unsort_chunks %y, %matrix : tensor<?x16xf32>, tensor<?x2xi64>
  %back, %back_counts = moecomm.all_to_all %y, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out, %unsorted : tensor<?x16xf32>, tensor<?x16xf32>
}

// -----

// The unsorted rows are also returned.
func.func @unsorted_escape(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %ones = arith.constant dense<1> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %matrix, %matrix_counts = moecomm.all_to_all %groups, %ones topology<ranks = 4, ranks_per_node = 2>
      : tensor<4x2xi64>, tensor<4xi64>
  %sorted, %tpe = moecomm.sort_chunks %recv, %matrix : tensor<?x16xf32>, tensor<?x2xi64>
  %y = arith.addf %sorted, %sorted : tensor<?x16xf32>
  %unsorted = moecomm.unsort_chunks %y, %matrix : tensor<?x16xf32>, tensor<?x2xi64>
  %back, %back_counts = moecomm.all_to_all %unsorted, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'func.return' uses the unsorted expert outputs outside the per-expert exchange}}
  return %out, %unsorted : tensor<?x16xf32>, tensor<?x16xf32>
}

// -----

// The experts return 8 columns for 16-column tokens.
func.func @other_hidden(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>, %m: tensor<16x8xf32>) -> tensor<?x8xf32> {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %ones = arith.constant dense<1> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %matrix, %matrix_counts = moecomm.all_to_all %groups, %ones topology<ranks = 4, ranks_per_node = 2>
      : tensor<4x2xi64>, tensor<4xi64>
  %sorted, %tpe = moecomm.sort_chunks %recv, %matrix : tensor<?x16xf32>, tensor<?x2xi64>
  %c0 = arith.constant 0 : index
  %zf = arith.constant 0.0 : f32
  %n = tensor.dim %sorted, %c0 : tensor<?x16xf32>
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %z = linalg.fill ins(%zf : f32) outs(%e : tensor<?x8xf32>) -> tensor<?x8xf32>
  %y = linalg.matmul ins(%sorted, %m : tensor<?x16xf32>, tensor<16x8xf32>) outs(%z : tensor<?x8xf32>) -> tensor<?x8xf32>
  %unsorted = moecomm.unsort_chunks %y, %matrix : tensor<?x8xf32>, tensor<?x2xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: the expert outputs have 8 columns, the tokens 16: moecomm.combine needs the tokens' hidden size}}
  %back, %back_counts = moecomm.all_to_all %unsorted, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x8xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x8xf32>, tensor<?x2xi64>
  return %out : tensor<?x8xf32>
}

