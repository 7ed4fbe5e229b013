// RUN: moecomm-opt %s --moecomm-raise-dispatch --moecomm-cost-report -o /dev/null 2>&1 | FileCheck %s
// The cost model on a raised per-expert exchange (DeepSeek-V3's shape: 16
// ranks as 2 nodes x 8, 256 experts, top-8, H = 7168, bf16, 4096 tokens per
// rank): the per_expert lines are what the original program sends (one row
// per token and expert), the hierarchical lines what the raised one sends
// once split (one row per token and destination node across the nodes).

// CHECK: moecomm-cost-report: dispatch at
// CHECK-NEXT: ranks=16 ranks_per_node=8 experts=256 topk=8 hidden=7168 wire=bf16 tokens/rank=4096 (static)
// CHECK: per_expert   dispatch  0     global              3758.096        3288.334
// CHECK: hierarchical dispatch  0     inter_node           936.245           0.000
// CHECK: hierarchical dispatch  1     intra_node             0.000        5362.681

func.func @layer(%x: tensor<4096x7168xbf16>, %idx: tensor<4096x8xi32>, %w: tensor<4096x8xf32>) -> tensor<4096x7168xbf16> {
  %zeros = arith.constant dense<0> : tensor<16xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(256) : tensor<4096x7168xbf16>, tensor<4096x8xi32>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [16, 16] : tensor<256xi64> into tensor<16x16xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<16x16xi64>) outs(%zeros : tensor<16xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 16, ranks_per_node = 8>
      : tensor<?x7168xbf16>, tensor<16xi64>
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 16, ranks_per_node = 8>
      : tensor<?x7168xbf16>, tensor<16xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<4096x8xf32>) : tensor<?x7168xbf16>, tensor<4096x8xi64>
  return %out : tensor<4096x7168xbf16>
}
