// RUN: moecomm-opt %s -split-input-file --moecomm-split-hierarchical=strategy=hierarchical --moecomm-fuse-quant --moecomm-fuse-permute | FileCheck %s
// RUN: moecomm-opt %s -split-input-file --moecomm-split-hierarchical=strategy=flat --moecomm-fuse-permute | FileCheck %s --check-prefix=FLAT

// Fused FP8 dispatch: pack quantizes while gathering, the relay packs FP8
// rows with their scales, unpack dequantizes while gathering; combine packs
// and unpacks with f32 sums.
// CHECK-LABEL: func.func @layer
// CHECK: %[[S0:.*]], %[[SS0:.*]] = moecomm.pack %arg0, %[[H:.*]] dispatch stage 0 : tensor<?x7168xbf16>, {{.*}} -> tensor<?x7168xf8E4M3FN>, tensor<?x56xf32>
// CHECK-NEXT: %[[R0:.*]], %[[RS0:.*]] = moecomm.exchange %[[S0]] scales(%[[SS0]] : tensor<?x56xf32>), %[[H]] dispatch stage 0 scope<inter_node>
// CHECK-NEXT: %[[S1:.*]], %[[SS1:.*]] = moecomm.pack %[[R0]] scales(%[[RS0]] : tensor<?x56xf32>), %[[H]] dispatch stage 1 : {{.*}} -> tensor<?x7168xf8E4M3FN>, tensor<?x56xf32>
// CHECK-NEXT: %[[R1:.*]], %[[RS1:.*]] = moecomm.exchange %[[S1]] scales(%[[SS1]] : tensor<?x56xf32>), %[[H]] dispatch stage 1 scope<intra_node>
// CHECK-NEXT: %[[RECV:.*]] = moecomm.unpack %[[R1]] scales(%[[RS1]] : tensor<?x56xf32>), %[[H]] dispatch : {{.*}} -> tensor<?x7168xbf16>
// CHECK-NEXT: %[[Y:.*]] = arith.mulf %[[RECV]], %[[RECV]]
// CHECK-NEXT: %[[C0:.*]] = moecomm.pack %[[Y]], %[[H]] combine stage 0 weighted : {{.*}} -> tensor<?x7168xbf16>
// CHECK-NEXT: %[[Q0:.*]] = moecomm.exchange %[[C0]], %[[H]] combine stage 0 scope<intra_node>
// CHECK-NEXT: %[[C1:.*]] = moecomm.pack %[[Q0]], %[[H]] combine stage 1 weighted
// CHECK-NEXT: %[[Q1:.*]] = moecomm.exchange %[[C1]], %[[H]] combine stage 1 scope<inter_node>
// CHECK-NEXT: %[[OUT:.*]] = moecomm.unpack %[[Q1]], %[[H]] combine weighted : {{.*}} -> tensor<?x7168xbf16>
// CHECK-NOT: moecomm.permute
// CHECK-NOT: moecomm.quantize
// CHECK: return %[[OUT]]
// Without fuse-quant the quantize of the (only) hop still folds into pack.
// FLAT-LABEL: func.func @layer
// FLAT: moecomm.pack %arg0, %{{.*}} dispatch stage 0 : {{.*}} -> tensor<?x7168xf8E4M3FN>, tensor<?x56xf32>
// FLAT-NEXT: moecomm.exchange {{.*}} scope<global>
// FLAT-NEXT: moecomm.dequantize
// FLAT-NEXT: moecomm.unpack {{.*}} dispatch
func.func @layer(%x: tensor<?x7168xbf16>, %idx: tensor<?x8xi32>, %w: tensor<?x8xf32>) -> tensor<?x7168xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 16, ranks_per_node = 8, experts = 256> wire<fp8_e4m3> : tensor<?x7168xbf16>, tensor<?x8xi32>, tensor<?x8xf32>
  %y = arith.mulf %recv, %recv : tensor<?x7168xbf16>
  %out = moecomm.combine %y, %h weighted : tensor<?x7168xbf16>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256> -> tensor<?x7168xbf16>
  return %out : tensor<?x7168xbf16>
}

// -----

// FP8 rows handed to an FP8 consumer stay a permute (no unpack to bf16).
// CHECK-LABEL: func.func @fp8_consumer
// CHECK: moecomm.pack %arg0, {{.*}} dispatch stage 0
// CHECK: %[[O:.*]], %[[OS:.*]] = moecomm.permute {{.*}} dispatch output : tensor<?x128xf8E4M3FN>
// CHECK: return %[[O]], %[[OS]]
func.func @fp8_consumer(%x: tensor<?x128xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> (tensor<?x128xf8E4M3FN>, tensor<?x1xf32>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> wire<fp8_e4m3> : tensor<?x128xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  %q, %s = moecomm.quantize %recv : tensor<?x128xf32>
  return %q, %s : tensor<?x128xf8E4M3FN>, tensor<?x1xf32>
}
