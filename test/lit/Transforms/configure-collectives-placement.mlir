// Retargeting a topology with an expert placement: ranks= keeps the
// placement when the new W divides its S slots (tokens_per_expert follows
// S/W, function signatures too); otherwise, and for experts=, it is an error
// that names the placement.
// RUN: moecomm-opt %s --moecomm-configure-collectives="ranks=3" | FileCheck %s
// RUN: not moecomm-opt %s --moecomm-configure-collectives="ranks=4" 2>&1 | FileCheck %s --check-prefix=RANKS
// RUN: not moecomm-opt %s --moecomm-configure-collectives="experts=8" 2>&1 | FileCheck %s --check-prefix=EXPERTS
// RUN: moecomm-opt %s --moecomm-split-hierarchical="ranks=6 ranks-per-node=3 strategy=hierarchical" | FileCheck %s --check-prefix=SPLIT

// CHECK-LABEL: func.func @layer
// CHECK-SAME: -> (tensor<?x16xbf16>, tensor<2xi64>)
// CHECK: moecomm.dispatch {{.*}} topology<ranks = 3, ranks_per_node = 1, experts = 4, slots = 6, placement = array<i64: 0, 1, 2, 3, 0, 1>>
// CHECK: moecomm.combine {{.*}} !moecomm.handle<ranks = 3, ranks_per_node = 1, experts = 4, slots = 6>
// CHECK: return %{{.*}}, %{{.*}} : tensor<?x16xbf16>, tensor<2xi64>

// RANKS: error: cannot retarget 2 ranks x 1 per node to 4 ranks x 1 per node: placement: 6 slots are not divisible by 4 ranks
// EXPERTS: error: cannot retarget 4 experts to 8: the expert placement's 6 slots hold logical experts of [0, 4); write a placement for 8 experts instead

// The staged level works on slots: one slot per rank on 6 ranks as 2 x 3.
// SPLIT: moecomm.layout {{.*}} topology<ranks = 6, ranks_per_node = 3, experts = 4, slots = 6, placement = array<i64: 0, 1, 2, 3, 0, 1>> strategy<hierarchical>
// SPLIT: moecomm.exchange {{.*}} dispatch stage 0 scope<inter_node> : tensor<?x16xbf16>, !moecomm.handle<ranks = 6, ranks_per_node = 3, experts = 4, slots = 6, strategy = hierarchical>
// SPLIT: moecomm.exchange {{.*}} dispatch stage 1 scope<intra_node>
// SPLIT: return %{{.*}}, %{{.*}} : tensor<?x16xbf16>, tensor<1xi64>
func.func @layer(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> (tensor<?x16xbf16>, tensor<3xi64>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 2, ranks_per_node = 1, experts = 4, slots = 6, placement = array<i64: 0, 1, 2, 3, 0, 1>> : tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x16xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4, slots = 6> -> tensor<?x16xbf16>
  return %out, %tpe : tensor<?x16xbf16>, tensor<3xi64>
}
