// Attributes that hold moecomm attributes or types (on a function, its
// arguments and results, any op) do not survive the runtime conversion:
// mlir-translate, which has no moecomm dialect, reads the pipeline's output
// and moecomm-aot compiles the graph. Other attributes stay.
// RUN: moecomm-opt %s --convert-moecomm-to-runtime | FileCheck %s
// RUN: moecomm-opt %s --moecomm-pipeline | FileCheck %s --check-prefix=DIALECT
// RUN: moecomm-opt %s --moecomm-pipeline | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVM
// RUN: rm -f %t.so && moecomm-aot %s -o %t.so && test -s %t.so

// CHECK-LABEL: func.func @annotated
// CHECK-SAME: %arg0: memref<?x8xf32> {other.keep = 1 : i64}
// CHECK-SAME: -> memref<?x8xf32> attributes {moecomm.layer = 3 : i64} {
// CHECK-NOT: {{[#!]}}moecomm.
// DIALECT-NOT: {{[#!]}}moecomm.
// DIALECT: llvm.func @annotated
// DIALECT-NOT: {{[#!]}}moecomm.
// LLVM: define { ptr, ptr, i64, [2 x i64], [2 x i64] } @annotated(
func.func @annotated(%x: tensor<?x8xf32> {moecomm.note = #moecomm.wire<bf16>, other.keep = 1 : i64}, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>)
    -> (tensor<?x8xf32> {moecomm.handle_type = !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>})
    attributes {moecomm.topology = #moecomm.topology<ranks = 2, ranks_per_node = 1, experts = 4>, moecomm.layer = 3 : i64, strategies = [#moecomm.strategy<flat>]} {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  %y = tensor.cast %recv {moecomm.expert = #moecomm.scope<global>} : tensor<?x8xf32> to tensor<?x8xf32>
  %out = moecomm.combine %y, %h weighted : tensor<?x8xf32>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4> -> tensor<?x8xf32>
  return %out : tensor<?x8xf32>
}
