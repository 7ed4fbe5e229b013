// With strategy=per_expert, a handle whose type carries no strategy (a
// function argument no dispatch in the module feeds) follows it; a handle
// type's own strategy still wins.
// RUN: moecomm-opt %s --moecomm-lower-collectives=strategy=per_expert | FileCheck %s

// CHECK-LABEL: func.func @argument_handles
// CHECK: moecomm.exchange {{.*}} combine stage 0 scope<intra_node>
// CHECK: moecomm.exchange {{.*}} combine stage 1 scope<inter_node>
// CHECK: moecomm.permute {{.*}} combine output
// CHECK: moecomm.exchange {{.*}} combine stage 0 scope<global>
// CHECK-NOT: stage 1
func.func @argument_handles(%dy: tensor<?x64xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical>, %g: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %a = moecomm.combine %dy, %h : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical> -> tensor<?x64xbf16>
  %b = moecomm.combine %dy, %g : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xbf16>
  return %a, %b : tensor<?x64xbf16>, tensor<?x64xbf16>
}
