// Mixtral-8x7B MoE layer communication (examples/configs/mixtral-8x7b.json): hidden
// 4096, 8 routed experts, top-2, written for expert parallelism over 8
// ranks as 1 node(s) x 8. `ranks=` / `ranks-per-node=` of moecomm-pipeline
// (and moecomm-run's --ranks / --ranks-per-node) retarget it to any EP size
// whose ranks divide the experts.
//
// In @moe_layer and @training_step the routed experts are identity, so
// every result is checked against the single-process oracle (bit for bit
// where the strategy allows). @ffn_layer and @ffn_training_step run the model's real experts:
// each local expert's SwiGLU FFN (intermediate size 14336, f32 weights taken as
// arguments, which moecomm-run generates from a seed) on its segment of the
// dispatched rows, verified against the reference's experts within a
// derived tolerance (docs/moecomm-run.md, "Expert FFNs"). The segments start
// at moecomm.expert_offsets (a grouped GEMM's group offsets), so the FFNs
// run on padded segments too (align(N): moecomm-run --align, the pipeline's
// align=).
// Its 8 experts hold 5.6 GB of f32 weights, all in one process with
// --backend threads; the run verified by hand is in docs/moecomm-run.md,
// "Expert FFNs" (tens of seconds).
//
//   moecomm-opt --moecomm-pipeline="ranks=8 ranks-per-node=4" examples/mixtral-8x7b.mlir
//   moecomm-run examples/mixtral-8x7b.mlir --config mixtral-8x7b --ranks 8 --ranks-per-node 4 --routing-dist trace:mixtral-8x7b:arxiv:layer7
//   moecomm-run examples/mixtral-8x7b.mlir --entry training_step --config mixtral-8x7b --ranks 8 --ranks-per-node 4 --chunks 2

#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// linalg.matmul operand maps with a transposed B: (m, n, k) -> A(m, k), B(n, k), C(m, n).
#mm_a = affine_map<(m, n, k) -> (m, k)>
#mm_bt = affine_map<(m, n, k) -> (n, k)>
#mm_c = affine_map<(m, n, k) -> (m, n)>

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

