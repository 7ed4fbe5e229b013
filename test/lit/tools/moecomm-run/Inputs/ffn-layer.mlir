// A layer of SwiGLU expert FFNs in the expert-FFN IR form (a loop over the
// local experts' segments of the expert-major received rows) whose weights
// are computed inside the graph, so the graph keeps moecomm-run's contract:
// @ffn_layer (x, topk_idx, topk_weights) -> out and its @training_step
// (..., grad_out) -> (out, grad_x). H = 16, I = 8, 8 experts on 4 ranks
// (2 local experts each; run it with --ranks 4 --experts 8 --hidden 16).
// ffn-chunks.test runs it with several --chunks and compares the outputs;
// its experts are not the identity, so moecomm-run's verification (which
// assumes identity experts) fails with exit status 1.
#rows = affine_map<(d0, d1) -> (d0, d1)>
#w3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// The experts' weights (gate, up: 2 x H x I; down: 2 x I x H), the same in
// every call.
func.func private @weights() -> (tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x8x16xf32>) {
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c8 = arith.constant 8 : index
  %c17 = arith.constant 17 : index
  // w[e][a][b] = ((s*e + 3a + 5b) mod 17 - 8) / 32, exact in f32.
  %scale = arith.constant 3.125e-02 : f32
  %w_gate_init = tensor.empty() : tensor<2x16x8xf32>
  %w_gate = linalg.generic {indexing_maps = [#w3], iterator_types = ["parallel", "parallel", "parallel"]} outs(%w_gate_init : tensor<2x16x8xf32>) {
  ^bb0(%unused: f32):
    %e = linalg.index 0 : index
    %a = linalg.index 1 : index
    %b = linalg.index 2 : index
    %s = arith.constant 7 : index
    %se = arith.muli %e, %s : index
    %a3 = arith.muli %a, %c3 : index
    %b5 = arith.muli %b, %c5 : index
    %t0 = arith.addi %se, %a3 : index
    %t1 = arith.addi %t0, %b5 : index
    %m = arith.remui %t1, %c17 : index
    %v = arith.subi %m, %c8 : index
    %i = arith.index_cast %v : index to i32
    %f = arith.sitofp %i : i32 to f32
    %r = arith.mulf %f, %scale : f32
    linalg.yield %r : f32
  } -> tensor<2x16x8xf32>
  %w_up_init = tensor.empty() : tensor<2x16x8xf32>
  %w_up = linalg.generic {indexing_maps = [#w3], iterator_types = ["parallel", "parallel", "parallel"]} outs(%w_up_init : tensor<2x16x8xf32>) {
  ^bb0(%unused: f32):
    %e = linalg.index 0 : index
    %a = linalg.index 1 : index
    %b = linalg.index 2 : index
    %s = arith.constant 11 : index
    %se = arith.muli %e, %s : index
    %a3 = arith.muli %a, %c3 : index
    %b5 = arith.muli %b, %c5 : index
    %t0 = arith.addi %se, %a3 : index
    %t1 = arith.addi %t0, %b5 : index
    %m = arith.remui %t1, %c17 : index
    %v = arith.subi %m, %c8 : index
    %i = arith.index_cast %v : index to i32
    %f = arith.sitofp %i : i32 to f32
    %r = arith.mulf %f, %scale : f32
    linalg.yield %r : f32
  } -> tensor<2x16x8xf32>
  %w_down_init = tensor.empty() : tensor<2x8x16xf32>
  %w_down = linalg.generic {indexing_maps = [#w3], iterator_types = ["parallel", "parallel", "parallel"]} outs(%w_down_init : tensor<2x8x16xf32>) {
  ^bb0(%unused: f32):
    %e = linalg.index 0 : index
    %a = linalg.index 1 : index
    %b = linalg.index 2 : index
    %s = arith.constant 13 : index
    %se = arith.muli %e, %s : index
    %a3 = arith.muli %a, %c3 : index
    %b5 = arith.muli %b, %c5 : index
    %t0 = arith.addi %se, %a3 : index
    %t1 = arith.addi %t0, %b5 : index
    %m = arith.remui %t1, %c17 : index
    %v = arith.subi %m, %c8 : index
    %i = arith.index_cast %v : index to i32
    %f = arith.sitofp %i : i32 to f32
    %r = arith.mulf %f, %scale : f32
    linalg.yield %r : f32
  } -> tensor<2x8x16xf32>
  return %w_gate, %w_up, %w_down : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x8x16xf32>
}

func.func @ffn_layer(%x: tensor<?x16xbf16>, %topk_idx: tensor<?x2xi32>, %topk_weights: tensor<?x2xf32>)
    -> tensor<?x16xbf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %w_gate, %w_up, %w_down = call @weights() : () -> (tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x8x16xf32>)
  %recv, %recv_weights, %tpe, %handle = moecomm.dispatch %x, %topk_idx, %topk_weights
      topology<ranks = 4, ranks_per_node = 2, experts = 8>
      : tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %counts = tensor.cast %tpe : tensor<2xi64> to tensor<?xi64>
  %n = tensor.dim %counts, %c0 : tensor<?xi64>
  %rows = tensor.dim %recv, %c0 : tensor<?x16xbf16>
  %init = tensor.empty(%rows) : tensor<?x16xbf16>
  %y:2 = scf.for %e = %c0 to %n step %c1 iter_args(%acc = %init, %off = %c0) -> (tensor<?x16xbf16>, index) {
    %cnt64 = tensor.extract %counts[%e] : tensor<?xi64>
    %cnt = arith.index_cast %cnt64 : i64 to index
    %seg = tensor.extract_slice %recv[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xbf16> to tensor<?x16xbf16>
    %wg = tensor.extract_slice %w_gate[%e, 0, 0] [1, 16, 8] [1, 1, 1] : tensor<2x16x8xf32> to tensor<16x8xf32>
    %wu = tensor.extract_slice %w_up[%e, 0, 0] [1, 16, 8] [1, 1, 1] : tensor<2x16x8xf32> to tensor<16x8xf32>
    %wd = tensor.extract_slice %w_down[%e, 0, 0] [1, 8, 16] [1, 1, 1] : tensor<2x8x16xf32> to tensor<8x16xf32>
    %xe = tensor.empty(%cnt) : tensor<?x16xf32>
    %xf = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%seg : tensor<?x16xbf16>) outs(%xe : tensor<?x16xf32>) {
    ^bb0(%a: bf16, %o: f32):
      %r = arith.extf %a : bf16 to f32
      linalg.yield %r : f32
    } -> tensor<?x16xf32>
    %ie = tensor.empty(%cnt) : tensor<?x8xf32>
    %iz = linalg.fill ins(%zero : f32) outs(%ie : tensor<?x8xf32>) -> tensor<?x8xf32>
    %g = linalg.matmul ins(%xf, %wg : tensor<?x16xf32>, tensor<16x8xf32>) outs(%iz : tensor<?x8xf32>) -> tensor<?x8xf32>
    %u = linalg.matmul ins(%xf, %wu : tensor<?x16xf32>, tensor<16x8xf32>) outs(%iz : tensor<?x8xf32>) -> tensor<?x8xf32>
    // silu(g) * u, silu(g) = g / (1 + exp(-g))
    %h = linalg.generic {indexing_maps = [#rows, #rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%g, %u : tensor<?x8xf32>, tensor<?x8xf32>) outs(%ie : tensor<?x8xf32>) {
    ^bb0(%gv: f32, %uv: f32, %o: f32):
      %ng = arith.negf %gv : f32
      %ex = math.exp %ng : f32
      %den = arith.addf %ex, %one : f32
      %silu = arith.divf %gv, %den : f32
      %hv = arith.mulf %silu, %uv : f32
      linalg.yield %hv : f32
    } -> tensor<?x8xf32>
    %dz = linalg.fill ins(%zero : f32) outs(%xe : tensor<?x16xf32>) -> tensor<?x16xf32>
    %d = linalg.matmul ins(%h, %wd : tensor<?x8xf32>, tensor<8x16xf32>) outs(%dz : tensor<?x16xf32>) -> tensor<?x16xf32>
    %ye = tensor.empty(%cnt) : tensor<?x16xbf16>
    %yb = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%d : tensor<?x16xf32>) outs(%ye : tensor<?x16xbf16>) {
    ^bb0(%a: f32, %o: bf16):
      %r = arith.truncf %a : f32 to bf16
      linalg.yield %r : bf16
    } -> tensor<?x16xbf16>
    %acc2 = tensor.insert_slice %yb into %acc[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xbf16> into tensor<?x16xbf16>
    %off2 = arith.addi %off, %cnt : index
    scf.yield %acc2, %off2 : tensor<?x16xbf16>, index
  }
  %out = moecomm.combine %y#0, %handle weighted
      : tensor<?x16xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xbf16>
  return %out : tensor<?x16xbf16>
}

// The training step of the same layer (grad_out is moecomm-run's x): the
// forward, then grad_out dispatched on the forward's layout, scaled by
// recv_weights, and the FFN's input gradient per segment, recomputing g and
// u from the segment: grad_h = grad_y W_down^T, grad_g = grad_h * u *
// silu'(g), grad_u = grad_h * silu(g), grad_in = grad_g W_gate^T + grad_u
// W_up^T (silu'(g) = s (1 + g (1 - s)), s = 1 / (1 + exp(-g))).
#a = affine_map<(m, n, k) -> (m, k)>
#bt = affine_map<(m, n, k) -> (n, k)>
#c = affine_map<(m, n, k) -> (m, n)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @training_step(%x: tensor<?x16xbf16>, %topk_idx: tensor<?x2xi32>, %topk_weights: tensor<?x2xf32>,
                         %grad_out: tensor<?x16xbf16>)
    -> (tensor<?x16xbf16>, tensor<?x16xbf16>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %w_gate, %w_up, %w_down = call @weights() : () -> (tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x8x16xf32>)
  %recv, %recv_weights, %tpe, %handle = moecomm.dispatch %x, %topk_idx, %topk_weights
      topology<ranks = 4, ranks_per_node = 2, experts = 8>
      : tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %counts = tensor.cast %tpe : tensor<2xi64> to tensor<?xi64>
  %n = tensor.dim %counts, %c0 : tensor<?xi64>
  %rows = tensor.dim %recv, %c0 : tensor<?x16xbf16>
  %init = tensor.empty(%rows) : tensor<?x16xbf16>
  %y:2 = scf.for %e = %c0 to %n step %c1 iter_args(%acc = %init, %off = %c0) -> (tensor<?x16xbf16>, index) {
    %cnt64 = tensor.extract %counts[%e] : tensor<?xi64>
    %cnt = arith.index_cast %cnt64 : i64 to index
    %seg = tensor.extract_slice %recv[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xbf16> to tensor<?x16xbf16>
    %wg = tensor.extract_slice %w_gate[%e, 0, 0] [1, 16, 8] [1, 1, 1] : tensor<2x16x8xf32> to tensor<16x8xf32>
    %wu = tensor.extract_slice %w_up[%e, 0, 0] [1, 16, 8] [1, 1, 1] : tensor<2x16x8xf32> to tensor<16x8xf32>
    %wd = tensor.extract_slice %w_down[%e, 0, 0] [1, 8, 16] [1, 1, 1] : tensor<2x8x16xf32> to tensor<8x16xf32>
    %xe = tensor.empty(%cnt) : tensor<?x16xf32>
    %xf = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%seg : tensor<?x16xbf16>) outs(%xe : tensor<?x16xf32>) {
    ^bb0(%a: bf16, %o: f32):
      %r = arith.extf %a : bf16 to f32
      linalg.yield %r : f32
    } -> tensor<?x16xf32>
    %ie = tensor.empty(%cnt) : tensor<?x8xf32>
    %iz = linalg.fill ins(%zero : f32) outs(%ie : tensor<?x8xf32>) -> tensor<?x8xf32>
    %g = linalg.matmul ins(%xf, %wg : tensor<?x16xf32>, tensor<16x8xf32>) outs(%iz : tensor<?x8xf32>) -> tensor<?x8xf32>
    %u = linalg.matmul ins(%xf, %wu : tensor<?x16xf32>, tensor<16x8xf32>) outs(%iz : tensor<?x8xf32>) -> tensor<?x8xf32>
    %h = linalg.generic {indexing_maps = [#rows, #rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%g, %u : tensor<?x8xf32>, tensor<?x8xf32>) outs(%ie : tensor<?x8xf32>) {
    ^bb0(%gv: f32, %uv: f32, %o: f32):
      %ng = arith.negf %gv : f32
      %ex = math.exp %ng : f32
      %den = arith.addf %ex, %one : f32
      %silu = arith.divf %gv, %den : f32
      %hv = arith.mulf %silu, %uv : f32
      linalg.yield %hv : f32
    } -> tensor<?x8xf32>
    %dz = linalg.fill ins(%zero : f32) outs(%xe : tensor<?x16xf32>) -> tensor<?x16xf32>
    %d = linalg.matmul ins(%h, %wd : tensor<?x8xf32>, tensor<8x16xf32>) outs(%dz : tensor<?x16xf32>) -> tensor<?x16xf32>
    %ye = tensor.empty(%cnt) : tensor<?x16xbf16>
    %yb = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%d : tensor<?x16xf32>) outs(%ye : tensor<?x16xbf16>) {
    ^bb0(%a: f32, %o: bf16):
      %r = arith.truncf %a : f32 to bf16
      linalg.yield %r : bf16
    } -> tensor<?x16xbf16>
    %acc2 = tensor.insert_slice %yb into %acc[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xbf16> into tensor<?x16xbf16>
    %off2 = arith.addi %off, %cnt : index
    scf.yield %acc2, %off2 : tensor<?x16xbf16>, index
  }
  %out = moecomm.combine %y#0, %handle weighted
      : tensor<?x16xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xbf16>
  %grad_recv = moecomm.cached_dispatch %grad_out, %handle
      : tensor<?x16xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8>
  %gye = tensor.empty(%rows) : tensor<?x16xf32>
  %grad_y = linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%grad_recv, %recv_weights : tensor<?x16xbf16>, tensor<?xf32>) outs(%gye : tensor<?x16xf32>) {
  ^bb0(%gv: bf16, %w: f32, %o: f32):
    %gf = arith.extf %gv : bf16 to f32
    %s = arith.mulf %gf, %w : f32
    linalg.yield %s : f32
  } -> tensor<?x16xf32>
  %binit = tensor.empty(%rows) : tensor<?x16xbf16>
  %gx:2 = scf.for %e = %c0 to %n step %c1 iter_args(%acc = %binit, %off = %c0) -> (tensor<?x16xbf16>, index) {
    %cnt64 = tensor.extract %counts[%e] : tensor<?xi64>
    %cnt = arith.index_cast %cnt64 : i64 to index
    %seg = tensor.extract_slice %recv[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xbf16> to tensor<?x16xbf16>
    %gseg = tensor.extract_slice %grad_y[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xf32> to tensor<?x16xf32>
    %wg = tensor.extract_slice %w_gate[%e, 0, 0] [1, 16, 8] [1, 1, 1] : tensor<2x16x8xf32> to tensor<16x8xf32>
    %wu = tensor.extract_slice %w_up[%e, 0, 0] [1, 16, 8] [1, 1, 1] : tensor<2x16x8xf32> to tensor<16x8xf32>
    %wd = tensor.extract_slice %w_down[%e, 0, 0] [1, 8, 16] [1, 1, 1] : tensor<2x8x16xf32> to tensor<8x16xf32>
    %xe = tensor.empty(%cnt) : tensor<?x16xf32>
    %xf = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%seg : tensor<?x16xbf16>) outs(%xe : tensor<?x16xf32>) {
    ^bb0(%a: bf16, %o: f32):
      %r = arith.extf %a : bf16 to f32
      linalg.yield %r : f32
    } -> tensor<?x16xf32>
    %ie = tensor.empty(%cnt) : tensor<?x8xf32>
    %iz = linalg.fill ins(%zero : f32) outs(%ie : tensor<?x8xf32>) -> tensor<?x8xf32>
    %g = linalg.matmul ins(%xf, %wg : tensor<?x16xf32>, tensor<16x8xf32>) outs(%iz : tensor<?x8xf32>) -> tensor<?x8xf32>
    %u = linalg.matmul ins(%xf, %wu : tensor<?x16xf32>, tensor<16x8xf32>) outs(%iz : tensor<?x8xf32>) -> tensor<?x8xf32>
    %gh = linalg.matmul indexing_maps = [#a, #bt, #c]
        ins(%gseg, %wd : tensor<?x16xf32>, tensor<8x16xf32>) outs(%iz : tensor<?x8xf32>) -> tensor<?x8xf32>
    %grads:2 = linalg.generic {indexing_maps = [#rows, #rows, #rows, #rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%g, %u, %gh : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) outs(%ie, %ie : tensor<?x8xf32>, tensor<?x8xf32>) {
    ^bb0(%gv: f32, %uv: f32, %ghv: f32, %o0: f32, %o1: f32):
      %ng = arith.negf %gv : f32
      %ex = math.exp %ng : f32
      %den = arith.addf %ex, %one : f32
      %sig = arith.divf %one, %den : f32
      %silu = arith.mulf %gv, %sig : f32
      %oms = arith.subf %one, %sig : f32
      %t = arith.mulf %gv, %oms : f32
      %t1 = arith.addf %t, %one : f32
      %dsilu = arith.mulf %sig, %t1 : f32
      %ghu = arith.mulf %ghv, %uv : f32
      %gg = arith.mulf %ghu, %dsilu : f32
      %gu = arith.mulf %ghv, %silu : f32
      linalg.yield %gg, %gu : f32, f32
    } -> (tensor<?x8xf32>, tensor<?x8xf32>)
    %dz = linalg.fill ins(%zero : f32) outs(%xe : tensor<?x16xf32>) -> tensor<?x16xf32>
    %gi0 = linalg.matmul indexing_maps = [#a, #bt, #c]
        ins(%grads#0, %wg : tensor<?x8xf32>, tensor<16x8xf32>) outs(%dz : tensor<?x16xf32>) -> tensor<?x16xf32>
    %gi = linalg.matmul indexing_maps = [#a, #bt, #c]
        ins(%grads#1, %wu : tensor<?x8xf32>, tensor<16x8xf32>) outs(%gi0 : tensor<?x16xf32>) -> tensor<?x16xf32>
    %ye = tensor.empty(%cnt) : tensor<?x16xbf16>
    %gb = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%gi : tensor<?x16xf32>) outs(%ye : tensor<?x16xbf16>) {
    ^bb0(%a: f32, %o: bf16):
      %r = arith.truncf %a : f32 to bf16
      linalg.yield %r : bf16
    } -> tensor<?x16xbf16>
    %acc2 = tensor.insert_slice %gb into %acc[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xbf16> into tensor<?x16xbf16>
    %off2 = arith.addi %off, %cnt : index
    scf.yield %acc2, %off2 : tensor<?x16xbf16>, index
  }
  %grad_x = moecomm.combine %gx#0, %handle
      : tensor<?x16xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xbf16>
  return %out, %grad_x : tensor<?x16xbf16>, tensor<?x16xbf16>
}
