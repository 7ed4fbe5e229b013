// RUN: moecomm-opt %s -split-input-file --moecomm-split-hierarchical=strategy=hierarchical | FileCheck %s --check-prefix=HIER
// RUN: moecomm-opt %s -split-input-file --moecomm-split-hierarchical=strategy=flat | FileCheck %s --check-prefix=FLAT
// RUN: moecomm-opt %s -split-input-file --moecomm-split-hierarchical=strategy=per_expert | FileCheck %s --check-prefix=PEREXPERT

// Two nodes of four ranks: inter_node then intra_node for dispatch, the
// reverse for combine; flat and per_expert use one global exchange.
// HIER-LABEL: func.func @two_level
// HIER: %[[H:.*]], %{{.*}}, %[[TPE:.*]] = moecomm.layout %arg1, %arg2 topology<ranks = 8, ranks_per_node = 4, experts = 16> strategy<hierarchical> capacity(32)
// HIER: %[[P0:.*]] = moecomm.permute %arg0, %[[H]] dispatch stage 0
// HIER: %[[R0:.*]] = moecomm.exchange %[[P0]], %[[H]] dispatch stage 0 scope<inter_node>
// HIER: %[[P1:.*]] = moecomm.permute %[[R0]], %[[H]] dispatch stage 1
// HIER: %[[R1:.*]] = moecomm.exchange %[[P1]], %[[H]] dispatch stage 1 scope<intra_node>
// HIER: %[[RECV:.*]] = moecomm.permute %[[R1]], %[[H]] dispatch output
// HIER: %[[C0:.*]] = moecomm.permute %[[RECV]], %[[H]] combine stage 0 weighted
// HIER: %[[Q0:.*]] = moecomm.exchange %[[C0]], %[[H]] combine stage 0 scope<intra_node>
// HIER: %[[C1:.*]] = moecomm.permute %[[Q0]], %[[H]] combine stage 1 weighted
// HIER: %[[Q1:.*]] = moecomm.exchange %[[C1]], %[[H]] combine stage 1 scope<inter_node>
// HIER: %[[OUT:.*]] = moecomm.permute %[[Q1]], %[[H]] combine output weighted
// HIER-NOT: moecomm.dispatch
// HIER-NOT: moecomm.combine
// HIER: return %[[OUT]], %[[TPE]]
// FLAT-LABEL: func.func @two_level
// FLAT: moecomm.layout {{.*}} strategy<flat>
// FLAT: moecomm.exchange {{.*}} dispatch stage 0 scope<global>
// FLAT-NOT: stage 1
// FLAT: moecomm.exchange {{.*}} combine stage 0 scope<global>
// PEREXPERT-LABEL: func.func @two_level
// PEREXPERT: moecomm.layout {{.*}} strategy<per_expert>
// PEREXPERT: moecomm.exchange {{.*}} dispatch stage 0 scope<global>
// PEREXPERT: moecomm.exchange {{.*}} combine stage 0 scope<global>
func.func @two_level(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> (tensor<?x64xbf16>, tensor<2xi64>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> capacity(32) : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xbf16>
  return %out, %tpe : tensor<?x64xbf16>, tensor<2xi64>
}

// -----

// Degenerate topologies of the hierarchical strategy.
// HIER-LABEL: func.func @one_node
// HIER: moecomm.exchange {{.*}} dispatch stage 0 scope<intra_node>
// HIER-NOT: stage 1
// HIER: moecomm.exchange {{.*}} combine stage 0 scope<intra_node>
func.func @one_node(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x64xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 4, experts = 8> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %h : tensor<?x64xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 4, experts = 8> -> tensor<?x64xbf16>
  return %out : tensor<?x64xbf16>
}

// HIER-LABEL: func.func @one_rank_per_node
// HIER: moecomm.exchange {{.*}} dispatch stage 0 scope<inter_node>
// HIER-NOT: stage 1
// HIER: moecomm.exchange {{.*}} combine stage 0 scope<inter_node>
func.func @one_rank_per_node(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x64xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 1, experts = 8> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %h : tensor<?x64xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 1, experts = 8> -> tensor<?x64xbf16>
  return %out : tensor<?x64xbf16>
}

// No exchange at all on one rank; the FP8 wire still rounds through e4m3.
// HIER-LABEL: func.func @one_rank_fp8
// HIER: %[[Q:.*]], %[[S:.*]] = moecomm.quantize %arg0
// HIER: %[[O:.*]], %[[OS:.*]] = moecomm.permute %[[Q]] scales(%[[S]] : tensor<?x1xf32>), %{{.*}} dispatch output
// HIER: %[[D:.*]] = moecomm.dequantize %[[O]], %[[OS]]
// HIER: moecomm.permute %[[D]], %{{.*}} combine output weighted
// HIER-NOT: moecomm.exchange
func.func @one_rank_fp8(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x64xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 1, ranks_per_node = 1, experts = 8> wire<fp8_e4m3> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 1, ranks_per_node = 1, experts = 8> -> tensor<?x64xbf16>
  return %out : tensor<?x64xbf16>
}

// -----

// FP8 wire before fusion: quantize -> exchange -> dequantize on every hop.
// HIER-LABEL: func.func @fp8_per_hop
// HIER: moecomm.permute %arg0, %{{.*}} dispatch stage 0
// HIER-NEXT: moecomm.quantize
// HIER-NEXT: moecomm.exchange {{.*}} scales({{.*}} : tensor<?x3xf32>){{.*}} dispatch stage 0 scope<inter_node> : tensor<?x300xf8E4M3FN>
// HIER-NEXT: moecomm.dequantize
// HIER-NEXT: moecomm.permute {{.*}} dispatch stage 1
// HIER-NEXT: moecomm.quantize
// HIER-NEXT: moecomm.exchange {{.*}} dispatch stage 1 scope<intra_node> : tensor<?x300xf8E4M3FN>
// HIER-NEXT: moecomm.dequantize
// HIER-NEXT: moecomm.permute {{.*}} dispatch output
func.func @fp8_per_hop(%x: tensor<?x300xf32>, %idx: tensor<?x3xi64>, %w: tensor<?x3xf32>) -> tensor<?x300xf32> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> wire<fp8_e4m3> : tensor<?x300xf32>, tensor<?x3xi64>, tensor<?x3xf32>
  return %recv : tensor<?x300xf32>
}

