// RUN: moecomm-opt %s -split-input-file --moecomm-fuse-quant | FileCheck %s
// Input: staged IR as moecomm-split-hierarchical=strategy=hierarchical
// prints it: an FP8 wire quantizes before and dequantizes after every stage.

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
func.func @two_level(%arg0: tensor<?x300xbf16>, %arg1: tensor<?x3xi64>, %arg2: tensor<?x3xf32>) -> tensor<?x300xbf16> {
  %handle, %recv_weights, %tokens_per_expert = moecomm.layout %arg1, %arg2 topology<ranks = 8, ranks_per_node = 4, experts = 16> strategy<hierarchical> : tensor<?x3xi64>, tensor<?x3xf32>
  %out = moecomm.permute %arg0, %handle dispatch stage 0 : tensor<?x300xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical>
  %q, %scales = moecomm.quantize %out : tensor<?x300xbf16>
  %recv, %recv_scales = moecomm.exchange %q scales(%scales : tensor<?x3xf32>), %handle dispatch stage 0 scope<inter_node> : tensor<?x300xf8E4M3FN>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical>
  %0 = moecomm.dequantize %recv, %recv_scales : tensor<?x300xf8E4M3FN>, tensor<?x3xf32> -> tensor<?x300xbf16>
  %out_0 = moecomm.permute %0, %handle dispatch stage 1 : tensor<?x300xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical>
  %q_1, %scales_2 = moecomm.quantize %out_0 : tensor<?x300xbf16>
  %recv_3, %recv_scales_4 = moecomm.exchange %q_1 scales(%scales_2 : tensor<?x3xf32>), %handle dispatch stage 1 scope<intra_node> : tensor<?x300xf8E4M3FN>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical>
  %1 = moecomm.dequantize %recv_3, %recv_scales_4 : tensor<?x300xf8E4M3FN>, tensor<?x3xf32> -> tensor<?x300xbf16>
  %out_5 = moecomm.permute %1, %handle dispatch output : tensor<?x300xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical>
  return %out_5 : tensor<?x300xbf16>
}

// -----

// The consumer quantizes the received rows (an FP8 expert GEMM): it gets the
// received FP8 rows and scales, no dequantize/quantize round trip.
// CHECK-LABEL: func.func @fp8_consumer
// CHECK: %[[O:.*]], %[[OS:.*]] = moecomm.permute {{.*}} dispatch output : tensor<?x128xf8E4M3FN>
// CHECK-NOT: moecomm.dequantize
// CHECK: return %[[O]], %[[OS]]
func.func @fp8_consumer(%arg0: tensor<?x128xf32>, %arg1: tensor<?x2xi32>, %arg2: tensor<?x2xf32>) -> (tensor<?x128xf8E4M3FN>, tensor<?x1xf32>) {
  %handle, %recv_weights, %tokens_per_expert = moecomm.layout %arg1, %arg2 topology<ranks = 4, ranks_per_node = 2, experts = 8> strategy<hierarchical> : tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.permute %arg0, %handle dispatch stage 0 : tensor<?x128xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = hierarchical>
  %q, %scales = moecomm.quantize %out : tensor<?x128xf32>
  %recv, %recv_scales = moecomm.exchange %q scales(%scales : tensor<?x1xf32>), %handle dispatch stage 0 scope<inter_node> : tensor<?x128xf8E4M3FN>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = hierarchical>
  %0 = moecomm.dequantize %recv, %recv_scales : tensor<?x128xf8E4M3FN>, tensor<?x1xf32> -> tensor<?x128xf32>
  %out_0 = moecomm.permute %0, %handle dispatch stage 1 : tensor<?x128xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = hierarchical>
  %q_1, %scales_2 = moecomm.quantize %out_0 : tensor<?x128xf32>
  %recv_3, %recv_scales_4 = moecomm.exchange %q_1 scales(%scales_2 : tensor<?x1xf32>), %handle dispatch stage 1 scope<intra_node> : tensor<?x128xf8E4M3FN>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = hierarchical>
  %1 = moecomm.dequantize %recv_3, %recv_scales_4 : tensor<?x128xf8E4M3FN>, tensor<?x1xf32> -> tensor<?x128xf32>
  %out_5 = moecomm.permute %1, %handle dispatch output : tensor<?x128xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = hierarchical>
  %q_6, %scales_7 = moecomm.quantize %out_5 : tensor<?x128xf32>
  return %q_6, %scales_7 : tensor<?x128xf8E4M3FN>, tensor<?x1xf32>
}

