// The full pipeline reaches the LLVM dialect and translates to LLVM IR, for
// every strategy, with and without FP8 and chunking.
// RUN: moecomm-opt %s --moecomm-pipeline="strategy=hierarchical wire-dtype=fp8_e4m3 chunks=2" | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefixes=LLVM,FP8
// RUN: moecomm-opt %s --moecomm-pipeline="strategy=flat" | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVM
// RUN: moecomm-opt %s --moecomm-pipeline="strategy=per_expert chunks=4" | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVM
// RUN: moecomm-opt %s --moecomm-pipeline="strategy=auto ranks=8 ranks-per-node=4 capacity=64" | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVM
// RUN: moecomm-opt %s --moecomm-pipeline | FileCheck %s --check-prefix=DIALECT
// align reaches the runtime as the layout call's argument after wire (then
// the expert placement's: none here), chunked too.
// RUN: moecomm-opt %s --moecomm-pipeline="strategy=hierarchical align=256 chunks=2" | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefixes=LLVM,ALIGN

// DIALECT-NOT: moecomm.
// DIALECT-NOT: memref.
// DIALECT-NOT: func.func
// DIALECT: llvm.func @moe_layer(
// DIALECT: llvm.func @_mlir_ciface_moe_layer(

// Runtime functions with memref arguments are called through their C
// interface; nothing else (no MLIR C runner library) is needed at link time.
// LLVM-NOT: memrefCopy
// LLVM: declare ptr @_mlir_ciface_moecomm_rt_layout_i32(ptr, ptr, i64, i64, i64, i32, i64, i64, i32, i64, i64, ptr, i32)
// LLVM: define {{.*}} @moe_layer(
// LLVM: call ptr @moecomm_rt_layout_i32(
// ALIGN-SAME: i64 256, i64 0, ptr null, i32 0)
// FP8: call void @moecomm_rt_gather_bf16_f8(
// FP8: call ptr @moecomm_rt_exchange_start_f8(
// LLVM: call void @moecomm_rt_layout_release(
// LLVM: define void @_mlir_ciface_moe_layer(
module {
  func.func @moe_layer(%x: tensor<?x128xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x128xbf16> attributes {llvm.emit_c_interface} {
    %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x128xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
    %y = arith.mulf %recv, %recv : tensor<?x128xbf16>
    %out = moecomm.combine %y, %h weighted : tensor<?x128xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x128xbf16>
    return %out : tensor<?x128xbf16>
  }
}
