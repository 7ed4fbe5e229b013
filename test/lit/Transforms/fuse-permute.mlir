// RUN: moecomm-opt %s -split-input-file --moecomm-fuse-permute | FileCheck %s
// Input: staged IR as moecomm-split-hierarchical=strategy=hierarchical and
// moecomm-fuse-quant print it (a permute before and after every exchange).

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
func.func @layer(%arg0: tensor<?x7168xbf16>, %arg1: tensor<?x8xi32>, %arg2: tensor<?x8xf32>) -> tensor<?x7168xbf16> {
  %handle, %recv_weights, %tokens_per_expert = moecomm.layout %arg1, %arg2 topology<ranks = 16, ranks_per_node = 8, experts = 256> strategy<hierarchical> : tensor<?x8xi32>, tensor<?x8xf32>
  %out = moecomm.permute %arg0, %handle dispatch stage 0 : tensor<?x7168xbf16>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256, strategy = hierarchical>
  %q, %scales = moecomm.quantize %out : tensor<?x7168xbf16>
  %recv, %recv_scales = moecomm.exchange %q scales(%scales : tensor<?x56xf32>), %handle dispatch stage 0 scope<inter_node> : tensor<?x7168xf8E4M3FN>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256, strategy = hierarchical>
  %out_0, %out_scales = moecomm.permute %recv scales(%recv_scales : tensor<?x56xf32>), %handle dispatch stage 1 : tensor<?x7168xf8E4M3FN>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256, strategy = hierarchical>
  %recv_1, %recv_scales_2 = moecomm.exchange %out_0 scales(%out_scales : tensor<?x56xf32>), %handle dispatch stage 1 scope<intra_node> : tensor<?x7168xf8E4M3FN>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256, strategy = hierarchical>
  %out_3, %out_scales_4 = moecomm.permute %recv_1 scales(%recv_scales_2 : tensor<?x56xf32>), %handle dispatch output : tensor<?x7168xf8E4M3FN>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256, strategy = hierarchical>
  %0 = moecomm.dequantize %out_3, %out_scales_4 : tensor<?x7168xf8E4M3FN>, tensor<?x56xf32> -> tensor<?x7168xbf16>
  %1 = arith.mulf %0, %0 : tensor<?x7168xbf16>
  %out_5 = moecomm.permute %1, %handle combine stage 0 weighted : tensor<?x7168xbf16>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256, strategy = hierarchical>
  %recv_6 = moecomm.exchange %out_5, %handle combine stage 0 scope<intra_node> : tensor<?x7168xbf16>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256, strategy = hierarchical>
  %out_7 = moecomm.permute %recv_6, %handle combine stage 1 weighted : tensor<?x7168xbf16>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256, strategy = hierarchical>
  %recv_8 = moecomm.exchange %out_7, %handle combine stage 1 scope<inter_node> : tensor<?x7168xbf16>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256, strategy = hierarchical>
  %out_9 = moecomm.permute %recv_8, %handle combine output weighted : tensor<?x7168xbf16>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256, strategy = hierarchical>
  return %out_9 : tensor<?x7168xbf16>
}

// -----