// -----

// Without an FP8 wire nothing changes.
// CHECK-LABEL: func.func @bf16_wire
// CHECK-NOT: moecomm.quantize
// CHECK-NOT: moecomm.dequantize
// CHECK: return
func.func @bf16_wire(%arg0: tensor<?x128xbf16>, %arg1: tensor<?x2xi32>, %arg2: tensor<?x2xf32>) -> tensor<?x128xbf16> {
  %handle, %recv_weights, %tokens_per_expert = moecomm.layout %arg1, %arg2 topology<ranks = 4, ranks_per_node = 2, experts = 8> strategy<hierarchical> : tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.permute %arg0, %handle dispatch stage 0 : tensor<?x128xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = hierarchical>
  %recv = moecomm.exchange %out, %handle dispatch stage 0 scope<inter_node> : tensor<?x128xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = hierarchical>
  %out_0 = moecomm.permute %recv, %handle dispatch stage 1 : tensor<?x128xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = hierarchical>
  %recv_1 = moecomm.exchange %out_0, %handle dispatch stage 1 scope<intra_node> : tensor<?x128xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = hierarchical>
  %out_2 = moecomm.permute %recv_1, %handle dispatch output : tensor<?x128xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = hierarchical>
  %out_3 = moecomm.permute %out_2, %handle combine stage 0 weighted : tensor<?x128xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = hierarchical>
  %recv_4 = moecomm.exchange %out_3, %handle combine stage 0 scope<intra_node> : tensor<?x128xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = hierarchical>
  %out_5 = moecomm.permute %recv_4, %handle combine stage 1 weighted : tensor<?x128xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = hierarchical>
  %recv_6 = moecomm.exchange %out_5, %handle combine stage 1 scope<inter_node> : tensor<?x128xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = hierarchical>
  %out_7 = moecomm.permute %recv_6, %handle combine output weighted : tensor<?x128xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = hierarchical>
  return %out_7 : tensor<?x128xbf16>
}

// -----

