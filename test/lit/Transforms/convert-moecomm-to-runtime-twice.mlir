// IR lowered before is left as it is: a second run (or moecomm-pipeline on
// lowered IR) neither releases its layouts again nor frees its buffers again.
// RUN: moecomm-opt %s --convert-moecomm-to-runtime | moecomm-opt --convert-moecomm-to-runtime | FileCheck %s
// RUN: moecomm-opt %s --convert-moecomm-to-runtime > %t.mlir
// RUN: moecomm-opt %t.mlir --convert-moecomm-to-runtime | diff %t.mlir -

// CHECK-LABEL: func.func @layer
// CHECK-COUNT-1: call @moecomm_rt_layout_i32
// CHECK-COUNT-1: call @moecomm_rt_layout_release
// CHECK-NOT: call @moecomm_rt_layout_release
// CHECK: return
func.func @layer(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x64xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %h : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xbf16>
  return %out : tensor<?x64xbf16>
}
