// Mixtral-8x7B MoE layer communication (examples/configs/mixtral-8x7b.json): hidden
// 4096, 8 routed experts, top-2, written for expert parallelism over 8
// ranks as 1 node(s) x 8. `ranks=` / `ranks-per-node=` of moecomm-pipeline
// (and moecomm-run's --ranks / --ranks-per-node) retarget it to any EP size
// whose ranks divide the experts.
//
// The routed experts are identity here, so moecomm-run can check every
// result against the single-process oracle; a model runs its grouped GEMM
// (row-wise) where the comments say "experts".
//
//   moecomm-opt --moecomm-pipeline="ranks=8 ranks-per-node=4" examples/mixtral-8x7b.mlir
//   moecomm-run examples/mixtral-8x7b.mlir --config mixtral-8x7b --ranks 8 --ranks-per-node 4 --routing-dist trace:mixtral-8x7b:arxiv:layer7
//   moecomm-run examples/mixtral-8x7b.mlir --entry training_step --config mixtral-8x7b --ranks 8 --ranks-per-node 4 --chunks 2

#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Forward: dispatch -> experts -> weighted combine. Also returns the
// dispatched rows, their routing weights and the per-expert counts.
func.func @moe_layer(%x: tensor<?x4096xbf16>, %topk_idx: tensor<?x2xi32>, %topk_weights: tensor<?x2xf32>)
    -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?xf32>, tensor<?xi64>) attributes {llvm.emit_c_interface} {
  %recv, %recv_weights, %tokens_per_expert, %handle = moecomm.dispatch %x, %topk_idx, %topk_weights
      topology<ranks = 8, ranks_per_node = 8, experts = 8>
      : tensor<?x4096xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  // Experts (identity): y = recv.
  %out = moecomm.combine %recv, %handle weighted
      : tensor<?x4096xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 8, experts = 8> -> tensor<?x4096xbf16>
  %counts = tensor.cast %tokens_per_expert : tensor<1xi64> to tensor<?xi64>
  return %out, %recv, %recv_weights, %counts : tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?xf32>, tensor<?xi64>
}

// Training step: the forward, then the backward communication on the same
// layout. The gradient of the weighted combine w.r.t. an expert's output row
// is grad_out of its token times the row's routing weight: a dispatch of
// grad_out along the cached layout, scaled per row. The gradient of dispatch
// is the unweighted combine of the experts' input gradients.
func.func @training_step(%x: tensor<?x4096xbf16>, %topk_idx: tensor<?x2xi32>, %topk_weights: tensor<?x2xf32>, %grad_out: tensor<?x4096xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>) attributes {llvm.emit_c_interface} {
  %recv, %recv_weights, %tokens_per_expert, %handle = moecomm.dispatch %x, %topk_idx, %topk_weights
      topology<ranks = 8, ranks_per_node = 8, experts = 8>
      : tensor<?x4096xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  // Experts forward (identity): y = recv.
  %out = moecomm.combine %recv, %handle weighted
      : tensor<?x4096xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 8, experts = 8> -> tensor<?x4096xbf16>
  %grad_recv = moecomm.cached_dispatch %grad_out, %handle
      : tensor<?x4096xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 8, experts = 8>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %grad_recv, %c0 : tensor<?x4096xbf16>
  %init = tensor.empty(%n) : tensor<?x4096xbf16>
  %grad_y = linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%grad_recv, %recv_weights : tensor<?x4096xbf16>, tensor<?xf32>) outs(%init : tensor<?x4096xbf16>) {
  ^bb0(%g: bf16, %w: f32, %unused: bf16):
    %gf = arith.extf %g : bf16 to f32
    %scaled = arith.mulf %gf, %w : f32
    %r = arith.truncf %scaled : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<?x4096xbf16>
  // Experts backward (identity): grad_recv_in = grad_y.
  %grad_x = moecomm.combine %grad_y, %handle
      : tensor<?x4096xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 8, experts = 8> -> tensor<?x4096xbf16>
  return %out, %grad_x : tensor<?x4096xbf16>, tensor<?x4096xbf16>
}
