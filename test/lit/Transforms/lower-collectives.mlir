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
