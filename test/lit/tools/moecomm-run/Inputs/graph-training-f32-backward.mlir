// A training step whose backward runs in f32 on bf16 tokens: the forward
// dispatches bf16 rows, the backward moves grad_out extended to f32 along
// the same layout (moecomm.cached_dispatch of f32 rows on a handle made for
// bf16), scales them by recv_weights and combines them in f32, rounding
// grad_x to bf16 once at the end (what moecomm-raise-dispatch makes of a
// per-expert backward written in f32). Identity experts; W = 4, E = 8,
// K = 4, H = 16 (training-f32-backward.test).
#rows = affine_map<(r, h) -> (r, h)>
#row = affine_map<(r, h) -> (r)>
func.func @training_step(%x: tensor<?x16xbf16>, %idx: tensor<?x4xi32>, %w: tensor<?x4xf32>, %g: tensor<?x16xbf16>)
    -> (tensor<?x16xbf16>, tensor<?x16xbf16>) attributes {llvm.emit_c_interface} {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8>
      : tensor<?x16xbf16>, tensor<?x4xi32>, tensor<?x4xf32>
  %out = moecomm.combine %recv, %h weighted
      : tensor<?x16xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xbf16>
  %gf = arith.extf %g : tensor<?x16xbf16> to tensor<?x16xf32>
  %grecv = moecomm.cached_dispatch %gf, %h : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %grecv, %c0 : tensor<?x16xf32>
  %init = tensor.empty(%n) : tensor<?x16xf32>
  %gy = linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%grecv, %rw : tensor<?x16xf32>, tensor<?xf32>) outs(%init : tensor<?x16xf32>) {
  ^bb0(%e: f32, %we: f32, %unused: f32):
    %p = arith.mulf %e, %we : f32
    linalg.yield %p : f32
  } -> tensor<?x16xf32>
  %gxf = moecomm.combine %gy, %h
      : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xf32>
  %gx = arith.truncf %gxf : tensor<?x16xf32> to tensor<?x16xbf16>
  return %out, %gx : tensor<?x16xbf16>, tensor<?x16xbf16>
}
