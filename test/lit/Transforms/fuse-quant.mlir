// RUN: moecomm-opt %s -split-input-file --moecomm-split-hierarchical=strategy=hierarchical --moecomm-fuse-quant | FileCheck %s

// Quantize once before the inter-node stage, forward FP8 rows with their
// scales through the relay, dequantize once after the final gather.
// CHECK-LABEL: func.func @two_level
// CHECK: %[[P0:.*]] = moecomm.permute %arg0, %[[H:.*]] dispatch stage 0 : tensor<?x300xbf16>
// CHECK-NEXT: %[[Q:.*]], %[[S:.*]] = moecomm.quantize %[[P0]]
// CHECK-NEXT: %[[R0:.*]], %[[RS0:.*]] = moecomm.exchange %[[Q]] scales(%[[S]] : tensor<?x3xf32>), %[[H]] dispatch stage 0 scope<inter_node>
// CHECK-NEXT: %[[P1:.*]], %[[PS1:.*]] = moecomm.permute %[[R0]] scales(%[[RS0]] : tensor<?x3xf32>), %[[H]] dispatch stage 1 : tensor<?x300xf8E4M3FN>
// CHECK-NEXT: %[[R1:.*]], %[[RS1:.*]] = moecomm.exchange %[[P1]] scales(%[[PS1]] : tensor<?x3xf32>), %[[H]] dispatch stage 1 scope<intra_node>
// CHECK-NEXT: %[[O:.*]], %[[OS:.*]] = moecomm.permute %[[R1]] scales(%[[RS1]] : tensor<?x3xf32>), %[[H]] dispatch output
// CHECK-NEXT: %[[D:.*]] = moecomm.dequantize %[[O]], %[[OS]] : tensor<?x300xf8E4M3FN>, tensor<?x3xf32> -> tensor<?x300xbf16>
// CHECK-NOT: moecomm.quantize
// CHECK-NOT: moecomm.dequantize
// CHECK: return %[[D]]
func.func @two_level(%x: tensor<?x300xbf16>, %idx: tensor<?x3xi64>, %w: tensor<?x3xf32>) -> tensor<?x300xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> wire<fp8_e4m3> : tensor<?x300xbf16>, tensor<?x3xi64>, tensor<?x3xf32>
  return %recv : tensor<?x300xbf16>
}

// -----

// The consumer quantizes the received rows (an FP8 expert GEMM): it gets the
// received FP8 rows and scales, no dequantize/quantize round trip.
// CHECK-LABEL: func.func @fp8_consumer
// CHECK: %[[O:.*]], %[[OS:.*]] = moecomm.permute {{.*}} dispatch output : tensor<?x128xf8E4M3FN>
// CHECK-NOT: moecomm.dequantize
// CHECK: return %[[O]], %[[OS]]
func.func @fp8_consumer(%x: tensor<?x128xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> (tensor<?x128xf8E4M3FN>, tensor<?x1xf32>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> wire<fp8_e4m3> : tensor<?x128xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  %q, %s = moecomm.quantize %recv : tensor<?x128xf32>
  return %q, %s : tensor<?x128xf8E4M3FN>, tensor<?x1xf32>
}

// -----

// Without an FP8 wire nothing changes.
// CHECK-LABEL: func.func @bf16_wire
// CHECK-NOT: moecomm.quantize
// CHECK-NOT: moecomm.dequantize
// CHECK: return
func.func @bf16_wire(%x: tensor<?x128xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x128xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x128xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x128xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x128xbf16>
  return %out : tensor<?x128xbf16>
}
