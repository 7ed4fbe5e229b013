// Scheduling a scheduled function again leaves it as it is (no chunks of
// chunks), says so for every layout, and the IR stays valid.
// RUN: moecomm-opt %s --moecomm-split-hierarchical=strategy=flat --moecomm-schedule-overlap=chunks=2 --moecomm-schedule-overlap=chunks=2 2>/dev/null | FileCheck %s
// RUN: moecomm-opt %s --moecomm-split-hierarchical=strategy=flat --moecomm-schedule-overlap=chunks=2 --moecomm-schedule-overlap=chunks=2 -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// CHECK-LABEL: func.func @training_step
// CHECK-COUNT-2: moecomm.layout
// CHECK-NOT: moecomm.layout
// CHECK: return

// REMARK-COUNT-2: schedule-overlap-twice.mlir:[[@LINE+3]]:{{[0-9]+}}: remark: moecomm-schedule-overlap: already scheduled (its exchanges are asynchronous); left as is
// REMARK-NOT: remark
func.func @training_step(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>, %grad_out: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %y = arith.mulf %recv, %recv : tensor<?x64xbf16>
  %out = moecomm.combine %y, %h weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xbf16>
  %grad_recv = moecomm.cached_dispatch %grad_out, %h : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>
  %grad_y = arith.addf %grad_recv, %grad_recv : tensor<?x64xbf16>
  %grad_x = moecomm.combine %grad_y, %h : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xbf16>
  return %out, %grad_x : tensor<?x64xbf16>, tensor<?x64xbf16>
}
