// A small SwiGLU expert-FFN layer in the form of the examples' @ffn_layer
// and @ffn_training_step (H 16, top-2, I 8, 4 experts on 2 ranks), and
// @ffn_wrong_gate, which multiplies by W_up where W_gate belongs: for
// ffn-small.test.

#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#mm_a = affine_map<(m, n, k) -> (m, k)>
#mm_bt = affine_map<(m, n, k) -> (n, k)>
#mm_c = affine_map<(m, n, k) -> (m, n)>

// Forward with the model's routed experts: dispatch -> per local expert e,
// y = (silu(x W_gate[e]) * (x W_up[e])) W_down[e] on its rows (f32
// accumulation, bf16 out) -> weighted combine. Weights in nn.Linear's
// layout: W_gate^T, W_up^T [E/W, 8, 16] f32 and W_down^T [E/W, 16, 8], the
// rank's local experts in order.
func.func @ffn_layer(%x: tensor<?x16xbf16>, %topk_idx: tensor<?x2xi32>, %topk_weights: tensor<?x2xf32>,
                     %w_gate: tensor<?x8x16xf32>, %w_up: tensor<?x8x16xf32>, %w_down: tensor<?x16x8xf32>)
    -> tensor<?x16xbf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %recv, %recv_weights, %tokens_per_expert, %handle = moecomm.dispatch %x, %topk_idx, %topk_weights
      topology<ranks = 2, ranks_per_node = 1, experts = 4>
      : tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  // Dynamic, so that a ranks= retarget (another E/W) keeps the loop valid.
  %counts = tensor.cast %tokens_per_expert : tensor<2xi64> to tensor<?xi64>
  %n = tensor.dim %counts, %c0 : tensor<?xi64>
  // Where local expert e's segment of recv starts (the group offsets
  // of a grouped GEMM): with align(N) (moecomm-run --align, the
  // pipeline's align=) a multiple of N, the real rows first, then
  // padding rows that combine never reads. Cast like %counts.
  %offsets = moecomm.expert_offsets %handle : !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>
  %starts = tensor.cast %offsets : tensor<3xi64> to tensor<?xi64>
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
      : tensor<?x16xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4> -> tensor<?x16xbf16>
  return %out : tensor<?x16xbf16>
}

