// Segment loops (the expert-FFN form) that break the rules of
// moecomm-schedule-overlap's chunking get a remark naming the op and why,
// and are only made asynchronous. One case per reason.
// RUN: moecomm-opt %s -split-input-file --moecomm-split-hierarchical=strategy=flat --moecomm-fuse-permute --moecomm-schedule-overlap=chunks=2 -verify-diagnostics | FileCheck %s
// CHECK-COUNT-15: moecomm.layout
// CHECK-NOT: moecomm.layout

// The offsets advance by a constant, not by tokens_per_expert[e]: iteration e
// would not read expert e's segment.
func.func @offsets_not_from_counts(%x: tensor<?x16xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>, %w_gate: tensor<?x16x16xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  // expected-remark @+1 {{moecomm-schedule-overlap: not chunked: 'scf.for' carries an index (#1) that is not the segment offset (0, then plus the expert's tokens_per_expert in every iteration)}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x16xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  %counts = tensor.cast %tpe : tensor<2xi64> to tensor<?xi64>
  %n = tensor.dim %counts, %c0 : tensor<?xi64>
  %rows = tensor.dim %recv, %c0 : tensor<?x16xf32>
  %init = tensor.empty(%rows) : tensor<?x16xf32>
  %y:2 = scf.for %e = %c0 to %n step %c1 iter_args(%acc = %init, %off = %c0) -> (tensor<?x16xf32>, index) {
    %cnt64 = tensor.extract %counts[%e] : tensor<?xi64>
    %cnt = arith.index_cast %cnt64 : i64 to index
    %wg = tensor.extract_slice %w_gate[%e, 0, 0] [1, 16, 16] [1, 1, 1] : tensor<?x16x16xf32> to tensor<16x16xf32>
    %ze = tensor.empty(%cnt) : tensor<?x16xf32>
    %z = linalg.fill ins(%zero : f32) outs(%ze : tensor<?x16xf32>) -> tensor<?x16xf32>
    %seg = tensor.extract_slice %recv[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xf32> to tensor<?x16xf32>
    %d = linalg.matmul ins(%seg, %wg : tensor<?x16xf32>, tensor<16x16xf32>) outs(%z : tensor<?x16xf32>) -> tensor<?x16xf32>
    %acc2 = tensor.insert_slice %d into %acc[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xf32> into tensor<?x16xf32>
    %off2 = arith.addi %off, %c4 : index
    scf.yield %acc2, %off2 : tensor<?x16xf32>, index
  }
  %out = moecomm.combine %y#0, %h weighted : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xf32>
  return %out : tensor<?x16xf32>
}

// -----

// The segment's size is a constant, not tokens_per_expert[e].
func.func @sizes_not_from_counts(%x: tensor<?x16xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>, %w_gate: tensor<?x16x16xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  // expected-remark @+1 {{moecomm-schedule-overlap: not chunked: 'tensor.extract_slice' in 'scf.for' reads rows outside its expert's segment ('moecomm.unpack')}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x16xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  %counts = tensor.cast %tpe : tensor<2xi64> to tensor<?xi64>
  %n = tensor.dim %counts, %c0 : tensor<?xi64>
  %rows = tensor.dim %recv, %c0 : tensor<?x16xf32>
  %init = tensor.empty(%rows) : tensor<?x16xf32>
  %y:2 = scf.for %e = %c0 to %n step %c1 iter_args(%acc = %init, %off = %c0) -> (tensor<?x16xf32>, index) {
    %cnt64 = tensor.extract %counts[%e] : tensor<?xi64>
    %cnt = arith.index_cast %cnt64 : i64 to index
    %wg = tensor.extract_slice %w_gate[%e, 0, 0] [1, 16, 16] [1, 1, 1] : tensor<?x16x16xf32> to tensor<16x16xf32>
    %ze = tensor.empty(%cnt) : tensor<?x16xf32>
    %z = linalg.fill ins(%zero : f32) outs(%ze : tensor<?x16xf32>) -> tensor<?x16xf32>
    %seg = tensor.extract_slice %recv[%off, 0] [%c4, 16] [1, 1] : tensor<?x16xf32> to tensor<?x16xf32>
    %d = linalg.matmul ins(%seg, %wg : tensor<?x16xf32>, tensor<16x16xf32>) outs(%z : tensor<?x16xf32>) -> tensor<?x16xf32>
    %acc2 = tensor.insert_slice %d into %acc[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xf32> into tensor<?x16xf32>
    %off2 = arith.addi %off, %cnt : index
    scf.yield %acc2, %off2 : tensor<?x16xf32>, index
  }
  %out = moecomm.combine %y#0, %h weighted : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xf32>
  return %out : tensor<?x16xf32>
}

// -----

// Every iteration multiplies all received rows, not its segment: a row's
// result would mix in the other experts' rows.
func.func @whole_rows_in_loop(%x: tensor<?x16xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>, %w_gate: tensor<?x16x16xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  // expected-remark @+1 {{moecomm-schedule-overlap: not chunked: 'linalg.matmul' in 'scf.for' reads rows outside its expert's segment ('moecomm.unpack')}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x16xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  %counts = tensor.cast %tpe : tensor<2xi64> to tensor<?xi64>
  %n = tensor.dim %counts, %c0 : tensor<?xi64>
  %rows = tensor.dim %recv, %c0 : tensor<?x16xf32>
  %init = tensor.empty(%rows) : tensor<?x16xf32>
  %y:2 = scf.for %e = %c0 to %n step %c1 iter_args(%acc = %init, %off = %c0) -> (tensor<?x16xf32>, index) {
    %cnt64 = tensor.extract %counts[%e] : tensor<?xi64>
    %cnt = arith.index_cast %cnt64 : i64 to index
    %wg = tensor.extract_slice %w_gate[%e, 0, 0] [1, 16, 16] [1, 1, 1] : tensor<?x16x16xf32> to tensor<16x16xf32>
    %ze = tensor.empty(%cnt) : tensor<?x16xf32>
    %z = linalg.fill ins(%zero : f32) outs(%ze : tensor<?x16xf32>) -> tensor<?x16xf32>
    %d = linalg.matmul ins(%recv, %wg : tensor<?x16xf32>, tensor<16x16xf32>) outs(%z : tensor<?x16xf32>) -> tensor<?x16xf32>
    %acc2 = tensor.insert_slice %d into %acc[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xf32> into tensor<?x16xf32>
    %off2 = arith.addi %off, %cnt : index
    scf.yield %acc2, %off2 : tensor<?x16xf32>, index
  }
  %out = moecomm.combine %y#0, %h weighted : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xf32>
  return %out : tensor<?x16xf32>
}

// -----

// An iteration reads the rows earlier iterations assembled (rows of other
// segments).
func.func @reads_assembled_rows(%x: tensor<?x16xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>, %w_gate: tensor<?x16x16xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  // expected-remark @+1 {{moecomm-schedule-overlap: not chunked: 'scf.for' carries a value (#0) that is not received rows assembled from segments (a tensor.empty of the received row count, every expert's segment inserted at its offset)}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x16xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  %counts = tensor.cast %tpe : tensor<2xi64> to tensor<?xi64>
  %n = tensor.dim %counts, %c0 : tensor<?xi64>
  %rows = tensor.dim %recv, %c0 : tensor<?x16xf32>
  %init = tensor.empty(%rows) : tensor<?x16xf32>
  %y:2 = scf.for %e = %c0 to %n step %c1 iter_args(%acc = %init, %off = %c0) -> (tensor<?x16xf32>, index) {
    %cnt64 = tensor.extract %counts[%e] : tensor<?xi64>
    %cnt = arith.index_cast %cnt64 : i64 to index
    %wg = tensor.extract_slice %w_gate[%e, 0, 0] [1, 16, 16] [1, 1, 1] : tensor<?x16x16xf32> to tensor<16x16xf32>
    %ze = tensor.empty(%cnt) : tensor<?x16xf32>
    %z = linalg.fill ins(%zero : f32) outs(%ze : tensor<?x16xf32>) -> tensor<?x16xf32>
    %prev = tensor.extract_slice %acc[%c0, 0] [%cnt, 16] [1, 1] : tensor<?x16xf32> to tensor<?x16xf32>
    %d = linalg.matmul ins(%prev, %wg : tensor<?x16xf32>, tensor<16x16xf32>) outs(%z : tensor<?x16xf32>) -> tensor<?x16xf32>
    %acc2 = tensor.insert_slice %d into %acc[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xf32> into tensor<?x16xf32>
    %off2 = arith.addi %off, %cnt : index
    scf.yield %acc2, %off2 : tensor<?x16xf32>, index
  }
  %out = moecomm.combine %y#0, %h weighted : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xf32>
  return %out : tensor<?x16xf32>
}

// -----

// The loop starts at expert 1: its offsets (from 0) are not expert e's.
func.func @not_every_expert(%x: tensor<?x16xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>, %w_gate: tensor<?x16x16xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  // expected-remark @+1 {{moecomm-schedule-overlap: not chunked: 'scf.for' is not a loop over the local experts (from 0 to the size of tokens_per_expert, step 1)}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x16xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  %counts = tensor.cast %tpe : tensor<2xi64> to tensor<?xi64>
  %n = tensor.dim %counts, %c0 : tensor<?xi64>
  %rows = tensor.dim %recv, %c0 : tensor<?x16xf32>
  %init = tensor.empty(%rows) : tensor<?x16xf32>
  %y:2 = scf.for %e = %c1 to %n step %c1 iter_args(%acc = %init, %off = %c0) -> (tensor<?x16xf32>, index) {
    %cnt64 = tensor.extract %counts[%e] : tensor<?xi64>
    %cnt = arith.index_cast %cnt64 : i64 to index
    %wg = tensor.extract_slice %w_gate[%e, 0, 0] [1, 16, 16] [1, 1, 1] : tensor<?x16x16xf32> to tensor<16x16xf32>
    %ze = tensor.empty(%cnt) : tensor<?x16xf32>
    %z = linalg.fill ins(%zero : f32) outs(%ze : tensor<?x16xf32>) -> tensor<?x16xf32>
    %seg = tensor.extract_slice %recv[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xf32> to tensor<?x16xf32>
    %d = linalg.matmul ins(%seg, %wg : tensor<?x16xf32>, tensor<16x16xf32>) outs(%z : tensor<?x16xf32>) -> tensor<?x16xf32>
    %acc2 = tensor.insert_slice %d into %acc[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xf32> into tensor<?x16xf32>
    %off2 = arith.addi %off, %cnt : index
    scf.yield %acc2, %off2 : tensor<?x16xf32>, index
  }
  %out = moecomm.combine %y#0, %h weighted : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xf32>
  return %out : tensor<?x16xf32>
}

// -----

// A row is divided by its segment's size, which differs from chunk to chunk.
func.func @size_as_data(%x: tensor<?x16xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>, %w_gate: tensor<?x16x16xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  // expected-remark @+1 {{moecomm-schedule-overlap: not chunked: 'linalg.generic' reads 'arith.uitofp', which changes with the chunk, as data}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x16xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  %counts = tensor.cast %tpe : tensor<2xi64> to tensor<?xi64>
  %n = tensor.dim %counts, %c0 : tensor<?xi64>
  %rows = tensor.dim %recv, %c0 : tensor<?x16xf32>
  %init = tensor.empty(%rows) : tensor<?x16xf32>
  %y:2 = scf.for %e = %c0 to %n step %c1 iter_args(%acc = %init, %off = %c0) -> (tensor<?x16xf32>, index) {
    %cnt64 = tensor.extract %counts[%e] : tensor<?xi64>
    %cnt = arith.index_cast %cnt64 : i64 to index
    %wg = tensor.extract_slice %w_gate[%e, 0, 0] [1, 16, 16] [1, 1, 1] : tensor<?x16x16xf32> to tensor<16x16xf32>
    %ze = tensor.empty(%cnt) : tensor<?x16xf32>
    %z = linalg.fill ins(%zero : f32) outs(%ze : tensor<?x16xf32>) -> tensor<?x16xf32>
    %seg = tensor.extract_slice %recv[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xf32> to tensor<?x16xf32>
    %cf = arith.uitofp %cnt64 : i64 to f32
    %d = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%seg : tensor<?x16xf32>) outs(%ze : tensor<?x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %q = arith.divf %a, %cf : f32
      linalg.yield %q : f32
    } -> tensor<?x16xf32>
    %acc2 = tensor.insert_slice %d into %acc[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xf32> into tensor<?x16xf32>
    %off2 = arith.addi %off, %cnt : index
    scf.yield %acc2, %off2 : tensor<?x16xf32>, index
  }
  %out = moecomm.combine %y#0, %h weighted : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xf32>
  return %out : tensor<?x16xf32>
}

// -----

// The loop is chunkable, but the function also returns tokens_per_expert,
// which has no single value once the layer is chunked.
func.func @counts_escape(%x: tensor<?x16xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>, %w_gate: tensor<?x16x16xf32>) -> (tensor<?x16xf32>, tensor<?xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  // expected-remark @+1 {{moecomm-schedule-overlap: not chunked: it uses tokens_per_expert, which changes with the chunk}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x16xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  %counts = tensor.cast %tpe : tensor<2xi64> to tensor<?xi64>
  %n = tensor.dim %counts, %c0 : tensor<?xi64>
  %rows = tensor.dim %recv, %c0 : tensor<?x16xf32>
  %init = tensor.empty(%rows) : tensor<?x16xf32>
  %y:2 = scf.for %e = %c0 to %n step %c1 iter_args(%acc = %init, %off = %c0) -> (tensor<?x16xf32>, index) {
    %cnt64 = tensor.extract %counts[%e] : tensor<?xi64>
    %cnt = arith.index_cast %cnt64 : i64 to index
    %wg = tensor.extract_slice %w_gate[%e, 0, 0] [1, 16, 16] [1, 1, 1] : tensor<?x16x16xf32> to tensor<16x16xf32>
    %ze = tensor.empty(%cnt) : tensor<?x16xf32>
    %z = linalg.fill ins(%zero : f32) outs(%ze : tensor<?x16xf32>) -> tensor<?x16xf32>
    %seg = tensor.extract_slice %recv[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xf32> to tensor<?x16xf32>
    %d = linalg.matmul ins(%seg, %wg : tensor<?x16xf32>, tensor<16x16xf32>) outs(%z : tensor<?x16xf32>) -> tensor<?x16xf32>
    %acc2 = tensor.insert_slice %d into %acc[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xf32> into tensor<?x16xf32>
    %off2 = arith.addi %off, %cnt : index
    scf.yield %acc2, %off2 : tensor<?x16xf32>, index
  }
  %out = moecomm.combine %y#0, %h weighted : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xf32>
  return %out, %counts : tensor<?x16xf32>, tensor<?xi64>
}

// -----

// Before the loop, a linalg.generic's region reads received row 0 for every
// row (not through its indexing maps), and the loop takes its segments.
func.func @region_reads_rows(%x: tensor<?x16xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>, %w_gate: tensor<?x16x16xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  // expected-remark @+1 {{moecomm-schedule-overlap: not chunked: 'linalg.generic' mixes rows (its region reads 'moecomm.unpack' whole)}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x16xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  %counts = tensor.cast %tpe : tensor<2xi64> to tensor<?xi64>
  %n = tensor.dim %counts, %c0 : tensor<?xi64>
  %rows = tensor.dim %recv, %c0 : tensor<?x16xf32>
  %init = tensor.empty(%rows) : tensor<?x16xf32>
  %first = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%init : tensor<?x16xf32>) {
  ^bb0(%o: f32):
    %j = linalg.index 1 : index
    %v = tensor.extract %recv[%c0, %j] : tensor<?x16xf32>
    linalg.yield %v : f32
  } -> tensor<?x16xf32>
  %y:2 = scf.for %e = %c0 to %n step %c1 iter_args(%acc = %init, %off = %c0) -> (tensor<?x16xf32>, index) {
    %cnt64 = tensor.extract %counts[%e] : tensor<?xi64>
    %cnt = arith.index_cast %cnt64 : i64 to index
    %wg = tensor.extract_slice %w_gate[%e, 0, 0] [1, 16, 16] [1, 1, 1] : tensor<?x16x16xf32> to tensor<16x16xf32>
    %ze = tensor.empty(%cnt) : tensor<?x16xf32>
    %z = linalg.fill ins(%zero : f32) outs(%ze : tensor<?x16xf32>) -> tensor<?x16xf32>
    %seg = tensor.extract_slice %first[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xf32> to tensor<?x16xf32>
    %d = linalg.matmul ins(%seg, %wg : tensor<?x16xf32>, tensor<16x16xf32>) outs(%z : tensor<?x16xf32>) -> tensor<?x16xf32>
    %acc2 = tensor.insert_slice %d into %acc[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xf32> into tensor<?x16xf32>
    %off2 = arith.addi %off, %cnt : index
    scf.yield %acc2, %off2 : tensor<?x16xf32>, index
  }
  %out = moecomm.combine %y#0, %h weighted : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xf32>
  return %out : tensor<?x16xf32>
}

// -----

// Two layers, and the first one's loop takes its segment sizes from the
// second layer's tokens_per_expert: neither is chunked (the first one's
// offsets do not advance by its own counts; the second's counts leave it).
func.func @other_layers_counts(%x: tensor<?x16xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>, %x2: tensor<?x16xf32>, %idx2: tensor<?x2xi32>, %w2: tensor<?x2xf32>, %w_gate: tensor<?x16x16xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  // expected-remark @+1 {{moecomm-schedule-overlap: not chunked: 'scf.for' carries an index (#1) that is not the segment offset (0, then plus the expert's tokens_per_expert in every iteration)}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x16xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  // expected-remark @+1 {{moecomm-schedule-overlap: not chunked: it uses tokens_per_expert, which changes with the chunk}}
  %recv2, %rw2, %tpe2, %h2 = moecomm.dispatch %x2, %idx2, %w2 topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x16xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  %counts = tensor.cast %tpe2 : tensor<2xi64> to tensor<?xi64>
  %n = tensor.dim %counts, %c0 : tensor<?xi64>
  %rows = tensor.dim %recv, %c0 : tensor<?x16xf32>
  %init = tensor.empty(%rows) : tensor<?x16xf32>
  %y:2 = scf.for %e = %c0 to %n step %c1 iter_args(%acc = %init, %off = %c0) -> (tensor<?x16xf32>, index) {
    %cnt64 = tensor.extract %counts[%e] : tensor<?xi64>
    %cnt = arith.index_cast %cnt64 : i64 to index
    %wg = tensor.extract_slice %w_gate[%e, 0, 0] [1, 16, 16] [1, 1, 1] : tensor<?x16x16xf32> to tensor<16x16xf32>
    %ze = tensor.empty(%cnt) : tensor<?x16xf32>
    %z = linalg.fill ins(%zero : f32) outs(%ze : tensor<?x16xf32>) -> tensor<?x16xf32>
    %seg = tensor.extract_slice %recv[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xf32> to tensor<?x16xf32>
    %d = linalg.matmul ins(%seg, %wg : tensor<?x16xf32>, tensor<16x16xf32>) outs(%z : tensor<?x16xf32>) -> tensor<?x16xf32>
    %acc2 = tensor.insert_slice %d into %acc[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xf32> into tensor<?x16xf32>
    %off2 = arith.addi %off, %cnt : index
    scf.yield %acc2, %off2 : tensor<?x16xf32>, index
  }
  %out = moecomm.combine %y#0, %h weighted : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xf32>
  %out2 = moecomm.combine %recv2, %h2 weighted : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xf32>
  return %out, %out2 : tensor<?x16xf32>, tensor<?x16xf32>
}

// -----

// Under align(16) the segments are padded: the prefix sum of
// tokens_per_expert is not where expert e's segment starts (its rows would
// come from the previous segments' padding).
func.func @prefix_sum_under_align(%x: tensor<?x16xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>, %w_gate: tensor<?x16x16xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  // expected-remark @+1 {{moecomm-schedule-overlap: not chunked: 'scf.for' carries an index (#1) that is the prefix sum of tokens_per_expert, but align(16) pads the segments (read their offsets from 'moecomm.expert_offsets')}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> align(16) : tensor<?x16xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  %counts = tensor.cast %tpe : tensor<2xi64> to tensor<?xi64>
  %n = tensor.dim %counts, %c0 : tensor<?xi64>
  %rows = tensor.dim %recv, %c0 : tensor<?x16xf32>
  %init = tensor.empty(%rows) : tensor<?x16xf32>
  %y:2 = scf.for %e = %c0 to %n step %c1 iter_args(%acc = %init, %off = %c0) -> (tensor<?x16xf32>, index) {
    %cnt64 = tensor.extract %counts[%e] : tensor<?xi64>
    %cnt = arith.index_cast %cnt64 : i64 to index
    %wg = tensor.extract_slice %w_gate[%e, 0, 0] [1, 16, 16] [1, 1, 1] : tensor<?x16x16xf32> to tensor<16x16xf32>
    %ze = tensor.empty(%cnt) : tensor<?x16xf32>
    %z = linalg.fill ins(%zero : f32) outs(%ze : tensor<?x16xf32>) -> tensor<?x16xf32>
    %seg = tensor.extract_slice %recv[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xf32> to tensor<?x16xf32>
    %d = linalg.matmul ins(%seg, %wg : tensor<?x16xf32>, tensor<16x16xf32>) outs(%z : tensor<?x16xf32>) -> tensor<?x16xf32>
    %acc2 = tensor.insert_slice %d into %acc[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xf32> into tensor<?x16xf32>
    %off2 = arith.addi %off, %cnt : index
    scf.yield %acc2, %off2 : tensor<?x16xf32>, index
  }
  %out = moecomm.combine %y#0, %h weighted : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xf32>
  return %out : tensor<?x16xf32>
}

// -----

// The offset is expert_offsets[e + 1], the next expert's start: iteration e
// would not write (nor read) expert e's segment.
func.func @next_experts_offset(%x: tensor<?x16xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>, %w_gate: tensor<?x16x16xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  // expected-remark @+1 {{moecomm-schedule-overlap: not chunked: 'scf.for' carries a value (#0) that is not received rows assembled from segments (a tensor.empty of the received row count, every expert's segment inserted at its offset)}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> align(16) : tensor<?x16xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  %counts = tensor.cast %tpe : tensor<2xi64> to tensor<?xi64>
  %n = tensor.dim %counts, %c0 : tensor<?xi64>
  %offs = moecomm.expert_offsets %h : !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8>
  %starts = tensor.cast %offs : tensor<3xi64> to tensor<?xi64>
  %rows = tensor.dim %recv, %c0 : tensor<?x16xf32>
  %init = tensor.empty(%rows) : tensor<?x16xf32>
  %y = scf.for %e = %c0 to %n step %c1 iter_args(%acc = %init) -> (tensor<?x16xf32>) {
    %cnt64 = tensor.extract %counts[%e] : tensor<?xi64>
    %cnt = arith.index_cast %cnt64 : i64 to index
    %next = arith.addi %e, %c1 : index
    %start = tensor.extract %starts[%next] : tensor<?xi64>
    %off = arith.index_cast %start : i64 to index
    %wg = tensor.extract_slice %w_gate[%e, 0, 0] [1, 16, 16] [1, 1, 1] : tensor<?x16x16xf32> to tensor<16x16xf32>
    %ze = tensor.empty(%cnt) : tensor<?x16xf32>
    %z = linalg.fill ins(%zero : f32) outs(%ze : tensor<?x16xf32>) -> tensor<?x16xf32>
    %seg = tensor.extract_slice %recv[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xf32> to tensor<?x16xf32>
    %d = linalg.matmul ins(%seg, %wg : tensor<?x16xf32>, tensor<16x16xf32>) outs(%z : tensor<?x16xf32>) -> tensor<?x16xf32>
    %acc2 = tensor.insert_slice %d into %acc[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xf32> into tensor<?x16xf32>
    scf.yield %acc2 : tensor<?x16xf32>
  }
  %out = moecomm.combine %y, %h weighted : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xf32>
  return %out : tensor<?x16xf32>
}

// -----

// The segment offsets are also returned: a chunk's expert_offsets describe
// its own received rows, so there is no single value to return.
func.func @offsets_returned(%x: tensor<?x16xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>, %w_gate: tensor<?x16x16xf32>) -> (tensor<?x16xf32>, tensor<3xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  // expected-remark @+1 {{moecomm-schedule-overlap: not chunked: a value of the layer ('moecomm.expert_offsets') is used outside it}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> align(16) : tensor<?x16xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  %counts = tensor.cast %tpe : tensor<2xi64> to tensor<?xi64>
  %n = tensor.dim %counts, %c0 : tensor<?xi64>
  %offs = moecomm.expert_offsets %h : !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8>
  %starts = tensor.cast %offs : tensor<3xi64> to tensor<?xi64>
  %rows = tensor.dim %recv, %c0 : tensor<?x16xf32>
  %init = tensor.empty(%rows) : tensor<?x16xf32>
  %y = scf.for %e = %c0 to %n step %c1 iter_args(%acc = %init) -> (tensor<?x16xf32>) {
    %cnt64 = tensor.extract %counts[%e] : tensor<?xi64>
    %cnt = arith.index_cast %cnt64 : i64 to index
    %start = tensor.extract %starts[%e] : tensor<?xi64>
    %off = arith.index_cast %start : i64 to index
    %wg = tensor.extract_slice %w_gate[%e, 0, 0] [1, 16, 16] [1, 1, 1] : tensor<?x16x16xf32> to tensor<16x16xf32>
    %ze = tensor.empty(%cnt) : tensor<?x16xf32>
    %z = linalg.fill ins(%zero : f32) outs(%ze : tensor<?x16xf32>) -> tensor<?x16xf32>
    %seg = tensor.extract_slice %recv[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xf32> to tensor<?x16xf32>
    %d = linalg.matmul ins(%seg, %wg : tensor<?x16xf32>, tensor<16x16xf32>) outs(%z : tensor<?x16xf32>) -> tensor<?x16xf32>
    %acc2 = tensor.insert_slice %d into %acc[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xf32> into tensor<?x16xf32>
    scf.yield %acc2 : tensor<?x16xf32>
  }
  %out = moecomm.combine %y, %h weighted : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xf32>
  return %out, %offs : tensor<?x16xf32>, tensor<3xi64>
}

// -----

// Two layers, and the first one's loop reads its segment offsets from the
// second layer's expert_offsets: neither is chunked (the first one's
// segments are not its own; the second's offsets do not lead to its
// combine).
func.func @other_layers_offsets(%x: tensor<?x16xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>, %x2: tensor<?x16xf32>, %idx2: tensor<?x2xi32>, %w2: tensor<?x2xf32>, %w_gate: tensor<?x16x16xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  // expected-remark @+1 {{moecomm-schedule-overlap: not chunked: 'scf.for' carries a value (#0) that is not received rows assembled from segments (a tensor.empty of the received row count, every expert's segment inserted at its offset)}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> align(16) : tensor<?x16xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  // expected-remark @+1 {{moecomm-schedule-overlap: not chunked: 'moecomm.expert_offsets' depends on the layout but does not lead to its combine}}
  %recv2, %rw2, %tpe2, %h2 = moecomm.dispatch %x2, %idx2, %w2 topology<ranks = 4, ranks_per_node = 2, experts = 8> align(16) : tensor<?x16xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  %counts = tensor.cast %tpe : tensor<2xi64> to tensor<?xi64>
  %n = tensor.dim %counts, %c0 : tensor<?xi64>
  %offs2 = moecomm.expert_offsets %h2 : !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8>
  %starts2 = tensor.cast %offs2 : tensor<3xi64> to tensor<?xi64>
  %rows = tensor.dim %recv, %c0 : tensor<?x16xf32>
  %init = tensor.empty(%rows) : tensor<?x16xf32>
  %y = scf.for %e = %c0 to %n step %c1 iter_args(%acc = %init) -> (tensor<?x16xf32>) {
    %cnt64 = tensor.extract %counts[%e] : tensor<?xi64>
    %cnt = arith.index_cast %cnt64 : i64 to index
    %start = tensor.extract %starts2[%e] : tensor<?xi64>
    %off = arith.index_cast %start : i64 to index
    %wg = tensor.extract_slice %w_gate[%e, 0, 0] [1, 16, 16] [1, 1, 1] : tensor<?x16x16xf32> to tensor<16x16xf32>
    %ze = tensor.empty(%cnt) : tensor<?x16xf32>
    %z = linalg.fill ins(%zero : f32) outs(%ze : tensor<?x16xf32>) -> tensor<?x16xf32>
    %seg = tensor.extract_slice %recv[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xf32> to tensor<?x16xf32>
    %d = linalg.matmul ins(%seg, %wg : tensor<?x16xf32>, tensor<16x16xf32>) outs(%z : tensor<?x16xf32>) -> tensor<?x16xf32>
    %acc2 = tensor.insert_slice %d into %acc[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xf32> into tensor<?x16xf32>
    scf.yield %acc2 : tensor<?x16xf32>
  }
  %out = moecomm.combine %y, %h weighted : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xf32>
  %out2 = moecomm.combine %recv2, %h2 weighted : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xf32>
  return %out, %out2 : tensor<?x16xf32>, tensor<?x16xf32>
}