// FP8 rows handed to an FP8 consumer stay a permute (no unpack to bf16).
// CHECK-LABEL: func.func @fp8_consumer
// CHECK: moecomm.pack %arg0, {{.*}} dispatch stage 0
// CHECK: %[[O:.*]], %[[OS:.*]] = moecomm.permute {{.*}} dispatch output : tensor<?x128xf8E4M3FN>
// CHECK: return %[[O]], %[[OS]]
func.func @fp8_consumer(%arg0: tensor<?x128xf32>, %arg1: tensor<?x2xi32>, %arg2: tensor<?x2xf32>) -> (tensor<?x128xf8E4M3FN>, tensor<?x1xf32>) {
  %handle, %recv_weights, %tokens_per_expert = moecomm.layout %arg1, %arg2 topology<ranks = 4, ranks_per_node = 2, experts = 8> strategy<hierarchical> : tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.permute %arg0, %handle dispatch stage 0 : tensor<?x128xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = hierarchical>
  %q, %scales = moecomm.quantize %out : tensor<?x128xf32>
  %recv, %recv_scales = moecomm.exchange %q scales(%scales : tensor<?x1xf32>), %handle dispatch stage 0 scope<inter_node> : tensor<?x128xf8E4M3FN>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = hierarchical>
  %out_0, %out_scales = moecomm.permute %recv scales(%recv_scales : tensor<?x1xf32>), %handle dispatch stage 1 : tensor<?x128xf8E4M3FN>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = hierarchical>
  %recv_1, %recv_scales_2 = moecomm.exchange %out_0 scales(%out_scales : tensor<?x1xf32>), %handle dispatch stage 1 scope<intra_node> : tensor<?x128xf8E4M3FN>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = hierarchical>
  %out_3, %out_scales_4 = moecomm.permute %recv_1 scales(%recv_scales_2 : tensor<?x1xf32>), %handle dispatch output : tensor<?x128xf8E4M3FN>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = hierarchical>
  return %out_3, %out_scales_4 : tensor<?x128xf8E4M3FN>, tensor<?x1xf32>
}

// -----

// An mxfp8 dispatch (H = 20: one E8M0 scale per row, the shape
// fp8_e4m3_ue8m0 has too): the pack that quantizes keeps the quantize's
// format, and the unpack dequantizes the E8M0 scales.
// CHECK-LABEL: func.func @mxfp8
// CHECK: %[[S:.*]], %[[SS:.*]] = moecomm.pack %arg0, %[[H:.*]] dispatch stage 0 wire<mxfp8> : tensor<?x20xf32>, {{.*}} -> tensor<?x20xf8E4M3FN>, tensor<?x1xf8E8M0FNU>
// CHECK-NEXT: %[[R:.*]], %[[RS:.*]] = moecomm.exchange %[[S]] scales(%[[SS]] : tensor<?x1xf8E8M0FNU>)
// CHECK-NEXT: moecomm.unpack %[[R]] scales(%[[RS]] : tensor<?x1xf8E8M0FNU>), %[[H]] dispatch : {{.*}} -> tensor<?x20xf32>
// CHECK-NOT: moecomm.quantize
// CHECK-NOT: moecomm.dequantize
func.func @mxfp8(%arg0: tensor<?x20xf32>, %arg1: tensor<?x2xi32>, %arg2: tensor<?x2xf32>) -> tensor<?x20xf32> {
  %handle, %recv_weights, %tokens_per_expert = moecomm.layout %arg1, %arg2 topology<ranks = 4, ranks_per_node = 4, experts = 8> strategy<flat> : tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.permute %arg0, %handle dispatch stage 0 : tensor<?x20xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 4, experts = 8, strategy = flat>
  %q, %scales = moecomm.quantize %out wire<mxfp8> : tensor<?x20xf32>
  %recv, %recv_scales = moecomm.exchange %q scales(%scales : tensor<?x1xf8E8M0FNU>), %handle dispatch stage 0 scope<global> : tensor<?x20xf8E4M3FN>, !moecomm.handle<ranks = 4, ranks_per_node = 4, experts = 8, strategy = flat>
  %out_0, %out_scales = moecomm.permute %recv scales(%recv_scales : tensor<?x1xf8E8M0FNU>), %handle dispatch output : tensor<?x20xf8E4M3FN>, !moecomm.handle<ranks = 4, ranks_per_node = 4, experts = 8, strategy = flat>
  %0 = moecomm.dequantize %out_0, %out_scales wire<mxfp8> : tensor<?x20xf8E4M3FN>, tensor<?x1xf8E8M0FNU> -> tensor<?x20xf32>
  return %0 : tensor<?x20xf32>
}
