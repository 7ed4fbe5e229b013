// RUN: moecomm-opt %s --moecomm-raise-dispatch | FileCheck %s
// RUN: moecomm-opt %s --moecomm-raise-dispatch --moecomm-pipeline="ranks=4" | FileCheck %s --check-prefix=LOWERED
// The grouped per-expert exchange (Megatron-Core's all-to-all dispatcher with
// a grouped GEMM) raised to dispatch / combine, then lowered. The counts
// matrix is an all_to_all of i64 rows. Row-wise experts:
// raise-dispatch-row-wise.mlir; what is not raised: raise-dispatch-remarks.mlir
// and raise-dispatch-grouped-remarks.mlir.

// LOWERED-NOT: moecomm.
// LOWERED: llvm.call @moecomm_rt_layout

// bf16 rows, i32 ids, weighted; the counts matrix through a tensor.cast;
// the experts: a loop over the local experts' segments (sized by
// tokens_per_expert, as examples/*.mlir's @ffn_layer), each its own matmul.
// CHECK-LABEL: func.func @grouped(
// CHECK-SAME: %[[X:[^:]*]]: tensor<?x16xbf16>, %[[IDX:[^:]*]]: tensor<?x2xi32>, %[[W:[^:]*]]: tensor<?x2xf32>,
// CHECK-NOT: moecomm.permute_tokens
// CHECK-NOT: moecomm.all_to_all
// CHECK-NOT: moecomm.sort_chunks
// CHECK: %[[R:.*]], %{{.*}}, %[[TPE:.*]], %[[H:.*]] = moecomm.dispatch %[[X]], %[[IDX]], %[[W]] topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
// CHECK: tensor.dim %[[R]], %{{.*}} : tensor<?x16xbf16>
// CHECK: %[[Y:.*]]:2 = scf.for
// CHECK: tensor.extract %[[TPE]][
// CHECK: tensor.extract_slice %[[R]][
// CHECK: linalg.matmul
// CHECK-NOT: moecomm.unsort_chunks
// CHECK-NOT: moecomm.all_to_all
// CHECK: %[[OUT:.*]] = moecomm.combine %[[Y]]#0, %[[H]] weighted : tensor<?x16xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xbf16>
// CHECK-NOT: moecomm.unpermute_tokens
// CHECK: return %[[OUT]]
func.func @grouped(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>,
                   %experts: tensor<2x16x16xbf16>) -> tensor<?x16xbf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c0_i64 = arith.constant 0 : i64
  %zero = arith.constant 0.0 : bf16
  %ones = arith.constant dense<1> : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xbf16>, tensor<?x2xi32>
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
  %matrix, %unused = moecomm.all_to_all %groups, %ones topology<ranks = 4, ranks_per_node = 2>
      : tensor<4x2xi64>, tensor<4xi64>
  %counts = tensor.cast %matrix : tensor<?x2xi64> to tensor<4x2xi64>
  %sorted, %tpe = moecomm.sort_chunks %recv, %counts : tensor<?x16xbf16>, tensor<4x2xi64>
  %n = tensor.dim %sorted, %c0 : tensor<?x16xbf16>
  %y0 = tensor.empty(%n) : tensor<?x16xbf16>
  %y:2 = scf.for %e = %c0 to %c2 step %c1 iter_args(%acc = %y0, %off = %c0) -> (tensor<?x16xbf16>, index) {
    %cnt64 = tensor.extract %tpe[%e] : tensor<2xi64>
    %cnt = arith.index_cast %cnt64 : i64 to index
    %seg = tensor.extract_slice %sorted[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xbf16> to tensor<?x16xbf16>
    %we = tensor.extract_slice %experts[%e, 0, 0] [1, 16, 16] [1, 1, 1] : tensor<2x16x16xbf16> to tensor<16x16xbf16>
    %z0 = tensor.empty(%cnt) : tensor<?x16xbf16>
    %z = linalg.fill ins(%zero : bf16) outs(%z0 : tensor<?x16xbf16>) -> tensor<?x16xbf16>
    %o = linalg.matmul ins(%seg, %we : tensor<?x16xbf16>, tensor<16x16xbf16>) outs(%z : tensor<?x16xbf16>) -> tensor<?x16xbf16>
    %next = tensor.insert_slice %o into %acc[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xbf16> into tensor<?x16xbf16>
    %off2 = arith.addi %off, %cnt : index
    scf.yield %next, %off2 : tensor<?x16xbf16>, index
  }
  %unsorted = moecomm.unsort_chunks %y#0, %counts : tensor<?x16xbf16>, tensor<4x2xi64>
  %back, %back_counts = moecomm.all_to_all %unsorted, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xbf16>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xbf16>, tensor<?x2xi64>
  return %out : tensor<?x16xbf16>
}

// f32 rows, i64 ids, a static token count, no weights: the dispatch gets
// all-ones weights, the combine is unweighted. The counts matrix is used
// directly, the expert doubles its rows.
// CHECK-LABEL: func.func @grouped_unweighted(
// CHECK-SAME: %[[X:[^:]*]]: tensor<8x16xf32>, %[[IDX:[^:]*]]: tensor<8x2xi64>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<8x2xf32>
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[ONES:.*]] = linalg.fill ins(%[[ONE]] : f32) outs(%[[E]] : tensor<8x2xf32>) -> tensor<8x2xf32>
// CHECK: %[[R:.*]], %{{.*}}, %[[TPE:.*]], %[[H:.*]] = moecomm.dispatch %[[X]], %[[IDX]], %[[ONES]] topology<ranks = 4, ranks_per_node = 4, experts = 16> : tensor<8x16xf32>, tensor<8x2xi64>, tensor<8x2xf32>
// CHECK: %[[Y:.*]] = arith.addf %[[R]], %[[R]] : tensor<?x16xf32>
// CHECK: %[[OUT:.*]] = moecomm.combine %[[Y]], %[[H]] : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 4, experts = 16> -> tensor<8x16xf32>
// CHECK: return %[[OUT]], %[[TPE]]
func.func @grouped_unweighted(%x: tensor<8x16xf32>, %idx: tensor<8x2xi64>) -> (tensor<8x16xf32>, tensor<4xi64>) {
  %c0_i64 = arith.constant 0 : i64
  %ones = arith.constant dense<1> : tensor<4xi32>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(16) : tensor<8x16xf32>, tensor<8x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 4] : tensor<16xi64> into tensor<4x4xi64>
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x4xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %acc, %a : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 4>
      : tensor<?x16xf32>, tensor<4xi64>
  %matrix, %unused = moecomm.all_to_all %groups, %ones topology<ranks = 4, ranks_per_node = 4>
      : tensor<4x4xi64>, tensor<4xi32>
  %sorted, %tpe = moecomm.sort_chunks %recv, %matrix : tensor<?x16xf32>, tensor<?x4xi64>
  %y = arith.addf %sorted, %sorted : tensor<?x16xf32>
  %unsorted = moecomm.unsort_chunks %y, %matrix : tensor<?x16xf32>, tensor<?x4xi64>
  %back, %back_counts = moecomm.all_to_all %unsorted, %recv_counts topology<ranks = 4, ranks_per_node = 4>
      : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots : tensor<?x16xf32>, tensor<8x2xi64>
  return %out, %tpe : tensor<8x16xf32>, tensor<4xi64>
}
