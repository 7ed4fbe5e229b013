// With an expert placement the cost model counts the S slots as experts
// (uniform routing over slots) and says that replicas are chosen at run
// time: it has no routing to bound per token. Without one the report is as
// before (no placement line).
// RUN: moecomm-opt %s --moecomm-cost-report="preset=h200-dgx" -o /dev/null 2>&1 | FileCheck %s

// CHECK: ranks=16 ranks_per_node=8 experts=16 topk=2 hidden=128
// CHECK-NEXT: expert placement: 32 slots (2 per rank) for 16 experts, replica_choice=load_only; replicas are chosen at run time, the model counts the 32 slots as experts
// CHECK-NEXT: strategy
// CHECK: hierarchical dispatch  0     inter_node [[BYTES:.*]]
func.func @replicated(%x: tensor<?x128xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x128xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 16, ranks_per_node = 8, experts = 16, slots = 32, placement = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>, replica_choice = load_only> : tensor<?x128xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  return %recv : tensor<?x128xbf16>
}

// The same 32 experts without replicas: the same modelled traffic, no line.
// CHECK: ranks=16 ranks_per_node=8 experts=32 topk=2 hidden=128
// CHECK-NEXT: strategy
// CHECK: hierarchical dispatch  0     inter_node [[BYTES]]
func.func @plain(%x: tensor<?x128xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x128xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 16, ranks_per_node = 8, experts = 32> : tensor<?x128xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  return %recv : tensor<?x128xbf16>
}
