// DESIGN §8's layer (4 ranks, 8 experts, top-2, H = 64, bf16) with
// Inputs/placement-section8.json's expert placement on its topology: 12
// slots, 3 per rank (placement-graph.test).
func.func @moe_layer(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>)
    -> (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xf32>, tensor<?xi64>)
    attributes {llvm.emit_c_interface} {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8, slots = 12, placement = array<i64: 0, 1, 5, 2, 3, 4, 4, 5, 6, 6, 7, 3>>
      : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %h weighted
      : tensor<?x64xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, slots = 12> -> tensor<?x64xbf16>
  %counts = tensor.cast %tpe : tensor<3xi64> to tensor<?xi64>
  return %out, %recv, %rw, %counts : tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xf32>, tensor<?xi64>
}
