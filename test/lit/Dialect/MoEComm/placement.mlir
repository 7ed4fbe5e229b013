// Round trip of a topology with an expert placement (DeepSeek EPLB's
// phy2log): slots, placement and a non-default replica_choice print; the
// default replica_choice (locality) does not. Everything per local expert is
// per local slot: tokens_per_expert [S/W], expert_offsets [S/W + 1], and the
// handle records S.
// RUN: moecomm-opt %s | moecomm-opt | FileCheck %s
// RUN: moecomm-opt %s --mlir-print-op-generic | moecomm-opt | FileCheck %s
// RUN: moecomm-opt %s | moecomm-opt > %t.1 && moecomm-opt %t.1 > %t.2 && diff %t.1 %t.2

// 4 logical experts on 2 ranks, experts 0 and 1 replicated: 6 slots, 3 per
// rank.
// CHECK-LABEL: func.func @collective
// CHECK: %{{.*}}, %{{.*}}, %[[TPE:.*]], %[[H:.*]] = moecomm.dispatch %{{.*}}, %{{.*}}, %{{.*}} topology<ranks = 2, ranks_per_node = 1, experts = 4, slots = 6, placement = array<i64: 0, 1, 2, 3, 0, 1>> : tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
// CHECK: moecomm.expert_offsets %[[H]] : !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4, slots = 6>
// CHECK: moecomm.combine %{{.*}}, %[[H]] weighted : tensor<?x16xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4, slots = 6> -> tensor<?x16xbf16>
// CHECK: return %{{.*}}, %[[TPE]], %{{.*}} : tensor<?x16xbf16>, tensor<3xi64>, tensor<4xi64>
func.func @collective(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> (tensor<?x16xbf16>, tensor<3xi64>, tensor<4xi64>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 2, ranks_per_node = 1, experts = 4, slots = 6, placement = array<i64: 0, 1, 2, 3, 0, 1>, replica_choice = locality> : tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %offs = moecomm.expert_offsets %h : !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4, slots = 6>
  %out = moecomm.combine %recv, %h weighted : tensor<?x16xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4, slots = 6> -> tensor<?x16xbf16>
  return %out, %tpe, %offs : tensor<?x16xbf16>, tensor<3xi64>, tensor<4xi64>
}

// E need not divide over the ranks with a placement (S does): 3 experts, 4
// slots on 2 ranks; the staged layout carries the placement.
// CHECK-LABEL: func.func @staged
// CHECK: moecomm.layout %{{.*}}, %{{.*}} topology<ranks = 2, ranks_per_node = 1, experts = 3, slots = 4, placement = array<i64: 0, 1, 2, 0>, replica_choice = load_only> strategy<flat> : tensor<?x2xi32>, tensor<?x2xf32>
// CHECK: moecomm.permute %{{.*}}, %{{.*}} dispatch stage 0 : tensor<?x16xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 3, slots = 4, strategy = flat>
// CHECK: return %{{.*}} : tensor<2xi64>
func.func @staged(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<2xi64> {
  %h, %rw, %tpe = moecomm.layout %idx, %w topology<ranks = 2, ranks_per_node = 1, experts = 3, slots = 4, placement = array<i64: 0, 1, 2, 0>, replica_choice = load_only> strategy<flat> : tensor<?x2xi32>, tensor<?x2xf32>
  %send = moecomm.permute %x, %h dispatch stage 0 : tensor<?x16xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 3, slots = 4, strategy = flat>
  return %tpe : tensor<2xi64>
}
