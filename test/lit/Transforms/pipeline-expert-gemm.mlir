// The expert GEMMs through moecomm-pipeline, run on MLIR's JIT (mlir-runner,
// which resolves the runtime's moecomm_rt_matmul_f32 from
// libmoecomm_runtime.so): expert-gemm=blas (the default) calls OpenBLAS,
// expert-gemm=loops makes loops; both give C0 + A B and C0 + A Bt^T within
// f32 rounding of each other (a different summation order). Odd M, K, N;
// A is rows of a larger buffer (a segment of the received rows), Bt one
// expert of a stacked weight tensor, C starts non-zero (linalg.matmul
// accumulates).
// RUN: moecomm-opt %s --moecomm-pipeline=expert-gemm=blas -o %t.blas.mlir
// RUN: moecomm-opt %s --moecomm-pipeline=expert-gemm=loops -o %t.loops.mlir
// RUN: FileCheck %s --check-prefix=BLAS < %t.blas.mlir
// RUN: FileCheck %s --check-prefix=LOOPS < %t.loops.mlir
// RUN: moecomm-opt %s --moecomm-pipeline | FileCheck %s --check-prefix=BLAS
// RUN: mlir-runner %t.blas.mlir -e main -entry-point-result=void -shared-libs=%moecomm_lib/libmoecomm_runtime.so,%llvm_lib/libmlir_runner_utils.so,%llvm_lib/libmlir_c_runner_utils.so > %t.blas.out
// RUN: mlir-runner %t.loops.mlir -e main -entry-point-result=void -shared-libs=%moecomm_lib/libmoecomm_runtime.so,%llvm_lib/libmlir_runner_utils.so,%llvm_lib/libmlir_c_runner_utils.so > %t.loops.out
// RUN: %python %S/Inputs/same_within.py %t.blas.out %t.loops.out --values 2146 | FileCheck %s --check-prefix=SAME
// RUN: FileCheck %s --check-prefix=RESULT < %t.blas.out

// BLAS: llvm.call @_mlir_ciface_moecomm_rt_matmul_f32
// BLAS-COUNT-2: llvm.call @moecomm_rt_matmul_f32(
// LOOPS-NOT: moecomm_rt_matmul_f32
// SAME: 2146 values, max relative difference {{[0-9.e+-]+}} <= 1e-05
// RESULT-COUNT-2: Unranked Memref base@ = {{.*}} rank = 2 offset = 0 sizes = [37, 29] strides = [29, 1] data =

#id = affine_map<(i, j) -> (i, j)>

// C0 + A B and C0 + A Bt^T, on tensors like the experts' projections.
func.func @gemms(%rows: tensor<41x67xf32>, %b: tensor<67x29xf32>, %w: tensor<2x29x67xf32>, %c0: tensor<37x29xf32>)
    -> (tensor<37x29xf32>, tensor<37x29xf32>) {
  %a = tensor.extract_slice %rows[3, 0] [37, 67] [1, 1] : tensor<41x67xf32> to tensor<37x67xf32>
  %bt = tensor.extract_slice %w[1, 0, 0] [1, 29, 67] [1, 1, 1] : tensor<2x29x67xf32> to tensor<29x67xf32>
  %p = linalg.matmul ins(%a, %b : tensor<37x67xf32>, tensor<67x29xf32>) outs(%c0 : tensor<37x29xf32>) -> tensor<37x29xf32>
  %t = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %bt : tensor<37x67xf32>, tensor<29x67xf32>) outs(%c0 : tensor<37x29xf32>) -> tensor<37x29xf32>
  return %p, %t : tensor<37x29xf32>, tensor<37x29xf32>
}

// sin(0.37 i + 0.11 j + phase): values in [-1, 1] that no order sums exactly.
func.func @wave(%init: tensor<?x?xf32>, %phase: f32) -> tensor<?x?xf32> {
  %r = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%init : tensor<?x?xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %jj = arith.index_cast %j : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %fj = arith.sitofp %jj : i32 to f32
    %si = arith.constant 0.37 : f32
    %sj = arith.constant 0.11 : f32
    %x = arith.mulf %fi, %si : f32
    %y = arith.mulf %fj, %sj : f32
    %xy = arith.addf %x, %y : f32
    %v = arith.addf %xy, %phase : f32
    %s = math.sin %v : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

func.func @input(%rows: index, %cols: index, %phase: f32) -> tensor<?x?xf32> {
  %e = tensor.empty(%rows, %cols) : tensor<?x?xf32>
  %r = func.call @wave(%e, %phase) : (tensor<?x?xf32>, f32) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

func.func @main() {
  %c2 = arith.constant 2 : index
  %c29 = arith.constant 29 : index
  %c37 = arith.constant 37 : index
  %c41 = arith.constant 41 : index
  %c58 = arith.constant 58 : index
  %c67 = arith.constant 67 : index
  %p0 = arith.constant 0.0 : f32
  %p1 = arith.constant 1.0 : f32
  %p2 = arith.constant 2.0 : f32
  %p3 = arith.constant 3.0 : f32
  %rows = func.call @input(%c41, %c67, %p0) : (index, index, f32) -> tensor<?x?xf32>
  %b = func.call @input(%c67, %c29, %p1) : (index, index, f32) -> tensor<?x?xf32>
  %w2 = func.call @input(%c58, %c67, %p2) : (index, index, f32) -> tensor<?x?xf32>
  %c0 = func.call @input(%c37, %c29, %p3) : (index, index, f32) -> tensor<?x?xf32>
  %rows_s = tensor.cast %rows : tensor<?x?xf32> to tensor<41x67xf32>
  %b_s = tensor.cast %b : tensor<?x?xf32> to tensor<67x29xf32>
  %w2_s = tensor.cast %w2 : tensor<?x?xf32> to tensor<58x67xf32>
  %w = tensor.expand_shape %w2_s [[0, 1], [2]] output_shape [2, 29, 67] : tensor<58x67xf32> into tensor<2x29x67xf32>
  %c0_s = tensor.cast %c0 : tensor<?x?xf32> to tensor<37x29xf32>
  %p, %t = func.call @gemms(%rows_s, %b_s, %w, %c0_s) : (tensor<41x67xf32>, tensor<67x29xf32>, tensor<2x29x67xf32>, tensor<37x29xf32>) -> (tensor<37x29xf32>, tensor<37x29xf32>)
  %pm = bufferization.to_buffer %p : tensor<37x29xf32> to memref<37x29xf32>
  %tm = bufferization.to_buffer %t : tensor<37x29xf32> to memref<37x29xf32>
  %pu = memref.cast %pm : memref<37x29xf32> to memref<*xf32>
  %tu = memref.cast %tm : memref<37x29xf32> to memref<*xf32>
  func.call @printMemrefF32(%pu) : (memref<*xf32>) -> ()
  func.call @printMemrefF32(%tu) : (memref<*xf32>) -> ()
  return
}

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}
