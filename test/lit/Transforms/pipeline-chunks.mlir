// The most chunks the pipeline accepts: every chunk gets its own layout.
// (Reassembling the chunk outputs is bufferized directly, not by One-Shot
// Analysis, whose time was cubic in the chunks; compile times are in
// bench/pipeline_compile_bench.sh, not in a test.)
// RUN: moecomm-opt %s --moecomm-pipeline=chunks=64 | FileCheck %s

// CHECK-LABEL: llvm.func @moe_layer(
// CHECK-COUNT-64: llvm.call @moecomm_rt_layout_i32(
// CHECK-NOT: llvm.call @moecomm_rt_layout_i32(
func.func @moe_layer(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x64xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x64xbf16>
  return %out : tensor<?x64xbf16>
}
