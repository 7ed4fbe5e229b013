// A dispatch outside an scf.for whose body combines and cached_dispatches the
// loop-carried rows: the loop's deallocation is one bufferization.dealloc of
// several buffers with retained values, whose lowering needs a library
// function (dealloc_helper). The lowering runs on the module, which can hold
// that function, so the graph compiles to LLVM IR (it failed with "library
// function required for generic lowering" when the lowering ran per function).
// RUN: moecomm-opt %s --convert-moecomm-to-runtime | FileCheck %s --check-prefix=RT
// RUN: moecomm-opt %s --moecomm-pipeline | FileCheck %s --implicit-check-not=bufferization.
// RUN: moecomm-opt %s --moecomm-pipeline | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVM

// RT-LABEL: func.func @f
// RT-NOT: bufferization.dealloc
// RT: call @dealloc_helper
// RT: func.func private @dealloc_helper
// CHECK-LABEL: llvm.func @f
// CHECK: llvm.call @dealloc_helper
// CHECK: llvm.func @dealloc_helper
// LLVM: define { ptr, ptr, i64, [2 x i64], [2 x i64] } @f(
// LLVM: call void @dealloc_helper(
// LLVM: define void @dealloc_helper(
func.func @f(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x16xbf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%a = %recv) -> (tensor<?x16xbf16>) {
    %o = moecomm.combine %a, %h weighted : tensor<?x16xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xbf16>
    %g = moecomm.cached_dispatch %o, %h : tensor<?x16xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8>
    scf.yield %g : tensor<?x16xbf16>
  }
  %out = moecomm.combine %r, %h : tensor<?x16xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xbf16>
  return %out : tensor<?x16xbf16>
}
