// An MoE layer written for `moecomm-pipeline target=cuda` (docs/pipeline.md,
// "The cuda target"): every op on device buffers is stream work, so the whole
// layer runs on a GPU: dispatch of f32 rows (DESIGN.md §8's shape scaled to
// H = 8: 4 ranks, 8 experts, top-2), then per local expert a GEMM pair on its
// segment of the received rows (cuBLAS through the runtime's
// moecomm_rt_matmul_f32 on the bound stream; OpenBLAS on the host device),
// then the weighted combine. The loop over local experts runs on the host:
// its bounds are tokens_per_expert and expert_offsets, which the cuda target
// keeps in host memory (the plan is made on the host). The expert weight is a
// constant, copied to the device once per call (moecomm-device-buffers). It
// is the identity, y = (seg I) I^T (plain and B transposed), so y = seg
// exactly and moecomm-run checks the results bit for bit; any other weight
// runs the same way.
//
//   moecomm-opt examples/cuda-expert-gemm.mlir --moecomm-pipeline="target=cuda"
//   moecomm-run examples/cuda-expert-gemm.mlir --ranks 4 --ranks-per-node 2 --experts 8 --topk 2 --hidden 8 --wire-dtype f32
//   moecomm-run examples/cuda-expert-gemm.mlir --target cuda --ranks 4 --ranks-per-node 2 --experts 8 --topk 2 --hidden 8 --wire-dtype f32
//
// On a GPU (one process, the nccl backend; mpirun for more ranks):
// `moecomm-run examples/cuda-expert-gemm.mlir --backend nccl --ranks 1
// --experts 8 --topk 2 --hidden 8 --wire-dtype f32`.

func.func @moe_layer(%x: tensor<?x8xf32>, %topk_idx: tensor<?x2xi32>, %topk_weights: tensor<?x2xf32>)
    -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xf32>, tensor<?xi64>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %eye = arith.constant dense<[
      [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
      [0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
      [0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
      [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0],
      [0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
      [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0],
      [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0],
      [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]]> : tensor<8x8xf32>
  %recv, %recv_weights, %tokens_per_expert, %handle = moecomm.dispatch %x, %topk_idx, %topk_weights
      topology<ranks = 4, ranks_per_node = 2, experts = 8>
      : tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  // Dynamic, so that a ranks= retarget (another E/W) keeps the loop valid.
  %counts = tensor.cast %tokens_per_expert : tensor<2xi64> to tensor<?xi64>
  %offsets = moecomm.expert_offsets %handle : !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8>
  %starts = tensor.cast %offsets : tensor<3xi64> to tensor<?xi64>
  %n = tensor.dim %counts, %c0 : tensor<?xi64>
  %rows = tensor.dim %recv, %c0 : tensor<?x8xf32>
  %y_init = tensor.empty(%rows) : tensor<?x8xf32>
  // Local expert e on rows [offsets[e], offsets[e] + tokens_per_expert[e]);
  // padding rows (align) stay unwritten: combine never reads them.
  %y = scf.for %e = %c0 to %n step %c1 iter_args(%acc = %y_init) -> (tensor<?x8xf32>) {
    %cnt64 = tensor.extract %counts[%e] : tensor<?xi64>
    %cnt = arith.index_cast %cnt64 : i64 to index
    %off64 = tensor.extract %starts[%e] : tensor<?xi64>
    %off = arith.index_cast %off64 : i64 to index
    %seg = tensor.extract_slice %recv[%off, 0] [%cnt, 8] [1, 1] : tensor<?x8xf32> to tensor<?x8xf32>
    %p_e = tensor.empty(%cnt) : tensor<?x8xf32>
    %p0 = linalg.fill ins(%zero : f32) outs(%p_e : tensor<?x8xf32>) -> tensor<?x8xf32>
    %p = linalg.matmul ins(%seg, %eye : tensor<?x8xf32>, tensor<8x8xf32>) outs(%p0 : tensor<?x8xf32>) -> tensor<?x8xf32>
    %t_e = tensor.empty(%cnt) : tensor<?x8xf32>
    %t0 = linalg.fill ins(%zero : f32) outs(%t_e : tensor<?x8xf32>) -> tensor<?x8xf32>
    %t = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
        ins(%p, %eye : tensor<?x8xf32>, tensor<8x8xf32>) outs(%t0 : tensor<?x8xf32>) -> tensor<?x8xf32>
    %acc2 = tensor.insert_slice %t into %acc[%off, 0] [%cnt, 8] [1, 1] : tensor<?x8xf32> into tensor<?x8xf32>
    scf.yield %acc2 : tensor<?x8xf32>
  }
  %out = moecomm.combine %y, %handle weighted
      : tensor<?x8xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x8xf32>
  return %out, %recv, %recv_weights, %counts : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xf32>, tensor<?xi64>
}
