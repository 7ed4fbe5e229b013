// The @ffn_layer of graph-ffn-small.mlir with an expert placement (6 slots
// for 4 logical experts: slots 4 and 5 replicate experts 0 and 1, EPLB's
// phy2log), so a local expert index is a slot: for ffn-placement.test.

#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#mm_a = affine_map<(m, n, k) -> (m, k)>
#mm_bt = affine_map<(m, n, k) -> (n, k)>
#mm_c = affine_map<(m, n, k) -> (m, n)>

func.func @ffn_layer(%x: tensor<?x16xbf16>, %topk_idx: tensor<?x2xi32>, %topk_weights: tensor<?x2xf32>,
                     %w_gate: tensor<?x8x16xf32>, %w_up: tensor<?x8x16xf32>, %w_down: tensor<?x16x8xf32>)
    -> tensor<?x16xbf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %recv, %recv_weights, %tokens_per_expert, %handle = moecomm.dispatch %x, %topk_idx, %topk_weights
      topology<ranks = 2, ranks_per_node = 1, experts = 4, slots = 6, placement = array<i64: 0, 1, 2, 3, 0, 1>, replica_choice = locality>
      : tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  // Dynamic, so that a ranks= retarget (another E/W) keeps the loop valid.
  %counts = tensor.cast %tokens_per_expert : tensor<3xi64> to tensor<?xi64>
  %n = tensor.dim %counts, %c0 : tensor<?xi64>
  // Where local expert e's segment of recv starts (the group offsets
  // of a grouped GEMM): with align(N) (moecomm-run --align, the
  // pipeline's align=) a multiple of N, the real rows first, then
  // padding rows that combine never reads. Cast like %counts.
  %offsets = moecomm.expert_offsets %handle : !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4, slots = 6>
  %starts = tensor.cast %offsets : tensor<4xi64> to tensor<?xi64>
  // Experts: local expert e's SwiGLU FFN on its segment of recv,
  // rows [offsets[e], offsets[e] + tokens_per_expert[e]) (expert-major);
  // y's padding rows stay unwritten.
  %y_rows = tensor.dim %recv, %c0 : tensor<?x16xbf16>
  %y_init = tensor.empty(%y_rows) : tensor<?x16xbf16>
  %y = scf.for %e = %c0 to %n step %c1 iter_args(%acc = %y_init) -> (tensor<?x16xbf16>) {
    %cnt64 = tensor.extract %counts[%e] : tensor<?xi64>
    %cnt = arith.index_cast %cnt64 : i64 to index
    %off64 = tensor.extract %starts[%e] : tensor<?xi64>
    %off = arith.index_cast %off64 : i64 to index
    %seg = tensor.extract_slice %recv[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xbf16> to tensor<?x16xbf16>
    %wg = tensor.extract_slice %w_gate[%e, 0, 0] [1, 8, 16] [1, 1, 1] : tensor<?x8x16xf32> to tensor<8x16xf32>
    %wu = tensor.extract_slice %w_up[%e, 0, 0] [1, 8, 16] [1, 1, 1] : tensor<?x8x16xf32> to tensor<8x16xf32>
    %wd = tensor.extract_slice %w_down[%e, 0, 0] [1, 16, 8] [1, 1, 1] : tensor<?x16x8xf32> to tensor<16x8xf32>
    %xf_e = tensor.empty(%cnt) : tensor<?x16xf32>
    %xf = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%seg : tensor<?x16xbf16>) outs(%xf_e : tensor<?x16xf32>) {
    ^bb0(%a: bf16, %unused: f32):
      %v = arith.extf %a : bf16 to f32
      linalg.yield %v : f32
    } -> tensor<?x16xf32>
    %zi_e = tensor.empty(%cnt) : tensor<?x8xf32>
    %zi = linalg.fill ins(%zero : f32) outs(%zi_e : tensor<?x8xf32>) -> tensor<?x8xf32>
    %g = linalg.matmul indexing_maps = [#mm_a, #mm_bt, #mm_c]
        ins(%xf, %wg : tensor<?x16xf32>, tensor<8x16xf32>) outs(%zi : tensor<?x8xf32>) -> tensor<?x8xf32>
    %u = linalg.matmul indexing_maps = [#mm_a, #mm_bt, #mm_c]
        ins(%xf, %wu : tensor<?x16xf32>, tensor<8x16xf32>) outs(%zi : tensor<?x8xf32>) -> tensor<?x8xf32>
    // h = silu(g) * u, silu(g) = g / (1 + exp(-g)).
    %h = linalg.generic {indexing_maps = [#rows, #rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%g, %u : tensor<?x8xf32>, tensor<?x8xf32>) outs(%zi_e : tensor<?x8xf32>) {
    ^bb0(%gv: f32, %uv: f32, %unused: f32):
      %ng = arith.negf %gv : f32
      %ex = math.exp %ng : f32
      %den = arith.addf %one, %ex : f32
      %s = arith.divf %gv, %den : f32
      %hv = arith.mulf %s, %uv : f32
      linalg.yield %hv : f32
    } -> tensor<?x8xf32>
    %zh_e = tensor.empty(%cnt) : tensor<?x16xf32>
    %zh = linalg.fill ins(%zero : f32) outs(%zh_e : tensor<?x16xf32>) -> tensor<?x16xf32>
    %d = linalg.matmul indexing_maps = [#mm_a, #mm_bt, #mm_c]
        ins(%h, %wd : tensor<?x8xf32>, tensor<16x8xf32>) outs(%zh : tensor<?x16xf32>) -> tensor<?x16xf32>
    %yb_e = tensor.empty(%cnt) : tensor<?x16xbf16>
    %yb = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%d : tensor<?x16xf32>) outs(%yb_e : tensor<?x16xbf16>) {
    ^bb0(%a: f32, %unused: bf16):
      %v = arith.truncf %a : f32 to bf16
      linalg.yield %v : bf16
    } -> tensor<?x16xbf16>
    %acc2 = tensor.insert_slice %yb into %acc[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xbf16> into tensor<?x16xbf16>
    scf.yield %acc2 : tensor<?x16xbf16>
  }
  %out = moecomm.combine %y, %handle weighted
      : tensor<?x16xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4, slots = 6> -> tensor<?x16xbf16>
  return %out : tensor<?x16xbf16>
}
