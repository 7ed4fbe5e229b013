// A tiny MoE layer (hidden 64, 8 experts, top-2, 4 ranks as 2 nodes x 2) for
// moecomm_add_aot_graph and moecomm-aot from the installed package:
// dispatch -> identity experts -> weighted combine, as in examples/.
func.func @moe_layer(%x: tensor<?x64xbf16>, %topk_idx: tensor<?x2xi32>, %topk_weights: tensor<?x2xf32>)
    -> (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xf32>, tensor<?xi64>) attributes {llvm.emit_c_interface} {
  %recv, %recv_weights, %tokens_per_expert, %handle = moecomm.dispatch %x, %topk_idx, %topk_weights
      topology<ranks = 4, ranks_per_node = 2, experts = 8>
      : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %handle weighted
      : tensor<?x64xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x64xbf16>
  %counts = tensor.cast %tokens_per_expert : tensor<2xi64> to tensor<?xi64>
  return %out, %recv, %recv_weights, %counts : tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xf32>, tensor<?xi64>
}
