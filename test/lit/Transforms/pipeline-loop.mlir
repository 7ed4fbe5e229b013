// Layers in an scf.for (activations carried as iter_args, one dispatch and
// combine per iteration) go through the whole pipeline to LLVM IR: each
// iteration's output is a new buffer, freed by the upstream deallocation.
// RUN: moecomm-opt %s --moecomm-pipeline="strategy=hierarchical" | FileCheck %s
// RUN: moecomm-opt %s --moecomm-pipeline="strategy=hierarchical" | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVM

// CHECK-LABEL: llvm.func @layers
// CHECK-NOT: bufferization.
// CHECK-NOT: memref.
// CHECK: llvm.call @moecomm_rt_layout_i32
// CHECK: llvm.call @moecomm_rt_layout_release
// CHECK: llvm.call @free
// LLVM: define { ptr, ptr, i64, [2 x i64], [2 x i64] } @layers(
func.func @layers(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x16xbf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %x) -> (tensor<?x16xbf16>) {
    %recv, %rw, %tpe, %h = moecomm.dispatch %acc, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
    %out = moecomm.combine %recv, %h weighted : tensor<?x16xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xbf16>
    scf.yield %out : tensor<?x16xbf16>
  }
  return %r : tensor<?x16xbf16>
}
