// Expert computations may use the math dialect on tensors: moecomm-opt
// parses them (every tool registers the dialects of moecomm/InitAllDialects.h), the
// pipeline lowers them (LLVM intrinsics, libm calls for the rest), and
// moecomm-aot compiles them into a library.
// RUN: moecomm-opt %s | FileCheck %s --check-prefix=PARSE
// RUN: moecomm-opt %s --moecomm-pipeline=chunks=2 | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVM
// RUN: rm -f %t.so && moecomm-aot %s -o %t.so && test -s %t.so

// PARSE-LABEL: func.func @gelu_expert
// PARSE: math.exp %{{.*}} : tensor<?x64xf32>
// PARSE: math.erf %{{.*}} : tensor<?x64xf32>
// LLVM-LABEL: define { ptr, ptr, i64, [2 x i64], [2 x i64] } @gelu_expert
// LLVM: call float @llvm.exp.f32
// LLVM: call float @erff
func.func @gelu_expert(%x: tensor<?x64xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x64xf32> attributes {llvm.emit_c_interface} {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  %e = math.exp %recv : tensor<?x64xf32>
  %y = math.erf %e : tensor<?x64xf32>
  %out = moecomm.combine %y, %h weighted : tensor<?x64xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x64xf32>
  return %out : tensor<?x64xf32>
}
