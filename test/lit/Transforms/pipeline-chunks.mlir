// Compile time grows about linearly with chunks (reassembling the chunk
// outputs used to take One-Shot Analysis cubic time: 73 s for 256 chunks,
// 0.7 s for the 64 allowed now; now 0.3 s): every chunk gets its layout.
// RUN: timeout 60 moecomm-opt %s --moecomm-pipeline=chunks=64 | FileCheck %s

// CHECK-LABEL: llvm.func @moe_layer(
// CHECK-COUNT-64: llvm.call @moecomm_rt_layout_i32(
// CHECK-NOT: llvm.call @moecomm_rt_layout_i32(
func.func @moe_layer(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x64xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x64xbf16>
  return %out : tensor<?x64xbf16>
}
