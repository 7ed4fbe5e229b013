// moecomm-matmul-to-blas on bufferized IR: f32 linalg.matmul with rows of
// unit inner stride (plain, or B transposed, as the experts' input gradients
// write it) becomes a call of the runtime's moecomm_rt_matmul_f32 (i32
// transposeB, A, B, C on the ABI's fully dynamic layout, one declaration);
// the runtime accumulates into C as linalg.matmul does. Everything else is
// left for convert-linalg-to-loops, without a diagnostic.
// RUN: moecomm-opt %s --moecomm-matmul-to-blas | FileCheck %s

// CHECK: func.func private @moecomm_rt_matmul_f32(i32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) attributes {llvm.emit_c_interface}
// CHECK-NOT: func.func private @moecomm_rt_matmul_f32

// CHECK-LABEL: func.func @plain(
// CHECK-SAME: %[[A:.*]]: memref<?x64xf32>, %[[B:.*]]: memref<64x32xf32>, %[[C:.*]]: memref<?x32xf32>)
// CHECK-DAG: %[[NOTRANS:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[CA:.*]] = memref.cast %[[A]] : memref<?x64xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK-DAG: %[[CB:.*]] = memref.cast %[[B]] : memref<64x32xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK-DAG: %[[CC:.*]] = memref.cast %[[C]] : memref<?x32xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: call @moecomm_rt_matmul_f32(%[[NOTRANS]], %[[CA]], %[[CB]], %[[CC]])
// CHECK-NOT: linalg.matmul
// CHECK: memref.dealloc %[[C]]
func.func @plain(%a: memref<?x64xf32>, %b: memref<64x32xf32>, %c: memref<?x32xf32>) {
  linalg.matmul ins(%a, %b : memref<?x64xf32>, memref<64x32xf32>) outs(%c : memref<?x32xf32>)
  memref.dealloc %c : memref<?x32xf32>
  return
}

// grad_h = grad_y W_down^T on a segment of the received rows and one local
// expert's weights (subviews: strided rows, dynamic offsets).
// CHECK-LABEL: func.func @transposed_b_subviews(
// CHECK-DAG: %[[TRANS:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[SEG:.*]] = memref.subview %{{.*}}[%{{.*}}, 0] [%{{.*}}, 64] [1, 1]
// CHECK-DAG: %[[W:.*]] = memref.subview %{{.*}}[%{{.*}}, 0, 0] [1, 32, 64] [1, 1, 1]
// CHECK-DAG: %[[CSEG:.*]] = memref.cast %[[SEG]] : memref<?x64xf32, strided<[64, 1], offset: ?>> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK-DAG: %[[CW:.*]] = memref.cast %[[W]] : memref<32x64xf32, strided<[64, 1], offset: ?>> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: call @moecomm_rt_matmul_f32(%[[TRANS]], %[[CSEG]], %[[CW]], %{{.*}})
// CHECK-NOT: linalg.matmul
func.func @transposed_b_subviews(%rows: memref<?x64xf32>, %w: memref<?x32x64xf32>, %c: memref<?x32xf32>, %off: index, %cnt: index, %e: index) {
  %seg = memref.subview %rows[%off, 0] [%cnt, 64] [1, 1] : memref<?x64xf32> to memref<?x64xf32, strided<[64, 1], offset: ?>>
  %we = memref.subview %w[%e, 0, 0] [1, 32, 64] [1, 1, 1] : memref<?x32x64xf32> to memref<32x64xf32, strided<[64, 1], offset: ?>>
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%seg, %we : memref<?x64xf32, strided<[64, 1], offset: ?>>, memref<32x64xf32, strided<[64, 1], offset: ?>>)
      outs(%c : memref<?x32xf32>)
  return
}

// A dynamic row stride is expressible (lda); a dynamic inner stride is not
// known to be 1: loops.
// CHECK-LABEL: func.func @row_stride_dynamic(
// CHECK: call @moecomm_rt_matmul_f32
// CHECK-NOT: linalg.matmul
func.func @row_stride_dynamic(%a: memref<?x64xf32, strided<[?, 1], offset: ?>>, %b: memref<64x32xf32>, %c: memref<?x32xf32>) {
  linalg.matmul ins(%a, %b : memref<?x64xf32, strided<[?, 1], offset: ?>>, memref<64x32xf32>) outs(%c : memref<?x32xf32>)
  return
}

// CHECK-LABEL: func.func @left_alone(
// CHECK-NOT: call
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<?x64xbf16>, memref<64x32xbf16>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<?x64xf32, strided<[?, ?], offset: ?>>, memref<64x32xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<?x64xf32, strided<[128, 2]>>, memref<64x32xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<?x64xf32, strided<[0, 1]>>, memref<64x32xf32>)
// CHECK: linalg.matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}] ins(%{{.*}}, %{{.*}} : memref<64x?xf32>, memref<64x32xf32>)
// CHECK: linalg.matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}] ins(%{{.*}}, %{{.*}} : memref<64xf32>, memref<64x32xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<64x32xf32>)
// CHECK-NOT: call
// CHECK: return
func.func @left_alone(%abf: memref<?x64xbf16>, %bbf: memref<64x32xbf16>, %c: memref<?x32xf32>,
                      %adyn: memref<?x64xf32, strided<[?, ?], offset: ?>>,
                      %astep: memref<?x64xf32, strided<[128, 2]>>,
                      %arow: memref<?x64xf32, strided<[0, 1]>>,
                      %at: memref<64x?xf32>, %abc: memref<64xf32>, %b: memref<64x32xf32>,
                      %ta: tensor<?x64xf32>, %tb: tensor<64x32xf32>, %tc: tensor<?x32xf32>) -> tensor<?x32xf32> {
  // Other element types.
  linalg.matmul ins(%abf, %bbf : memref<?x64xbf16>, memref<64x32xbf16>) outs(%c : memref<?x32xf32>)
  // An inner stride not statically 1.
  linalg.matmul ins(%adyn, %b : memref<?x64xf32, strided<[?, ?], offset: ?>>, memref<64x32xf32>) outs(%c : memref<?x32xf32>)
  linalg.matmul ins(%astep, %b : memref<?x64xf32, strided<[128, 2]>>, memref<64x32xf32>) outs(%c : memref<?x32xf32>)
  // A row stride below the row length (one row broadcast to every row).
  linalg.matmul ins(%arow, %b : memref<?x64xf32, strided<[0, 1]>>, memref<64x32xf32>) outs(%c : memref<?x32xf32>)
  // A transposed; A broadcast.
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%at, %b : memref<64x?xf32>, memref<64x32xf32>) outs(%c : memref<?x32xf32>)
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%abc, %b : memref<64xf32>, memref<64x32xf32>) outs(%c : memref<?x32xf32>)
  // Tensors (not bufferized yet).
  %r = linalg.matmul ins(%ta, %tb : tensor<?x64xf32>, tensor<64x32xf32>) outs(%tc : tensor<?x32xf32>) -> tensor<?x32xf32>
  return %r : tensor<?x32xf32>
}
