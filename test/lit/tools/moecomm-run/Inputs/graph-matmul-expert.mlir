// DESIGN §8's layer (4 ranks, 8 experts, top-2, H = 64, bf16) whose expert
// is two f32 GEMMs with the identity, y = (recv I) I^T (plain and B
// transposed): exactly recv (each sum has one non-zero product), so
// moecomm-run's identity-expert check still holds bitwise, while the
// GEMMs go through moecomm_rt_matmul_f32 (expert-gemm.test).
#id = affine_map<(i, j) -> (i, j)>


func.func @moe_layer(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>)
    -> (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xf32>, tensor<?xi64>)
    attributes {llvm.emit_c_interface} {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8>
      : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %recv, %c0 : tensor<?x64xbf16>
  %eye0 = tensor.empty() : tensor<64x64xf32>
  %eye = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%eye0 : tensor<64x64xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %same = arith.cmpi eq, %i, %j : index
    %one = arith.constant 1.0 : f32
    %v = arith.select %same, %one, %zero : f32
    linalg.yield %v : f32
  } -> tensor<64x64xf32>
  %xf0 = tensor.empty(%n) : tensor<?x64xf32>
  %xf = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%recv : tensor<?x64xbf16>) outs(%xf0 : tensor<?x64xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %e = arith.extf %a : bf16 to f32
    linalg.yield %e : f32
  } -> tensor<?x64xf32>
  %acc0 = tensor.empty(%n) : tensor<?x64xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc0 : tensor<?x64xf32>) -> tensor<?x64xf32>
  %p = linalg.matmul ins(%xf, %eye : tensor<?x64xf32>, tensor<64x64xf32>) outs(%acc : tensor<?x64xf32>) -> tensor<?x64xf32>
  %t = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%p, %eye : tensor<?x64xf32>, tensor<64x64xf32>) outs(%acc : tensor<?x64xf32>) -> tensor<?x64xf32>
  %y0 = tensor.empty(%n) : tensor<?x64xbf16>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<?x64xf32>) outs(%y0 : tensor<?x64xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %b = arith.truncf %a : f32 to bf16
    linalg.yield %b : bf16
  } -> tensor<?x64xbf16>
  %out = moecomm.combine %y, %h weighted
      : tensor<?x64xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x64xbf16>
  %counts = tensor.cast %tpe : tensor<2xi64> to tensor<?xi64>
  return %out, %recv, %rw, %counts : tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xf32>, tensor<?xi64>
}
