// Layers that cannot be chunked get a remark and stay correct (only async).
// RUN: moecomm-opt %s -split-input-file --moecomm-split-hierarchical=strategy=flat --moecomm-fuse-permute --moecomm-schedule-overlap=chunks=2 -verify-diagnostics | FileCheck %s

// A transpose mixes rows: not row-wise.
// CHECK-LABEL: func.func @not_row_wise
// CHECK-COUNT-1: moecomm.layout
// CHECK: moecomm.exchange_start
// CHECK: moecomm.exchange_wait
func.func @not_row_wise(%x: tensor<?x64xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>, %init: tensor<64x?xf32>) -> tensor<?x64xf32> {
  // expected-remark @+1 {{moecomm-schedule-overlap: not chunked: 'linalg.transpose' mixes rows}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  %t = linalg.transpose ins(%recv : tensor<?x64xf32>) outs(%init : tensor<64x?xf32>) permutation = [1, 0]
  %c = tensor.cast %t : tensor<64x?xf32> to tensor<?x64xf32>
  %out = moecomm.combine %c, %h weighted : tensor<?x64xf32>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xf32>
  return %out : tensor<?x64xf32>
}

// -----

// A body that reads its row index: once chunked, the index counts from the
// chunk's first row, so the same row would get another value.
// CHECK-LABEL: func.func @reads_row_index
// CHECK-COUNT-1: moecomm.layout
func.func @reads_row_index(%x: tensor<?x64xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x64xf32> {
  // expected-remark @+1 {{moecomm-schedule-overlap: not chunked: 'linalg.generic' reads its row index (linalg.index), which is the position in the chunk once chunked}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%recv : tensor<?x64xf32>) outs(%recv : tensor<?x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %f = arith.uitofp %ii : i64 to f32
    %r = arith.addf %v, %f : f32
    linalg.yield %r : f32
  } -> tensor<?x64xf32>
  %out = moecomm.combine %y, %h weighted : tensor<?x64xf32>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xf32>
  return %out : tensor<?x64xf32>
}

// -----

// Grouped GEMMs that read tokens_per_expert depend on the whole batch.
func.func @uses_counts(%x: tensor<?x64xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> (tensor<?x64xf32>, tensor<2xi64>) {
  // expected-remark @+1 {{moecomm-schedule-overlap: not chunked: it uses tokens_per_expert, which changes with the chunk}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x64xf32>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xf32>
  return %out, %tpe : tensor<?x64xf32>, tensor<2xi64>
}

// -----

// The dispatched rows leave the layer.
func.func @rows_escape(%x: tensor<?x64xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  // expected-remark @+1 {{moecomm-schedule-overlap: not chunked: a value of the layer ('moecomm.unpack') is used outside it}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x64xf32>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xf32>
  return %out, %recv : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// A dispatch without a combine (e.g. the forward half of a split graph).
func.func @no_combine(%x: tensor<?x64xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x64xf32> {
  // expected-remark @+1 {{moecomm-schedule-overlap: not chunked: its handle is used by no combine}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  return %recv : tensor<?x64xf32>
}

// -----

// Capacity applies to the whole batch.
func.func @capacity(%x: tensor<?x64xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x64xf32> {
  // expected-remark @+1 {{moecomm-schedule-overlap: not chunked: its capacity bounds the rows of the whole batch (every chunk would get the full capacity)}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> capacity(16) : tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x64xf32>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xf32>
  return %out : tensor<?x64xf32>
}

// -----

// The dispatched rows are never combined (the combine takes other rows): the
// dispatch depends on the layout but would be left behind by chunking.
func.func @dispatch_not_combined(%x: tensor<?x64xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>, %y: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-remark @+1 {{moecomm-schedule-overlap: not chunked: 'moecomm.exchange' depends on the layout but does not lead to its combine}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %y, %h weighted : tensor<?x64xf32>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xf32>
  return %out : tensor<?x64xf32>
}

// -----

// A static T whose rows times the row width do not fit the 64-bit element
// offsets of the chunks' buffers.
func.func @huge_static_tokens(%x: tensor<9223372036854775806x64xf32>, %idx: tensor<9223372036854775806x2xi32>, %w: tensor<9223372036854775806x2xf32>) -> tensor<?x64xf32> {
  // expected-remark @+1 {{moecomm-schedule-overlap: not chunked: its 9223372036854775806 rows of 2 elements overflow a 64-bit element offset}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<9223372036854775806x64xf32>, tensor<9223372036854775806x2xi32>, tensor<9223372036854775806x2xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x64xf32>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xf32>
  return %out : tensor<?x64xf32>
}

// -----

// The backward half reads a gradient computed from the forward's combine
// output: the chunks cannot replace both combines in one place.
func.func @grad_from_output(%x: tensor<?x64xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  // expected-remark @+1 {{moecomm-schedule-overlap: not chunked: the output of one of its combines is used ('arith.mulf') before a value the layer reads ('arith.mulf') is computed}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x64xf32>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xf32>
  %grad = arith.mulf %out, %out : tensor<?x64xf32>
  %grad_recv = moecomm.cached_dispatch %grad, %h : tensor<?x64xf32>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>
  %gx = moecomm.combine %grad_recv, %h : tensor<?x64xf32>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xf32>
  return %out, %gx : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// An op with unknown effects between the dispatch and the combine keeps its
// place relative to both, so the layer cannot move as a whole.
func.func private @sync()
func.func @barrier_inside(%x: tensor<?x64xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x64xf32> {
  // expected-remark @+1 {{moecomm-schedule-overlap: not chunked: 'func.call' has memory effects and sits among its ops}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  call @sync() : () -> ()
  %out = moecomm.combine %recv, %h weighted : tensor<?x64xf32>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xf32>
  return %out : tensor<?x64xf32>
}
