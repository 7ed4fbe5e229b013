// Staged IR follows a retarget when its plan (stages and their scopes) is the
// same on the new topology, and fails in the pass otherwise. The strategy=
// option does not replan staged IR: its layouts keep their strategy, as a
// dispatch with its own strategy<...> does.
// RUN: moecomm-opt %s --moecomm-split-hierarchical="ranks=2 ranks-per-node=1" | FileCheck %s
// RUN: moecomm-opt %s --moecomm-split-hierarchical="strategy=hierarchical" | FileCheck %s --check-prefix=STRATEGY
// RUN: not moecomm-opt %s --moecomm-split-hierarchical="ranks=1 ranks-per-node=1" 2>&1 | FileCheck %s --check-prefix=ONE
// Split twice: the second split retargets the first's staged IR.
// RUN: not moecomm-opt %moecomm_src/examples/mixtral-8x7b.mlir --moecomm-split-hierarchical=strategy=hierarchical --moecomm-split-hierarchical="ranks=4 ranks-per-node=1" 2>&1 | FileCheck %s --check-prefix=TWICE

// CHECK-LABEL: func.func @flat
// CHECK: moecomm.layout {{.*}} topology<ranks = 2, ranks_per_node = 1, experts = 2> strategy<flat>
// CHECK: moecomm.exchange {{.*}} dispatch stage 0 scope<global> : tensor<?x8xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 2, strategy = flat>
// STRATEGY-LABEL: func.func @flat
// STRATEGY: moecomm.layout {{.*}} topology<ranks = 2, ranks_per_node = 2, experts = 2> strategy<flat>
// STRATEGY: moecomm.exchange {{.*}} dispatch stage 0 scope<global>
// ONE: error: cannot retarget staged IR planned for flat on 2 ranks x 2 per node to 1 ranks x 1 per node: its 1 exchange stage(s) (global) would become no exchange stage; retarget the collective IR (dispatch/combine, before moecomm-split-hierarchical) instead
// ONE-NOT: out of range
// TWICE: error: cannot retarget staged IR planned for hierarchical on 8 ranks x 8 per node to 4 ranks x 1 per node
// TWICE-NOT: is inter_node
func.func @flat(%x: tensor<?x8xbf16>, %idx: tensor<?x1xi32>, %w: tensor<?x1xf32>) -> tensor<?x8xbf16> {
  %h, %rw, %tpe = moecomm.layout %idx, %w topology<ranks = 2, ranks_per_node = 2, experts = 2> strategy<flat> : tensor<?x1xi32>, tensor<?x1xf32>
  %p = moecomm.pack %x, %h dispatch stage 0 : tensor<?x8xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 2, experts = 2, strategy = flat> -> tensor<?x8xbf16>
  %r = moecomm.exchange %p, %h dispatch stage 0 scope<global> : tensor<?x8xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 2, experts = 2, strategy = flat>
  %u = moecomm.unpack %r, %h dispatch : tensor<?x8xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 2, experts = 2, strategy = flat> -> tensor<?x8xbf16>
  return %u : tensor<?x8xbf16>
}
