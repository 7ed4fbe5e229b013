// RUN: moecomm-opt %s --moecomm-cost-report="preset=h200-dgx" -o /dev/null 2>&1 | FileCheck %s
// The report goes to stderr; the IR on stdout is unchanged.
// RUN: moecomm-opt %s --moecomm-cost-report 2>/dev/null | moecomm-opt | FileCheck %s --check-prefix=IR

// CHECK: moecomm-cost-report: dispatch at
// CHECK-NEXT: ranks=16 ranks_per_node=8 experts=256 topk=8 hidden=7168 wire=fp8_e4m3 tokens/rank=1024 (static), link model h200-dgx (modelled, uniform routing)
// CHECK: per_expert   dispatch  0     global
// CHECK: flat         dispatch  0     global
// CHECK: hierarchical dispatch  0     inter_node
// CHECK: hierarchical dispatch  1     intra_node
// CHECK: hierarchical combine   0     intra_node
// CHECK: hierarchical combine   1     inter_node
// CHECK: auto picks: hierarchical
// IR: func.func @layer(%{{.*}}: tensor<1024x7168xbf16>
// IR: moecomm.dispatch
func.func @layer(%x: tensor<1024x7168xbf16>, %idx: tensor<1024x8xi32>, %w: tensor<1024x8xf32>) -> tensor<?x7168xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 16, ranks_per_node = 8, experts = 256> wire<fp8_e4m3> : tensor<1024x7168xbf16>, tensor<1024x8xi32>, tensor<1024x8xf32>
  return %recv : tensor<?x7168xbf16>
}
