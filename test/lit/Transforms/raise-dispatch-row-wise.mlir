// RUN: moecomm-opt %s --moecomm-raise-dispatch | FileCheck %s
// RUN: moecomm-opt %s --moecomm-raise-dispatch --moecomm-pipeline="ranks=4" | FileCheck %s --check-prefix=LOWERED
// The per-expert exchange with row-wise experts (identity, elementwise ops
// of the received rows) raised to dispatch / combine, then lowered. The
// grouped form: raise-dispatch.mlir.

// LOWERED-NOT: moecomm.
// LOWERED: llvm.call @moecomm_rt_layout

// Identity experts, f32 rows, i64 ids, weighted; the send counts through a
// tensor.cast.
// CHECK-LABEL: func.func @identity(
// CHECK-SAME: %[[X:[^:]*]]: tensor<?x16xf32>, %[[IDX:[^:]*]]: tensor<?x2xi64>, %[[W:[^:]*]]: tensor<?x2xf32>)
// CHECK-NEXT: %[[R:.*]], %{{.*}}, %{{.*}}, %[[H:.*]] = moecomm.dispatch %[[X]], %[[IDX]], %[[W]] topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x16xf32>, tensor<?x2xi64>, tensor<?x2xf32>
// CHECK-NEXT: %[[OUT:.*]] = moecomm.combine %[[R]], %[[H]] weighted : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xf32>
// CHECK-NEXT: return %[[OUT]]
func.func @identity(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %c0_i64 = arith.constant 0 : i64
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %init = tensor.empty() : tensor<4xi64>
  %zeros = linalg.fill ins(%c0_i64 : i64) outs(%init : tensor<4xi64>) -> tensor<4xi64>
  %sums = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %send_counts = tensor.cast %sums : tensor<4xi64> to tensor<?xi64>
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<?xi64>
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// Elementwise experts (x * x, then -), bf16 rows, i32 ids, unweighted: the
// dispatch gets all-ones weights [T, K] and the experts read its rows.
// CHECK-LABEL: func.func @elementwise(
// CHECK-SAME: %[[X:[^:]*]]: tensor<?x32xbf16>, %[[IDX:[^:]*]]: tensor<?x4xi32>)
// CHECK: %[[T:.*]] = tensor.dim %[[IDX]], %{{.*}} : tensor<?x4xi32>
// CHECK: %[[E:.*]] = tensor.empty(%[[T]]) : tensor<?x4xf32>
// CHECK: %[[ONES:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK: %[[R:.*]], %{{.*}}, %{{.*}}, %[[H:.*]] = moecomm.dispatch %[[X]], %[[IDX]], %[[ONES]] topology<ranks = 2, ranks_per_node = 1, experts = 8> : tensor<?x32xbf16>, tensor<?x4xi32>, tensor<?x4xf32>
// CHECK-NEXT: %[[SQ:.*]] = arith.mulf %[[R]], %[[R]] : tensor<?x32xbf16>
// CHECK-NEXT: %[[NEG:.*]] = arith.negf %[[SQ]] : tensor<?x32xbf16>
// CHECK-NEXT: %[[OUT:.*]] = moecomm.combine %[[NEG]], %[[H]] : tensor<?x32xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 8> -> tensor<?x32xbf16>
// CHECK-NEXT: return %[[OUT]]
func.func @elementwise(%x: tensor<?x32xbf16>, %idx: tensor<?x4xi32>) -> tensor<?x32xbf16> {
  %zeros = arith.constant dense<0> : tensor<2xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x32xbf16>, tensor<?x4xi32>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [2, 4] : tensor<8xi64> into tensor<2x4xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<2x4xi64>) outs(%zeros : tensor<2xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 2, ranks_per_node = 1>
      : tensor<?x32xbf16>, tensor<2xi64>
  %sq = arith.mulf %recv, %recv : tensor<?x32xbf16>
  %neg = arith.negf %sq : tensor<?x32xbf16>
  %back, %back_counts = moecomm.all_to_all %neg, %recv_counts topology<ranks = 2, ranks_per_node = 1>
      : tensor<?x32xbf16>, tensor<2xi64>
  %out = moecomm.unpermute_tokens %back, %slots : tensor<?x32xbf16>, tensor<?x4xi64>
  return %out : tensor<?x32xbf16>
}

// Two layers, the second on the first's output: both raised, in order.
// CHECK-LABEL: func.func @two_layers(
// CHECK-SAME: %[[X:[^:]*]]: tensor<?x16xf32>, %[[IDX:[^:]*]]: tensor<?x2xi64>, %[[W:[^:]*]]: tensor<?x2xf32>)
// CHECK-NEXT: %[[R1:.*]], %{{.*}}, %{{.*}}, %[[H1:.*]] = moecomm.dispatch %[[X]], %[[IDX]], %[[W]]
// CHECK-NEXT: %[[OUT1:.*]] = moecomm.combine %[[R1]], %[[H1]] weighted
// CHECK-NEXT: %[[R2:.*]], %{{.*}}, %{{.*}}, %[[H2:.*]] = moecomm.dispatch %[[OUT1]], %[[IDX]], %[[W]]
// CHECK-NEXT: %[[OUT2:.*]] = moecomm.combine %[[R2]], %[[H2]] weighted
// CHECK-NEXT: return %[[OUT2]]
func.func @two_layers(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
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
  %h = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  %rows2, %sizes2, %slots2 = moecomm.permute_tokens %h, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups2 = tensor.expand_shape %sizes2 [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts2 = linalg.reduce ins(%groups2 : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv2, %recv_counts2 = moecomm.all_to_all %rows2, %send_counts2 topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %back2, %back_counts2 = moecomm.all_to_all %recv2, %recv_counts2 topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back2, %slots2 weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}