// mxfp8 (H = 300: ten E8M0 scales per row): the FP8 rows and their E8M0
// scales are forwarded through the relay just as fp8_e4m3's are, and a
// consumer asking for mxfp8 gets them as received (E8M0 bytes, not f32).
// CHECK-LABEL: func.func @mxfp8_consumer
// CHECK: moecomm.quantize %{{.*}} wire<mxfp8>
// CHECK: moecomm.permute %{{.*}} scales(%{{.*}} : tensor<?x10xf8E8M0FNU>), %{{.*}} dispatch stage 1 : tensor<?x300xf8E4M3FN>
// CHECK: %[[O:.*]], %[[OS:.*]] = moecomm.permute {{.*}} dispatch output : tensor<?x300xf8E4M3FN>
// CHECK-NOT: moecomm.dequantize
// CHECK-NOT: moecomm.quantize
// CHECK: return %[[O]], %[[OS]]
func.func @mxfp8_consumer(%arg0: tensor<?x300xf32>, %arg1: tensor<?x2xi32>, %arg2: tensor<?x2xf32>) -> (tensor<?x300xf8E4M3FN>, tensor<?x10xf8E8M0FNU>) {
  %handle, %recv_weights, %tokens_per_expert = moecomm.layout %arg1, %arg2 topology<ranks = 4, ranks_per_node = 2, experts = 8> strategy<hierarchical> : tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.permute %arg0, %handle dispatch stage 0 : tensor<?x300xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = hierarchical>
  %q, %scales = moecomm.quantize %out wire<mxfp8> : tensor<?x300xf32>
  %recv, %recv_scales = moecomm.exchange %q scales(%scales : tensor<?x10xf8E8M0FNU>), %handle dispatch stage 0 scope<inter_node> : tensor<?x300xf8E4M3FN>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = hierarchical>
  %0 = moecomm.dequantize %recv, %recv_scales wire<mxfp8> : tensor<?x300xf8E4M3FN>, tensor<?x10xf8E8M0FNU> -> tensor<?x300xf32>
  %out_0 = moecomm.permute %0, %handle dispatch stage 1 : tensor<?x300xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = hierarchical>
  %q_1, %scales_2 = moecomm.quantize %out_0 wire<mxfp8> : tensor<?x300xf32>
  %recv_3, %recv_scales_4 = moecomm.exchange %q_1 scales(%scales_2 : tensor<?x10xf8E8M0FNU>), %handle dispatch stage 1 scope<intra_node> : tensor<?x300xf8E4M3FN>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = hierarchical>
  %1 = moecomm.dequantize %recv_3, %recv_scales_4 wire<mxfp8> : tensor<?x300xf8E4M3FN>, tensor<?x10xf8E8M0FNU> -> tensor<?x300xf32>
  %out_5 = moecomm.permute %1, %handle dispatch output : tensor<?x300xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = hierarchical>
  %q_6, %scales_7 = moecomm.quantize %out_5 wire<mxfp8> : tensor<?x300xf32>
  return %q_6, %scales_7 : tensor<?x300xf8E4M3FN>, tensor<?x10xf8E8M0FNU>
}

// -----

// A consumer asking for another format than the wire's keeps its quantize
// (a real conversion), even where the scales have one shape: with H = 20
// both E8M0 formats have one scale per row, but mxfp8 and fp8_e4m3_ue8m0
// round it differently.
// CHECK-LABEL: func.func @other_format_consumer
// CHECK: %[[D:.*]] = moecomm.dequantize %{{.*}}, %{{.*}} wire<fp8_e4m3_ue8m0>
// CHECK: moecomm.quantize %[[D]] wire<mxfp8>
func.func @other_format_consumer(%arg0: tensor<?x20xf32>, %arg1: tensor<?x2xi32>, %arg2: tensor<?x2xf32>) -> (tensor<?x20xf8E4M3FN>, tensor<?x1xf8E8M0FNU>) {
  %handle, %recv_weights, %tokens_per_expert = moecomm.layout %arg1, %arg2 topology<ranks = 4, ranks_per_node = 4, experts = 8> strategy<flat> : tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.permute %arg0, %handle dispatch stage 0 : tensor<?x20xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 4, experts = 8, strategy = flat>
  %q, %scales = moecomm.quantize %out wire<fp8_e4m3_ue8m0> : tensor<?x20xf32>
  %recv, %recv_scales = moecomm.exchange %q scales(%scales : tensor<?x1xf8E8M0FNU>), %handle dispatch stage 0 scope<global> : tensor<?x20xf8E4M3FN>, !moecomm.handle<ranks = 4, ranks_per_node = 4, experts = 8, strategy = flat>
  %0 = moecomm.dequantize %recv, %recv_scales wire<fp8_e4m3_ue8m0> : tensor<?x20xf8E4M3FN>, tensor<?x1xf8E8M0FNU> -> tensor<?x20xf32>
  %q_1, %scales_2 = moecomm.quantize %0 wire<mxfp8> : tensor<?x20xf32>
  return %q_1, %scales_2 : tensor<?x20xf8E4M3FN>, tensor<?x1xf8E8M0FNU>
}