// Forward with the model's routed experts: dispatch -> per local expert e,
// y = (silu(x W_gate[e]) * (x W_up[e])) W_down[e] on its rows (f32
// accumulation, bf16 out) -> weighted combine. Weights in nn.Linear's
// layout ([out, in], so the GEMMs read them transposed): W_gate^T, W_up^T
// [E/W, 14336, 4096] f32 and W_down^T [E/W, 4096, 14336], the rank's local experts in
// order.
func.func @ffn_layer(%x: tensor<?x4096xbf16>, %topk_idx: tensor<?x2xi32>, %topk_weights: tensor<?x2xf32>,
                     %w_gate: tensor<?x14336x4096xf32>, %w_up: tensor<?x14336x4096xf32>, %w_down: tensor<?x4096x14336xf32>)
    -> tensor<?x4096xbf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %recv, %recv_weights, %tokens_per_expert, %handle = moecomm.dispatch %x, %topk_idx, %topk_weights
      topology<ranks = 8, ranks_per_node = 8, experts = 8>
      : tensor<?x4096xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  // Dynamic, so that a ranks= retarget (another E/W) keeps the loop valid.
  %counts = tensor.cast %tokens_per_expert : tensor<1xi64> to tensor<?xi64>
  %n = tensor.dim %counts, %c0 : tensor<?xi64>
  // Where local expert e's segment of recv starts (the group offsets
  // of a grouped GEMM): with align(N) (moecomm-run --align, the
  // pipeline's align=) a multiple of N, the real rows first, then
  // padding rows that combine never reads. Cast like %counts.
  %offsets = moecomm.expert_offsets %handle : !moecomm.handle<ranks = 8, ranks_per_node = 8, experts = 8>
  %starts = tensor.cast %offsets : tensor<2xi64> to tensor<?xi64>
  // Experts: local expert e's SwiGLU FFN on its segment of recv,
  // rows [offsets[e], offsets[e] + tokens_per_expert[e]) (expert-major);
  // y's padding rows stay unwritten.
  %y_rows = tensor.dim %recv, %c0 : tensor<?x4096xbf16>
  %y_init = tensor.empty(%y_rows) : tensor<?x4096xbf16>
  %y = scf.for %e = %c0 to %n step %c1 iter_args(%acc = %y_init) -> (tensor<?x4096xbf16>) {
    %cnt64 = tensor.extract %counts[%e] : tensor<?xi64>
    %cnt = arith.index_cast %cnt64 : i64 to index
    %off64 = tensor.extract %starts[%e] : tensor<?xi64>
    %off = arith.index_cast %off64 : i64 to index
    %seg = tensor.extract_slice %recv[%off, 0] [%cnt, 4096] [1, 1] : tensor<?x4096xbf16> to tensor<?x4096xbf16>
    %wg = tensor.extract_slice %w_gate[%e, 0, 0] [1, 14336, 4096] [1, 1, 1] : tensor<?x14336x4096xf32> to tensor<14336x4096xf32>
    %wu = tensor.extract_slice %w_up[%e, 0, 0] [1, 14336, 4096] [1, 1, 1] : tensor<?x14336x4096xf32> to tensor<14336x4096xf32>
    %wd = tensor.extract_slice %w_down[%e, 0, 0] [1, 4096, 14336] [1, 1, 1] : tensor<?x4096x14336xf32> to tensor<4096x14336xf32>
    %xf_e = tensor.empty(%cnt) : tensor<?x4096xf32>
    %xf = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%seg : tensor<?x4096xbf16>) outs(%xf_e : tensor<?x4096xf32>) {
    ^bb0(%a: bf16, %unused: f32):
      %v = arith.extf %a : bf16 to f32
      linalg.yield %v : f32
    } -> tensor<?x4096xf32>
    %zi_e = tensor.empty(%cnt) : tensor<?x14336xf32>
    %zi = linalg.fill ins(%zero : f32) outs(%zi_e : tensor<?x14336xf32>) -> tensor<?x14336xf32>
    %g = linalg.matmul indexing_maps = [#mm_a, #mm_bt, #mm_c]
        ins(%xf, %wg : tensor<?x4096xf32>, tensor<14336x4096xf32>) outs(%zi : tensor<?x14336xf32>) -> tensor<?x14336xf32>
    %u = linalg.matmul indexing_maps = [#mm_a, #mm_bt, #mm_c]
        ins(%xf, %wu : tensor<?x4096xf32>, tensor<14336x4096xf32>) outs(%zi : tensor<?x14336xf32>) -> tensor<?x14336xf32>
    // h = silu(g) * u, silu(g) = g / (1 + exp(-g)).
    %h = linalg.generic {indexing_maps = [#rows, #rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%g, %u : tensor<?x14336xf32>, tensor<?x14336xf32>) outs(%zi_e : tensor<?x14336xf32>) {
    ^bb0(%gv: f32, %uv: f32, %unused: f32):
      %ng = arith.negf %gv : f32
      %ex = math.exp %ng : f32
      %den = arith.addf %one, %ex : f32
      %s = arith.divf %gv, %den : f32
      %hv = arith.mulf %s, %uv : f32
      linalg.yield %hv : f32
    } -> tensor<?x14336xf32>
    %zh_e = tensor.empty(%cnt) : tensor<?x4096xf32>
    %zh = linalg.fill ins(%zero : f32) outs(%zh_e : tensor<?x4096xf32>) -> tensor<?x4096xf32>
    %d = linalg.matmul indexing_maps = [#mm_a, #mm_bt, #mm_c]
        ins(%h, %wd : tensor<?x14336xf32>, tensor<4096x14336xf32>) outs(%zh : tensor<?x4096xf32>) -> tensor<?x4096xf32>
    %yb_e = tensor.empty(%cnt) : tensor<?x4096xbf16>
    %yb = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%d : tensor<?x4096xf32>) outs(%yb_e : tensor<?x4096xbf16>) {
    ^bb0(%a: f32, %unused: bf16):
      %v = arith.truncf %a : f32 to bf16
      linalg.yield %v : bf16
    } -> tensor<?x4096xbf16>
    %acc2 = tensor.insert_slice %yb into %acc[%off, 0] [%cnt, 4096] [1, 1] : tensor<?x4096xbf16> into tensor<?x4096xbf16>
    scf.yield %acc2 : tensor<?x4096xbf16>
  }
  %out = moecomm.combine %y, %handle weighted
      : tensor<?x4096xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 8, experts = 8> -> tensor<?x4096xbf16>
  return %out : tensor<?x4096xbf16>
}

// Training step with the model's routed experts: the forward above, then
// the backward communication on the same layout with the FFN's input
// gradient in between (weight gradients need no communication and are not
// computed): grad_y = w * cached_dispatch(grad_out) per row; per local
// expert, recomputing g = x W_gate, u = x W_up from its segment,
// grad_in = (grad_h * u * silu'(g)) W_gate^T + (grad_h * silu(g)) W_up^T
// with grad_h = grad_y W_down^T; grad_x = the unweighted combine of grad_in.
func.func @ffn_training_step(%x: tensor<?x4096xbf16>, %topk_idx: tensor<?x2xi32>, %topk_weights: tensor<?x2xf32>, %grad_out: tensor<?x4096xbf16>,
                             %w_gate: tensor<?x14336x4096xf32>, %w_up: tensor<?x14336x4096xf32>, %w_down: tensor<?x4096x14336xf32>)
    -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %recv, %recv_weights, %tokens_per_expert, %handle = moecomm.dispatch %x, %topk_idx, %topk_weights
      topology<ranks = 8, ranks_per_node = 8, experts = 8>
      : tensor<?x4096xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  // Dynamic, so that a ranks= retarget (another E/W) keeps the loop valid.
  %counts = tensor.cast %tokens_per_expert : tensor<1xi64> to tensor<?xi64>
  %n = tensor.dim %counts, %c0 : tensor<?xi64>
  // Where local expert e's segment of recv starts (the group offsets
  // of a grouped GEMM): with align(N) (moecomm-run --align, the
  // pipeline's align=) a multiple of N, the real rows first, then
  // padding rows that combine never reads. Cast like %counts.
  %offsets = moecomm.expert_offsets %handle : !moecomm.handle<ranks = 8, ranks_per_node = 8, experts = 8>
  %starts = tensor.cast %offsets : tensor<2xi64> to tensor<?xi64>
  // Experts: local expert e's SwiGLU FFN on its segment of recv,
  // rows [offsets[e], offsets[e] + tokens_per_expert[e]) (expert-major);
  // y's padding rows stay unwritten.
  %y_rows = tensor.dim %recv, %c0 : tensor<?x4096xbf16>
  %y_init = tensor.empty(%y_rows) : tensor<?x4096xbf16>
  %y = scf.for %e = %c0 to %n step %c1 iter_args(%acc = %y_init) -> (tensor<?x4096xbf16>) {
    %cnt64 = tensor.extract %counts[%e] : tensor<?xi64>
    %cnt = arith.index_cast %cnt64 : i64 to index
    %off64 = tensor.extract %starts[%e] : tensor<?xi64>
    %off = arith.index_cast %off64 : i64 to index
    %seg = tensor.extract_slice %recv[%off, 0] [%cnt, 4096] [1, 1] : tensor<?x4096xbf16> to tensor<?x4096xbf16>
    %wg = tensor.extract_slice %w_gate[%e, 0, 0] [1, 14336, 4096] [1, 1, 1] : tensor<?x14336x4096xf32> to tensor<14336x4096xf32>
    %wu = tensor.extract_slice %w_up[%e, 0, 0] [1, 14336, 4096] [1, 1, 1] : tensor<?x14336x4096xf32> to tensor<14336x4096xf32>
    %wd = tensor.extract_slice %w_down[%e, 0, 0] [1, 4096, 14336] [1, 1, 1] : tensor<?x4096x14336xf32> to tensor<4096x14336xf32>
    %xf_e = tensor.empty(%cnt) : tensor<?x4096xf32>
    %xf = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%seg : tensor<?x4096xbf16>) outs(%xf_e : tensor<?x4096xf32>) {
    ^bb0(%a: bf16, %unused: f32):
      %v = arith.extf %a : bf16 to f32
      linalg.yield %v : f32
    } -> tensor<?x4096xf32>
    %zi_e = tensor.empty(%cnt) : tensor<?x14336xf32>
    %zi = linalg.fill ins(%zero : f32) outs(%zi_e : tensor<?x14336xf32>) -> tensor<?x14336xf32>
    %g = linalg.matmul indexing_maps = [#mm_a, #mm_bt, #mm_c]
        ins(%xf, %wg : tensor<?x4096xf32>, tensor<14336x4096xf32>) outs(%zi : tensor<?x14336xf32>) -> tensor<?x14336xf32>
    %u = linalg.matmul indexing_maps = [#mm_a, #mm_bt, #mm_c]
        ins(%xf, %wu : tensor<?x4096xf32>, tensor<14336x4096xf32>) outs(%zi : tensor<?x14336xf32>) -> tensor<?x14336xf32>
    // h = silu(g) * u, silu(g) = g / (1 + exp(-g)).
    %h = linalg.generic {indexing_maps = [#rows, #rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%g, %u : tensor<?x14336xf32>, tensor<?x14336xf32>) outs(%zi_e : tensor<?x14336xf32>) {
    ^bb0(%gv: f32, %uv: f32, %unused: f32):
      %ng = arith.negf %gv : f32
      %ex = math.exp %ng : f32
      %den = arith.addf %one, %ex : f32
      %s = arith.divf %gv, %den : f32
      %hv = arith.mulf %s, %uv : f32
      linalg.yield %hv : f32
    } -> tensor<?x14336xf32>
    %zh_e = tensor.empty(%cnt) : tensor<?x4096xf32>
    %zh = linalg.fill ins(%zero : f32) outs(%zh_e : tensor<?x4096xf32>) -> tensor<?x4096xf32>
    %d = linalg.matmul indexing_maps = [#mm_a, #mm_bt, #mm_c]
        ins(%h, %wd : tensor<?x14336xf32>, tensor<4096x14336xf32>) outs(%zh : tensor<?x4096xf32>) -> tensor<?x4096xf32>
    %yb_e = tensor.empty(%cnt) : tensor<?x4096xbf16>
    %yb = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%d : tensor<?x4096xf32>) outs(%yb_e : tensor<?x4096xbf16>) {
    ^bb0(%a: f32, %unused: bf16):
      %v = arith.truncf %a : f32 to bf16
      linalg.yield %v : bf16
    } -> tensor<?x4096xbf16>
    %acc2 = tensor.insert_slice %yb into %acc[%off, 0] [%cnt, 4096] [1, 1] : tensor<?x4096xbf16> into tensor<?x4096xbf16>
    scf.yield %acc2 : tensor<?x4096xbf16>
  }
  %out = moecomm.combine %y, %handle weighted
      : tensor<?x4096xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 8, experts = 8> -> tensor<?x4096xbf16>
  %grad_recv = moecomm.cached_dispatch %grad_out, %handle
      : tensor<?x4096xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 8, experts = 8>
  %grad_init = tensor.empty(%y_rows) : tensor<?x4096xbf16>
  %grad_y = linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%grad_recv, %recv_weights : tensor<?x4096xbf16>, tensor<?xf32>) outs(%grad_init : tensor<?x4096xbf16>) {
  ^bb0(%gr: bf16, %rw: f32, %unused: bf16):
    %gf = arith.extf %gr : bf16 to f32
    %scaled = arith.mulf %gf, %rw : f32
    %r = arith.truncf %scaled : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<?x4096xbf16>
  // Experts backward: local expert e's input gradient on its segment.
  %gx_rows = tensor.dim %grad_y, %c0 : tensor<?x4096xbf16>
  %gx_init = tensor.empty(%gx_rows) : tensor<?x4096xbf16>
  %gx = scf.for %e = %c0 to %n step %c1 iter_args(%acc = %gx_init) -> (tensor<?x4096xbf16>) {
    %cnt64 = tensor.extract %counts[%e] : tensor<?xi64>
    %cnt = arith.index_cast %cnt64 : i64 to index
    %off64 = tensor.extract %starts[%e] : tensor<?xi64>
    %off = arith.index_cast %off64 : i64 to index
    %seg = tensor.extract_slice %recv[%off, 0] [%cnt, 4096] [1, 1] : tensor<?x4096xbf16> to tensor<?x4096xbf16>
    %gseg = tensor.extract_slice %grad_y[%off, 0] [%cnt, 4096] [1, 1] : tensor<?x4096xbf16> to tensor<?x4096xbf16>
    %wg = tensor.extract_slice %w_gate[%e, 0, 0] [1, 14336, 4096] [1, 1, 1] : tensor<?x14336x4096xf32> to tensor<14336x4096xf32>
    %wu = tensor.extract_slice %w_up[%e, 0, 0] [1, 14336, 4096] [1, 1, 1] : tensor<?x14336x4096xf32> to tensor<14336x4096xf32>
    %wd = tensor.extract_slice %w_down[%e, 0, 0] [1, 4096, 14336] [1, 1, 1] : tensor<?x4096x14336xf32> to tensor<4096x14336xf32>
    %xf_e = tensor.empty(%cnt) : tensor<?x4096xf32>
    %xf = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%seg : tensor<?x4096xbf16>) outs(%xf_e : tensor<?x4096xf32>) {
    ^bb0(%a: bf16, %unused: f32):
      %v = arith.extf %a : bf16 to f32
      linalg.yield %v : f32
    } -> tensor<?x4096xf32>
    %zi_e = tensor.empty(%cnt) : tensor<?x14336xf32>
    %zi = linalg.fill ins(%zero : f32) outs(%zi_e : tensor<?x14336xf32>) -> tensor<?x14336xf32>
    %g = linalg.matmul indexing_maps = [#mm_a, #mm_bt, #mm_c]
        ins(%xf, %wg : tensor<?x4096xf32>, tensor<14336x4096xf32>) outs(%zi : tensor<?x14336xf32>) -> tensor<?x14336xf32>
    %u = linalg.matmul indexing_maps = [#mm_a, #mm_bt, #mm_c]
        ins(%xf, %wu : tensor<?x4096xf32>, tensor<14336x4096xf32>) outs(%zi : tensor<?x14336xf32>) -> tensor<?x14336xf32>
    %gyf_e = tensor.empty(%cnt) : tensor<?x4096xf32>
    %gyf = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%gseg : tensor<?x4096xbf16>) outs(%gyf_e : tensor<?x4096xf32>) {
    ^bb0(%a: bf16, %unused: f32):
      %v = arith.extf %a : bf16 to f32
      linalg.yield %v : f32
    } -> tensor<?x4096xf32>
    // grad_h = grad_y W_down^T: a plain product, %wd holds W_down^T.
    %gh = linalg.matmul ins(%gyf, %wd : tensor<?x4096xf32>, tensor<4096x14336xf32>) outs(%zi : tensor<?x14336xf32>) -> tensor<?x14336xf32>
    // grad_g = grad_h * u * silu'(g), grad_u = grad_h * silu(g), with
    // sig = 1 / (1 + exp(-g)), silu(g) = g sig, silu'(g) = sig (1 + g (1 - sig)).
    %gg, %gu = linalg.generic {indexing_maps = [#rows, #rows, #rows, #rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%g, %u, %gh : tensor<?x14336xf32>, tensor<?x14336xf32>, tensor<?x14336xf32>) outs(%zi_e, %zi_e : tensor<?x14336xf32>, tensor<?x14336xf32>) {
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
    } -> (tensor<?x14336xf32>, tensor<?x14336xf32>)
    // grad_in = grad_g W_gate^T + grad_u W_up^T (one f32 accumulator; plain
    // products, %wg and %wu hold the transposes).
    %zh_e = tensor.empty(%cnt) : tensor<?x4096xf32>
    %zh = linalg.fill ins(%zero : f32) outs(%zh_e : tensor<?x4096xf32>) -> tensor<?x4096xf32>
    %gin0 = linalg.matmul ins(%gg, %wg : tensor<?x14336xf32>, tensor<14336x4096xf32>) outs(%zh : tensor<?x4096xf32>) -> tensor<?x4096xf32>
    %gin = linalg.matmul ins(%gu, %wu : tensor<?x14336xf32>, tensor<14336x4096xf32>) outs(%gin0 : tensor<?x4096xf32>) -> tensor<?x4096xf32>
    %gb_e = tensor.empty(%cnt) : tensor<?x4096xbf16>
    %gb = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%gin : tensor<?x4096xf32>) outs(%gb_e : tensor<?x4096xbf16>) {
    ^bb0(%a: f32, %unused: bf16):
      %v = arith.truncf %a : f32 to bf16
      linalg.yield %v : bf16
    } -> tensor<?x4096xbf16>
    %acc2 = tensor.insert_slice %gb into %acc[%off, 0] [%cnt, 4096] [1, 1] : tensor<?x4096xbf16> into tensor<?x4096xbf16>
    scf.yield %acc2 : tensor<?x4096xbf16>
  }
  %grad_x = moecomm.combine %gx, %handle
      : tensor<?x4096xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 8, experts = 8> -> tensor<?x4096xbf16>
  return %out, %grad_x : tensor<?x4096xbf16>, tensor<?x4096xbf16>
}
