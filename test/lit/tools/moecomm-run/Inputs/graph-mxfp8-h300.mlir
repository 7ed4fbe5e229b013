// A layer of 4 ranks (2 nodes x 2), 8 experts, top-2 whose dispatch declares
// the mxfp8 wire, with H = 300: not a multiple of 32 or 128, so the last
// block of every row is partial (e8m0-wires.test, compiled ahead of time).
func.func @moe_layer(%x: tensor<?x300xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>)
    -> (tensor<?x300xbf16>, tensor<?x300xbf16>, tensor<?xf32>, tensor<?xi64>)
    attributes {llvm.emit_c_interface} {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> wire<mxfp8>
      : tensor<?x300xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %h weighted
      : tensor<?x300xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x300xbf16>
  %counts = tensor.cast %tpe : tensor<2xi64> to tensor<?xi64>
  return %out, %recv, %rw, %counts : tensor<?x300xbf16>, tensor<?x300xbf16>, tensor<?xf32>, tensor<?xi64>
}