// Training step with the model's routed experts: the forward above, then
// the backward communication on the same layout with the FFN's input
// gradient in between (weight gradients need no communication and are not
// computed): grad_y = w * cached_dispatch(grad_out) per row; per local
// expert, recomputing g = x W_gate, u = x W_up from its segment,
// grad_in = (grad_h * u * silu'(g)) W_gate^T + (grad_h * silu(g)) W_up^T
// with grad_h = grad_y W_down^T; grad_x = the unweighted combine of grad_in.
func.func @ffn_training_step(%x: tensor<?x16xbf16>, %topk_idx: tensor<?x2xi32>, %topk_weights: tensor<?x2xf32>, %grad_out: tensor<?x16xbf16>,
                             %w_gate: tensor<?x8x16xf32>, %w_up: tensor<?x8x16xf32>, %w_down: tensor<?x16x8xf32>)
    -> (tensor<?x16xbf16>, tensor<?x16xbf16>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %recv, %recv_weights, %tokens_per_expert, %handle = moecomm.dispatch %x, %topk_idx, %topk_weights
      topology<ranks = 2, ranks_per_node = 1, experts = 4>
      : tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  // Dynamic, so that a ranks= retarget (another E/W) keeps the loop valid.
  %counts = tensor.cast %tokens_per_expert : tensor<2xi64> to tensor<?xi64>
  %n = tensor.dim %counts, %c0 : tensor<?xi64>
  // Where local expert e's segment of recv starts (the group offsets
  // of a grouped GEMM): with align(N) (moecomm-run --align, the
  // pipeline's align=) a multiple of N, the real rows first, then
  // padding rows that combine never reads. Cast like %counts.
  %offsets = moecomm.expert_offsets %handle : !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>
  %starts = tensor.cast %offsets : tensor<3xi64> to tensor<?xi64>
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
      : tensor<?x16xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4> -> tensor<?x16xbf16>
  %grad_recv = moecomm.cached_dispatch %grad_out, %handle
      : tensor<?x16xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>
  %grad_init = tensor.empty(%y_rows) : tensor<?x16xbf16>
  %grad_y = linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%grad_recv, %recv_weights : tensor<?x16xbf16>, tensor<?xf32>) outs(%grad_init : tensor<?x16xbf16>) {
  ^bb0(%gr: bf16, %rw: f32, %unused: bf16):
    %gf = arith.extf %gr : bf16 to f32
    %scaled = arith.mulf %gf, %rw : f32
    %r = arith.truncf %scaled : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<?x16xbf16>
  // Experts backward: local expert e's input gradient on its segment.
  %gx_rows = tensor.dim %grad_y, %c0 : tensor<?x16xbf16>
  %gx_init = tensor.empty(%gx_rows) : tensor<?x16xbf16>
  %gx = scf.for %e = %c0 to %n step %c1 iter_args(%acc = %gx_init) -> (tensor<?x16xbf16>) {
    %cnt64 = tensor.extract %counts[%e] : tensor<?xi64>
    %cnt = arith.index_cast %cnt64 : i64 to index
    %off64 = tensor.extract %starts[%e] : tensor<?xi64>
    %off = arith.index_cast %off64 : i64 to index
    %seg = tensor.extract_slice %recv[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xbf16> to tensor<?x16xbf16>
    %gseg = tensor.extract_slice %grad_y[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xbf16> to tensor<?x16xbf16>
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
    %gyf_e = tensor.empty(%cnt) : tensor<?x16xf32>
    %gyf = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%gseg : tensor<?x16xbf16>) outs(%gyf_e : tensor<?x16xf32>) {
    ^bb0(%a: bf16, %unused: f32):
      %v = arith.extf %a : bf16 to f32
      linalg.yield %v : f32
    } -> tensor<?x16xf32>
    // grad_h = grad_y W_down^T: a plain product, %wd holds W_down^T.
    %gh = linalg.matmul ins(%gyf, %wd : tensor<?x16xf32>, tensor<16x8xf32>) outs(%zi : tensor<?x8xf32>) -> tensor<?x8xf32>
    // grad_g = grad_h * u * silu'(g), grad_u = grad_h * silu(g), with
    // sig = 1 / (1 + exp(-g)), silu(g) = g sig, silu'(g) = sig (1 + g (1 - sig)).
    %gg, %gu = linalg.generic {indexing_maps = [#rows, #rows, #rows, #rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%g, %u, %gh : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) outs(%zi_e, %zi_e : tensor<?x8xf32>, tensor<?x8xf32>) {
    ^bb0(%gv: f32, %uv: f32, %ghv: f32, %unused0: f32, %unused1: f32):
      %ng = arith.negf %gv : f32
      %ex = math.exp %ng : f32
      %den = arith.addf %one, %ex : f32
      %sig = arith.divf %one, %den : f32
      %s = arith.mulf %gv, %sig : f32
      %oms = arith.subf %one, %sig : f32
      %gterm = arith.mulf %gv, %oms : f32
      %opg = arith.addf %one, %gterm : f32
      %ds = arith.mulf %sig, %opg : f32
      %ghu = arith.mulf %ghv, %uv : f32
      %ggv = arith.mulf %ghu, %ds : f32
      %guv = arith.mulf %ghv, %s : f32
      linalg.yield %ggv, %guv : f32, f32
    } -> (tensor<?x8xf32>, tensor<?x8xf32>)
    // grad_in = grad_g W_gate^T + grad_u W_up^T (one f32 accumulator; plain
    // products, %wg and %wu hold the transposes).
    %zh_e = tensor.empty(%cnt) : tensor<?x16xf32>
    %zh = linalg.fill ins(%zero : f32) outs(%zh_e : tensor<?x16xf32>) -> tensor<?x16xf32>
    %gin0 = linalg.matmul ins(%gg, %wg : tensor<?x8xf32>, tensor<8x16xf32>) outs(%zh : tensor<?x16xf32>) -> tensor<?x16xf32>
    %gin = linalg.matmul ins(%gu, %wu : tensor<?x8xf32>, tensor<8x16xf32>) outs(%gin0 : tensor<?x16xf32>) -> tensor<?x16xf32>
    %gb_e = tensor.empty(%cnt) : tensor<?x16xbf16>
    %gb = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%gin : tensor<?x16xf32>) outs(%gb_e : tensor<?x16xbf16>) {
    ^bb0(%a: f32, %unused: bf16):
      %v = arith.truncf %a : f32 to bf16
      linalg.yield %v : bf16
    } -> tensor<?x16xbf16>
    %acc2 = tensor.insert_slice %gb into %acc[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xbf16> into tensor<?x16xbf16>
    scf.yield %acc2 : tensor<?x16xbf16>
  }
  %grad_x = moecomm.combine %gx, %handle
      : tensor<?x16xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4> -> tensor<?x16xbf16>
  return %out, %grad_x : tensor<?x16xbf16>, tensor<?x16xbf16>
}

func.func @ffn_wrong_gate(%x: tensor<?x16xbf16>, %topk_idx: tensor<?x2xi32>, %topk_weights: tensor<?x2xf32>,
                     %w_gate: tensor<?x8x16xf32>, %w_up: tensor<?x8x16xf32>, %w_down: tensor<?x16x8xf32>)
    -> tensor<?x16xbf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %recv, %recv_weights, %tokens_per_expert, %handle = moecomm.dispatch %x, %topk_idx, %topk_weights
      topology<ranks = 2, ranks_per_node = 1, experts = 4>
      : tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  // Dynamic, so that a ranks= retarget (another E/W) keeps the loop valid.
  %counts = tensor.cast %tokens_per_expert : tensor<2xi64> to tensor<?xi64>
  %n = tensor.dim %counts, %c0 : tensor<?xi64>
  // Where local expert e's segment of recv starts (the group offsets
  // of a grouped GEMM): with align(N) (moecomm-run --align, the
  // pipeline's align=) a multiple of N, the real rows first, then
  // padding rows that combine never reads. Cast like %counts.
  %offsets = moecomm.expert_offsets %handle : !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>
  %starts = tensor.cast %offsets : tensor<3xi64> to tensor<?xi64>
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
    %wg = tensor.extract_slice %w_up[%e, 0, 0] [1, 8, 16] [1, 1, 1] : tensor<?x8x16xf32> to tensor<8x16xf32>
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
      : tensor<?x16xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4> -> tensor<?x16xbf16>
  return %out : tensor<?x16xbf16>
}