// -----

// The strategy is recorded in the handle type and follows it into the
// backward function, whose combine uses the same stages.
// HIER-LABEL: func.func @forward
// HIER-SAME: -> (tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical>)
// HIER-LABEL: func.func @backward
// HIER-SAME: %arg1: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical>
// HIER: moecomm.exchange {{.*}} combine stage 0 scope<intra_node>
// HIER: moecomm.exchange {{.*}} combine stage 1 scope<inter_node>
// HIER-LABEL: func.func @step
// HIER: call @forward{{.*}}strategy = hierarchical
// FLAT-LABEL: func.func @backward
// FLAT: moecomm.exchange {{.*}} combine stage 0 scope<global>
func.func @forward(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> (tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  return %recv, %h : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>
}
func.func @backward(%dy: tensor<?x64xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) -> tensor<?x64xbf16> {
  %dx = moecomm.combine %dy, %h : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xbf16>
  return %dx : tensor<?x64xbf16>
}
func.func @step(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x64xbf16> {
  %r:2 = call @forward(%x, %idx, %w) : (tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>) -> (tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>)
  %dx = call @backward(%r#0, %r#1) : (tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) -> tensor<?x64xbf16>
  return %dx : tensor<?x64xbf16>
}

// -----

// An op's own strategy<...> wins over the pass option.
// FLAT-LABEL: func.func @own_strategy
// FLAT: moecomm.layout {{.*}} strategy<hierarchical>
func.func @own_strategy(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x64xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> strategy<hierarchical> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  return %recv : tensor<?x64xbf16>
}

// -----

// A training step: the backward sends grad_out along the forward's layout
// (no second layout) and combines the expert gradients unweighted.
// HIER-LABEL: func.func @training_step
// HIER-COUNT-1: moecomm.layout
// HIER: moecomm.permute %arg3, %[[H:.*]] dispatch stage 0
// HIER: moecomm.exchange {{.*}}, %[[H]] dispatch stage 0 scope<inter_node>
// HIER-NOT: moecomm.layout
// HIER: return
func.func @training_step(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>, %grad_out: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xbf16>
  %grad_recv = moecomm.cached_dispatch %grad_out, %h : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>
  %grad_x = moecomm.combine %grad_recv, %h : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xbf16>
  return %out, %grad_x : tensor<?x64xbf16>, tensor<?x64xbf16>
}
