// moecomm.all_to_all of i64 rows (metadata such as Megatron-Core's
// per-expert counts, one row per peer) lowers like float rows: the counts
// call, a receive buffer of i64 rows, moecomm_rt_all_to_all_i64_<counts>.
// RUN: moecomm-opt %s --convert-moecomm-to-runtime | FileCheck %s
// RUN: moecomm-opt %s --moecomm-pipeline | FileCheck %s --check-prefix=LLVM

// CHECK-DAG: func.func private @moecomm_rt_all_to_all_i64_i32(i64, i64, memref<?x?xi64, strided<[?, ?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?x?xi64, strided<[?, ?], offset: ?>>, memref<?xi64, strided<[?], offset: ?>>) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @moecomm_rt_all_to_all_i64_i64(i64, i64, memref<?x?xi64, strided<[?, ?], offset: ?>>, memref<?xi64, strided<[?], offset: ?>>, memref<?x?xi64, strided<[?, ?], offset: ?>>, memref<?xi64, strided<[?], offset: ?>>) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @counts
// CHECK: %[[TOTAL:.*]] = call @moecomm_rt_all_to_all_counts_i64(
// CHECK: %[[ROWS:.*]] = arith.index_cast %[[TOTAL]] : i64 to index
// CHECK: memref.alloc(%[[ROWS]]) {{.*}} : memref<?x2xi64>
// CHECK: call @moecomm_rt_all_to_all_i64_i64(
// CHECK: call @moecomm_rt_all_to_all_counts_i32(
// CHECK: memref.alloc({{.*}}) {{.*}} : memref<?x2xi64>
// CHECK: call @moecomm_rt_all_to_all_i64_i32(
// LLVM-DAG: llvm.call @_mlir_ciface_moecomm_rt_all_to_all_i64_i64(
// LLVM-DAG: llvm.call @_mlir_ciface_moecomm_rt_all_to_all_i64_i32(
func.func @counts(%gs: tensor<4x2xi64>, %ones: tensor<4xi64>, %ones32: tensor<4xi32>) -> (tensor<?x2xi64>, tensor<?x2xi64>) {
  %cm, %cmc = moecomm.all_to_all %gs, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x2xi64>, tensor<4xi64>
  %cm2, %cmc2 = moecomm.all_to_all %gs, %ones32 topology<ranks = 4, ranks_per_node = 2> : tensor<4x2xi64>, tensor<4xi32>
  return %cm, %cm2 : tensor<?x2xi64>, tensor<?x2xi64>
}
