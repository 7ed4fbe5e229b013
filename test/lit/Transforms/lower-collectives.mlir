// moecomm-lower-collectives on IR whose strategies are chosen (what
// moecomm-select-strategy leaves): dispatch, cached_dispatch and combine
// become layout, permute and exchange stages.
// RUN: moecomm-opt %s --moecomm-lower-collectives | FileCheck %s

// CHECK-LABEL: func.func @backward
// CHECK: moecomm.permute %arg0, %arg1 combine stage 0 weighted
// CHECK: moecomm.exchange {{.*}} combine stage 0 scope<intra_node>
// CHECK: moecomm.exchange {{.*}} combine stage 1 scope<inter_node>
// CHECK: moecomm.permute {{.*}} combine output weighted
// CHECK-NOT: moecomm.combine
// CHECK-LABEL: func.func @forward
// CHECK: %[[H:.*]], %{{.*}}, %{{.*}} = moecomm.layout %arg1, %arg2 topology<ranks = 8, ranks_per_node = 4, experts = 16> strategy<hierarchical>
// CHECK: moecomm.exchange {{.*}}, %[[H]] dispatch stage 0 scope<inter_node>
// CHECK: moecomm.exchange {{.*}}, %[[H]] dispatch stage 1 scope<intra_node>
// CHECK: %[[RECV:.*]] = moecomm.permute {{.*}}, %[[H]] dispatch output
// The cached dispatch moves FP8 rows along the same layout.
// CHECK: moecomm.quantize
// CHECK: moecomm.exchange {{.*}}, %[[H]] dispatch stage 0 scope<inter_node> : tensor<?x64xf8E4M3FN>
// CHECK: call @backward(%[[RECV]], %[[H]])
// CHECK-NOT: moecomm.dispatch
// CHECK-NOT: moecomm.cached_dispatch
func.func @backward(%dy: tensor<?x64xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical>) -> tensor<?x64xbf16> {
  %dx = moecomm.combine %dy, %h weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical> -> tensor<?x64xbf16>
  return %dx : tensor<?x64xbf16>
}
func.func @forward(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>, %x2: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> strategy<hierarchical> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %recv2 = moecomm.cached_dispatch %x2, %h wire<fp8_e4m3> : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical>
  %dx = call @backward(%recv, %h) : (tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical>) -> tensor<?x64xbf16>
  return %dx, %recv2 : tensor<?x64xbf16>, tensor<?x64xbf16>
}

// The dispatch's capacity and align go to its layout; expert_offsets keeps
// reading the handle, now the layout's.
// CHECK-LABEL: func.func @aligned
// CHECK: %[[H:.*]], %{{.*}}, %{{.*}} = moecomm.layout %arg1, %arg2 topology<ranks = 4, ranks_per_node = 2, experts = 8> strategy<flat> capacity(64) align(128)
// CHECK: moecomm.exchange {{.*}}, %[[H]] dispatch stage 0 scope<global>
// CHECK: moecomm.expert_offsets %[[H]] : !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat>
// CHECK-NOT: moecomm.dispatch
func.func @aligned(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> (tensor<?x64xbf16>, tensor<3xi64>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> strategy<flat> capacity(64) align(128) : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %offs = moecomm.expert_offsets %h : !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat>
  return %recv, %offs : tensor<?x64xbf16>, tensor<3xi64>
}

// The E8M0 wires keep their format at every hop: mxfp8's quantize makes
// one f8E8M0FNU scale per 32 elements (H = 300: ceil(300/32) = 10), each
// dequantize names its format; fp8_e4m3_ue8m0 keeps 1x128 blocks (3).
// CHECK-LABEL: func.func @e8m0_wires
// CHECK: %[[Q:.*]], %[[S:.*]] = moecomm.quantize %{{.*}} wire<mxfp8> : tensor<?x300xbf16>
// CHECK: %[[R:.*]], %[[RS:.*]] = moecomm.exchange %[[Q]] scales(%[[S]] : tensor<?x10xf8E8M0FNU>), %{{.*}} dispatch stage 0 scope<inter_node> : tensor<?x300xf8E4M3FN>
// CHECK: moecomm.dequantize %[[R]], %[[RS]] wire<mxfp8> : tensor<?x300xf8E4M3FN>, tensor<?x10xf8E8M0FNU> -> tensor<?x300xbf16>
// CHECK: moecomm.quantize %{{.*}} wire<mxfp8>
// CHECK: moecomm.exchange {{.*}} dispatch stage 1 scope<intra_node>
// CHECK: moecomm.dequantize {{.*}} wire<mxfp8>
// CHECK: moecomm.quantize %{{.*}} wire<fp8_e4m3_ue8m0> : tensor<?x300xbf16>
// CHECK: moecomm.exchange {{.*}} scales(%{{.*}} : tensor<?x3xf8E8M0FNU>)
// CHECK: moecomm.dequantize {{.*}} wire<fp8_e4m3_ue8m0> : tensor<?x300xf8E4M3FN>, tensor<?x3xf8E8M0FNU> -> tensor<?x300xbf16>
// CHECK-NOT: moecomm.cached_dispatch
func.func @e8m0_wires(%x: tensor<?x300xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> (tensor<?x300xbf16>, tensor<?x300xbf16>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> wire<mxfp8> strategy<hierarchical> : tensor<?x300xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %recv2 = moecomm.cached_dispatch %x, %h wire<fp8_e4m3_ue8m0> : tensor<?x300xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical>
  return %recv, %recv2 : tensor<?x300xbf16>, tensor<?x300xbf16>
}

// One rank: no wire hop, but the rows still go through the format.
// CHECK-LABEL: func.func @e8m0_one_rank
// CHECK: moecomm.quantize %{{.*}} wire<fp8_e4m3_ue8m0>
// CHECK: moecomm.permute {{.*}} scales(%{{.*}} : tensor<?x1xf8E8M0FNU>)
// CHECK: moecomm.dequantize {{.*}} wire<fp8_e4m3_ue8m0>
func.func @e8m0_one_rank(%x: tensor<?x20xf32>, %idx: tensor<?x1xi64>, %w: tensor<?x1xf32>) -> tensor<?x20xf32> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 1, ranks_per_node = 1, experts = 2> wire<fp8_e4m3_ue8m0> strategy<flat> : tensor<?x20xf32>, tensor<?x1xi64>, tensor<?x1xf32>
  return %recv : tensor<?x20xf32>
}
