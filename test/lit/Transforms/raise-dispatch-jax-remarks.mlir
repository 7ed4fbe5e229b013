// RUN: moecomm-opt %s --moecomm-raise-dispatch -verify-diagnostics -split-input-file | FileCheck %s
// Each per-expert exchange here is MaxText's sparse path with JAX's ragged
// all-to-all (raise-dispatch-jax.mlir raises it) failing one condition of
// the ragged exchanges: a remark at the call says which, and the chain is
// left as it is.

// CHECK-NOT: moecomm.dispatch
// CHECK-NOT: moecomm.combine

// Input offsets from an inclusive scan (each segment's end, not its start).
func.func @inclusive_input_offsets(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c0_i64 = arith.constant 0 : i64
  %ones = arith.constant dense<1> : tensor<4xi64>
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %init = tensor.empty() : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %cm, %cmc = moecomm.all_to_all %groups, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x2xi64>, tensor<4xi64>
  %cm4 = tensor.cast %cm : tensor<?x2xi64> to tensor<4x2xi64>
  %recv = linalg.reduce ins(%cm4 : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %io:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %init) -> (i64, tensor<4xi64>) {
    %n = tensor.extract %send[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
    %t1 = tensor.insert %s1 into %t[%i] : tensor<4xi64>
    scf.yield %s1, %t1 : i64, tensor<4xi64>
  }
  %ro:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %init) -> (i64, tensor<4xi64>) {
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    %n = tensor.extract %recv[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
    scf.yield %s1, %t1 : i64, tensor<4xi64>
  }
  %ro2 = tensor.expand_shape %ro#1 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %oo2, %ooc = moecomm.all_to_all %ro2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x1xi64>, tensor<4xi64>
  %oo = tensor.collapse_shape %oo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %oo4 = tensor.cast %oo : tensor<?xi64> to tensor<4xi64>
  %n = arith.index_cast %ro#0 : i64 to index
  %buf = tensor.empty(%n) : tensor<?x16xf32>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'stablehlo.custom_call' @ragged_all_to_all: its input_offsets are not the exclusive scan of its send_sizes}}
  %got = "stablehlo.custom_call"(%rows, %buf, %io#1, %send, %oo4, %recv) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xf32>
  %io2 = tensor.expand_shape %io#1 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %bo2, %boc = moecomm.all_to_all %io2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x1xi64>, tensor<4xi64>
  %bo = tensor.collapse_shape %bo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %bo4 = tensor.cast %bo : tensor<?xi64> to tensor<4xi64>
  %S = arith.index_cast %io#0 : i64 to index
  %hbuf = tensor.empty(%S) : tensor<?x16xf32>
  %home = "stablehlo.custom_call"(%got, %hbuf, %ro#1, %recv, %bo4, %send) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xf32>
  %out = moecomm.unpermute_tokens %home, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// Output offsets that are this rank's own receive offsets, not its receivers'.
func.func @output_offsets_not_exchanged(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c0_i64 = arith.constant 0 : i64
  %ones = arith.constant dense<1> : tensor<4xi64>
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %init = tensor.empty() : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %cm, %cmc = moecomm.all_to_all %groups, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x2xi64>, tensor<4xi64>
  %cm4 = tensor.cast %cm : tensor<?x2xi64> to tensor<4x2xi64>
  %recv = linalg.reduce ins(%cm4 : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %io:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %init) -> (i64, tensor<4xi64>) {
    %n = tensor.extract %send[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    scf.yield %s1, %t1 : i64, tensor<4xi64>
  }
  %ro:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %init) -> (i64, tensor<4xi64>) {
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    %n = tensor.extract %recv[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
    scf.yield %s1, %t1 : i64, tensor<4xi64>
  }
  %ro2 = tensor.expand_shape %ro#1 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %oo2, %ooc = moecomm.all_to_all %ro2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x1xi64>, tensor<4xi64>
  %oo = tensor.collapse_shape %oo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %oo4 = tensor.cast %oo : tensor<?xi64> to tensor<4xi64>
  %n = arith.index_cast %ro#0 : i64 to index
  %buf = tensor.empty(%n) : tensor<?x16xf32>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'stablehlo.custom_call' @ragged_all_to_all: its output_offsets are not the receivers' exclusive scans of their recv_sizes sent to each sender}}
  %got = "stablehlo.custom_call"(%rows, %buf, %io#1, %send, %ro#1, %recv) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xf32>
  %io2 = tensor.expand_shape %io#1 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %bo2, %boc = moecomm.all_to_all %io2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x1xi64>, tensor<4xi64>
  %bo = tensor.collapse_shape %bo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %bo4 = tensor.cast %bo : tensor<?xi64> to tensor<4xi64>
  %S = arith.index_cast %io#0 : i64 to index
  %hbuf = tensor.empty(%S) : tensor<?x16xf32>
  %home = "stablehlo.custom_call"(%got, %hbuf, %ro#1, %recv, %bo4, %send) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xf32>
  %out = moecomm.unpermute_tokens %home, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// The receivers' offsets exchanged on one node of 4 while the exchange has 2 nodes.
func.func @output_offsets_other_topology(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c0_i64 = arith.constant 0 : i64
  %ones = arith.constant dense<1> : tensor<4xi64>
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %init = tensor.empty() : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %cm, %cmc = moecomm.all_to_all %groups, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x2xi64>, tensor<4xi64>
  %cm4 = tensor.cast %cm : tensor<?x2xi64> to tensor<4x2xi64>
  %recv = linalg.reduce ins(%cm4 : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %io:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %init) -> (i64, tensor<4xi64>) {
    %n = tensor.extract %send[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    scf.yield %s1, %t1 : i64, tensor<4xi64>
  }
  %ro:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %init) -> (i64, tensor<4xi64>) {
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    %n = tensor.extract %recv[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
    scf.yield %s1, %t1 : i64, tensor<4xi64>
  }
  %ro2 = tensor.expand_shape %ro#1 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %oo2, %ooc = moecomm.all_to_all %ro2, %ones topology<ranks = 4, ranks_per_node = 4> : tensor<4x1xi64>, tensor<4xi64>
  %oo = tensor.collapse_shape %oo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %oo4 = tensor.cast %oo : tensor<?xi64> to tensor<4xi64>
  %n = arith.index_cast %ro#0 : i64 to index
  %buf = tensor.empty(%n) : tensor<?x16xf32>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'stablehlo.custom_call' @ragged_all_to_all: the 'moecomm.all_to_all' of its output offsets has another topology than the exchange}}
  %got = "stablehlo.custom_call"(%rows, %buf, %io#1, %send, %oo4, %recv) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xf32>
  %io2 = tensor.expand_shape %io#1 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %bo2, %boc = moecomm.all_to_all %io2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x1xi64>, tensor<4xi64>
  %bo = tensor.collapse_shape %bo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %bo4 = tensor.cast %bo : tensor<?xi64> to tensor<4xi64>
  %S = arith.index_cast %io#0 : i64 to index
  %hbuf = tensor.empty(%S) : tensor<?x16xf32>
  %home = "stablehlo.custom_call"(%got, %hbuf, %ro#1, %recv, %bo4, %send) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xf32>
  %out = moecomm.unpermute_tokens %home, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// An output of 1024 rows: rows nobody writes would reach the experts.
func.func @output_not_exact(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c1024 = arith.constant 1024 : index
  %c0_i64 = arith.constant 0 : i64
  %ones = arith.constant dense<1> : tensor<4xi64>
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %init = tensor.empty() : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %cm, %cmc = moecomm.all_to_all %groups, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x2xi64>, tensor<4xi64>
  %cm4 = tensor.cast %cm : tensor<?x2xi64> to tensor<4x2xi64>
  %recv = linalg.reduce ins(%cm4 : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %io:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %init) -> (i64, tensor<4xi64>) {
    %n = tensor.extract %send[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    scf.yield %s1, %t1 : i64, tensor<4xi64>
  }
  %ro:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %init) -> (i64, tensor<4xi64>) {
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    %n = tensor.extract %recv[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
    scf.yield %s1, %t1 : i64, tensor<4xi64>
  }
  %ro2 = tensor.expand_shape %ro#1 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %oo2, %ooc = moecomm.all_to_all %ro2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x1xi64>, tensor<4xi64>
  %oo = tensor.collapse_shape %oo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %oo4 = tensor.cast %oo : tensor<?xi64> to tensor<4xi64>
  %n = arith.index_cast %ro#0 : i64 to index
  %buf = tensor.empty(%c1024) : tensor<?x16xf32>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'stablehlo.custom_call' @ragged_all_to_all: its output is not a 'tensor.empty' of the total of an exclusive scan of its recv_sizes}}
  %got = "stablehlo.custom_call"(%rows, %buf, %io#1, %send, %oo4, %recv) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xf32>
  %io2 = tensor.expand_shape %io#1 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %bo2, %boc = moecomm.all_to_all %io2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x1xi64>, tensor<4xi64>
  %bo = tensor.collapse_shape %bo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %bo4 = tensor.cast %bo : tensor<?xi64> to tensor<4xi64>
  %S = arith.index_cast %io#0 : i64 to index
  %hbuf = tensor.empty(%S) : tensor<?x16xf32>
  %home = "stablehlo.custom_call"(%got, %hbuf, %ro#1, %recv, %bo4, %send) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xf32>
  %out = moecomm.unpermute_tokens %home, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// recv_sizes that are this rank's send_sizes, not what its peers send.
func.func @recv_sizes_not_from_peers(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c0_i64 = arith.constant 0 : i64
  %ones = arith.constant dense<1> : tensor<4xi64>
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %init = tensor.empty() : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %cm, %cmc = moecomm.all_to_all %groups, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x2xi64>, tensor<4xi64>
  %cm4 = tensor.cast %cm : tensor<?x2xi64> to tensor<4x2xi64>
  %recv = linalg.reduce ins(%cm4 : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %io:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %init) -> (i64, tensor<4xi64>) {
    %n = tensor.extract %send[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    scf.yield %s1, %t1 : i64, tensor<4xi64>
  }
  %ro:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %init) -> (i64, tensor<4xi64>) {
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    %n = tensor.extract %recv[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
    scf.yield %s1, %t1 : i64, tensor<4xi64>
  }
  %ro2 = tensor.expand_shape %ro#1 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %oo2, %ooc = moecomm.all_to_all %ro2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x1xi64>, tensor<4xi64>
  %oo = tensor.collapse_shape %oo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %oo4 = tensor.cast %oo : tensor<?xi64> to tensor<4xi64>
  %n = arith.index_cast %ro#0 : i64 to index
  %buf = tensor.empty(%n) : tensor<?x16xf32>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'stablehlo.custom_call' @ragged_all_to_all: its recv_sizes are not the per-rank sums of the 'moecomm.all_to_all' of the [W, L] group sizes}}
  %got = "stablehlo.custom_call"(%rows, %buf, %io#1, %send, %oo4, %send) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xf32>
  %io2 = tensor.expand_shape %io#1 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %bo2, %boc = moecomm.all_to_all %io2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x1xi64>, tensor<4xi64>
  %bo = tensor.collapse_shape %bo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %bo4 = tensor.cast %bo : tensor<?xi64> to tensor<4xi64>
  %S = arith.index_cast %io#0 : i64 to index
  %hbuf = tensor.empty(%S) : tensor<?x16xf32>
  %home = "stablehlo.custom_call"(%got, %hbuf, %ro#1, %recv, %bo4, %send) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xf32>
  %out = moecomm.unpermute_tokens %home, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// A call the import refuses: its reason is quoted.
func.func @api_version(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c0_i64 = arith.constant 0 : i64
  %ones = arith.constant dense<1> : tensor<4xi64>
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %init = tensor.empty() : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %cm, %cmc = moecomm.all_to_all %groups, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x2xi64>, tensor<4xi64>
  %cm4 = tensor.cast %cm : tensor<?x2xi64> to tensor<4x2xi64>
  %recv = linalg.reduce ins(%cm4 : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %io:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %init) -> (i64, tensor<4xi64>) {
    %n = tensor.extract %send[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    scf.yield %s1, %t1 : i64, tensor<4xi64>
  }
  %ro:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %init) -> (i64, tensor<4xi64>) {
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    %n = tensor.extract %recv[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
    scf.yield %s1, %t1 : i64, tensor<4xi64>
  }
  %ro2 = tensor.expand_shape %ro#1 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %oo2, %ooc = moecomm.all_to_all %ro2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x1xi64>, tensor<4xi64>
  %oo = tensor.collapse_shape %oo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %oo4 = tensor.cast %oo : tensor<?xi64> to tensor<4xi64>
  %n = arith.index_cast %ro#0 : i64 to index
  %buf = tensor.empty(%n) : tensor<?x16xf32>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'stablehlo.custom_call' @ragged_all_to_all: the call is not one moecomm-import-ragged-all-to-all reads (ragged_all_to_all: api_version must be 4 : i32}}
  %got = "stablehlo.custom_call"(%rows, %buf, %io#1, %send, %oo4, %recv) {call_target_name = "ragged_all_to_all", api_version = 3 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xf32>
  %io2 = tensor.expand_shape %io#1 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %bo2, %boc = moecomm.all_to_all %io2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x1xi64>, tensor<4xi64>
  %bo = tensor.collapse_shape %bo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %bo4 = tensor.cast %bo : tensor<?xi64> to tensor<4xi64>
  %S = arith.index_cast %io#0 : i64 to index
  %hbuf = tensor.empty(%S) : tensor<?x16xf32>
  %home = "stablehlo.custom_call"(%got, %hbuf, %ro#1, %recv, %bo4, %send) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xf32>
  %out = moecomm.unpermute_tokens %home, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// The exchange back receives the forward recv_sizes, not its send_sizes.
func.func @back_recv_sizes(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c0_i64 = arith.constant 0 : i64
  %ones = arith.constant dense<1> : tensor<4xi64>
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %init = tensor.empty() : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %cm, %cmc = moecomm.all_to_all %groups, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x2xi64>, tensor<4xi64>
  %cm4 = tensor.cast %cm : tensor<?x2xi64> to tensor<4x2xi64>
  %recv = linalg.reduce ins(%cm4 : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %io:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %init) -> (i64, tensor<4xi64>) {
    %n = tensor.extract %send[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    scf.yield %s1, %t1 : i64, tensor<4xi64>
  }
  %ro:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %init) -> (i64, tensor<4xi64>) {
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    %n = tensor.extract %recv[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
    scf.yield %s1, %t1 : i64, tensor<4xi64>
  }
  %ro2 = tensor.expand_shape %ro#1 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %oo2, %ooc = moecomm.all_to_all %ro2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x1xi64>, tensor<4xi64>
  %oo = tensor.collapse_shape %oo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %oo4 = tensor.cast %oo : tensor<?xi64> to tensor<4xi64>
  %n = arith.index_cast %ro#0 : i64 to index
  %buf = tensor.empty(%n) : tensor<?x16xf32>
  %got = "stablehlo.custom_call"(%rows, %buf, %io#1, %send, %oo4, %recv) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xf32>
  %io2 = tensor.expand_shape %io#1 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %bo2, %boc = moecomm.all_to_all %io2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x1xi64>, tensor<4xi64>
  %bo = tensor.collapse_shape %bo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %bo4 = tensor.cast %bo : tensor<?xi64> to tensor<4xi64>
  %S = arith.index_cast %io#0 : i64 to index
  %hbuf = tensor.empty(%S) : tensor<?x16xf32>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: the exchange back ('stablehlo.custom_call' @ragged_all_to_all) does not receive the forward exchange's send_sizes}}
  %home = "stablehlo.custom_call"(%got, %hbuf, %ro#1, %recv, %bo4, %recv) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xf32>
  %out = moecomm.unpermute_tokens %home, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// The send offsets also returned: the permute_tokens would stay for them.
func.func @offsets_returned(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> (tensor<?x16xf32>, tensor<4xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c0_i64 = arith.constant 0 : i64
  %ones = arith.constant dense<1> : tensor<4xi64>
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %init = tensor.empty() : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %cm, %cmc = moecomm.all_to_all %groups, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x2xi64>, tensor<4xi64>
  %cm4 = tensor.cast %cm : tensor<?x2xi64> to tensor<4x2xi64>
  %recv = linalg.reduce ins(%cm4 : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %io:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %init) -> (i64, tensor<4xi64>) {
    %n = tensor.extract %send[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    scf.yield %s1, %t1 : i64, tensor<4xi64>
  }
  %ro:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %init) -> (i64, tensor<4xi64>) {
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    %n = tensor.extract %recv[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
    scf.yield %s1, %t1 : i64, tensor<4xi64>
  }
  %ro2 = tensor.expand_shape %ro#1 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %oo2, %ooc = moecomm.all_to_all %ro2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x1xi64>, tensor<4xi64>
  %oo = tensor.collapse_shape %oo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %oo4 = tensor.cast %oo : tensor<?xi64> to tensor<4xi64>
  %n = arith.index_cast %ro#0 : i64 to index
  %buf = tensor.empty(%n) : tensor<?x16xf32>
  %got = "stablehlo.custom_call"(%rows, %buf, %io#1, %send, %oo4, %recv) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xf32>
  %io2 = tensor.expand_shape %io#1 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %bo2, %boc = moecomm.all_to_all %io2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x1xi64>, tensor<4xi64>
  %bo = tensor.collapse_shape %bo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %bo4 = tensor.cast %bo : tensor<?xi64> to tensor<4xi64>
  %S = arith.index_cast %io#0 : i64 to index
  %hbuf = tensor.empty(%S) : tensor<?x16xf32>
  %home = "stablehlo.custom_call"(%got, %hbuf, %ro#1, %recv, %bo4, %send) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xf32>
  %out = moecomm.unpermute_tokens %home, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'func.return' uses what the group sizes of 'moecomm.permute_tokens' compute outside the per-expert exchange}}
  return %out, %io#1 : tensor<?x16xf32>, tensor<4xi64>
}

// -----

// A ragged exchange out and a moecomm.all_to_all back.
func.func @mixed_kinds(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c0_i64 = arith.constant 0 : i64
  %ones = arith.constant dense<1> : tensor<4xi64>
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %init = tensor.empty() : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %cm, %cmc = moecomm.all_to_all %groups, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x2xi64>, tensor<4xi64>
  %cm4 = tensor.cast %cm : tensor<?x2xi64> to tensor<4x2xi64>
  %recv = linalg.reduce ins(%cm4 : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %io:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %init) -> (i64, tensor<4xi64>) {
    %n = tensor.extract %send[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    scf.yield %s1, %t1 : i64, tensor<4xi64>
  }
  %ro:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %init) -> (i64, tensor<4xi64>) {
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    %n = tensor.extract %recv[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
    scf.yield %s1, %t1 : i64, tensor<4xi64>
  }
  %ro2 = tensor.expand_shape %ro#1 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %oo2, %ooc = moecomm.all_to_all %ro2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x1xi64>, tensor<4xi64>
  %oo = tensor.collapse_shape %oo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %oo4 = tensor.cast %oo : tensor<?xi64> to tensor<4xi64>
  %n = arith.index_cast %ro#0 : i64 to index
  %buf = tensor.empty(%n) : tensor<?x16xf32>
  %got = "stablehlo.custom_call"(%rows, %buf, %io#1, %send, %oo4, %recv) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xf32>
  %io2 = tensor.expand_shape %io#1 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %bo2, %boc = moecomm.all_to_all %io2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x1xi64>, tensor<4xi64>
  %bo = tensor.collapse_shape %bo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %bo4 = tensor.cast %bo : tensor<?xi64> to tensor<4xi64>
  %S = arith.index_cast %io#0 : i64 to index
  %hbuf = tensor.empty(%S) : tensor<?x16xf32>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: the exchange back is a 'moecomm.all_to_all', the forward exchange a 'stablehlo.custom_call' @ragged_all_to_all: both must be of one kind}}
  %home, %hc = moecomm.all_to_all %got, %recv topology<ranks = 4, ranks_per_node = 2> : tensor<?x16xf32>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %home, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// Weights computed from the send sizes: the permute_tokens would stay for them.
func.func @weights_from_send(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c0_i64 = arith.constant 0 : i64
  %ones = arith.constant dense<1> : tensor<4xi64>
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %init = tensor.empty() : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %n0 = tensor.extract %send[%c0] : tensor<4xi64>
  %f0 = arith.sitofp %n0 : i64 to f32
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'linalg.fill' depends on what the group sizes of 'moecomm.permute_tokens' compute, and the dispatch or the combine would read it}}
  %w2 = linalg.fill ins(%f0 : f32) outs(%w : tensor<?x2xf32>) -> tensor<?x2xf32>
  %cm, %cmc = moecomm.all_to_all %groups, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x2xi64>, tensor<4xi64>
  %cm4 = tensor.cast %cm : tensor<?x2xi64> to tensor<4x2xi64>
  %recv = linalg.reduce ins(%cm4 : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %io:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %init) -> (i64, tensor<4xi64>) {
    %n = tensor.extract %send[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    scf.yield %s1, %t1 : i64, tensor<4xi64>
  }
  %ro:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %init) -> (i64, tensor<4xi64>) {
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    %n = tensor.extract %recv[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
    scf.yield %s1, %t1 : i64, tensor<4xi64>
  }
  %ro2 = tensor.expand_shape %ro#1 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %oo2, %ooc = moecomm.all_to_all %ro2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x1xi64>, tensor<4xi64>
  %oo = tensor.collapse_shape %oo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %oo4 = tensor.cast %oo : tensor<?xi64> to tensor<4xi64>
  %n = arith.index_cast %ro#0 : i64 to index
  %buf = tensor.empty(%n) : tensor<?x16xf32>
  %got = "stablehlo.custom_call"(%rows, %buf, %io#1, %send, %oo4, %recv) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xf32>
  %io2 = tensor.expand_shape %io#1 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %bo2, %boc = moecomm.all_to_all %io2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x1xi64>, tensor<4xi64>
  %bo = tensor.collapse_shape %bo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %bo4 = tensor.cast %bo : tensor<?xi64> to tensor<4xi64>
  %S = arith.index_cast %io#0 : i64 to index
  %hbuf = tensor.empty(%S) : tensor<?x16xf32>
  %home = "stablehlo.custom_call"(%got, %hbuf, %ro#1, %recv, %bo4, %send) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xf32>
  %out = moecomm.unpermute_tokens %home, %slots weights(%w2 : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}

// -----

// Grouped experts writing into a buffer sized by the receive total (the
// rows the dispatch gives could size it instead).
func.func @expert_buffer_from_total(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c0_i64 = arith.constant 0 : i64
  %ones = arith.constant dense<1> : tensor<4xi64>
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %init = tensor.empty() : tensor<4xi64>
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %cm, %cmc = moecomm.all_to_all %groups, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x2xi64>, tensor<4xi64>
  %cm4 = tensor.cast %cm : tensor<?x2xi64> to tensor<4x2xi64>
  %recv = linalg.reduce ins(%cm4 : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %io:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %init) -> (i64, tensor<4xi64>) {
    %n = tensor.extract %send[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    scf.yield %s1, %t1 : i64, tensor<4xi64>
  }
  %ro:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %init) -> (i64, tensor<4xi64>) {
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    %n = tensor.extract %recv[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
    scf.yield %s1, %t1 : i64, tensor<4xi64>
  }
  %ro2 = tensor.expand_shape %ro#1 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %oo2, %ooc = moecomm.all_to_all %ro2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x1xi64>, tensor<4xi64>
  %oo = tensor.collapse_shape %oo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %oo4 = tensor.cast %oo : tensor<?xi64> to tensor<4xi64>
  %n = arith.index_cast %ro#0 : i64 to index
  %buf = tensor.empty(%n) : tensor<?x16xf32>
  %got = "stablehlo.custom_call"(%rows, %buf, %io#1, %send, %oo4, %recv) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xf32>
  %em, %tpe = moecomm.sort_chunks %got, %cm : tensor<?x16xf32>, tensor<?x2xi64>
  %y0 = tensor.empty(%n) : tensor<?x16xf32>
  // expected-remark @below {{moecomm-raise-dispatch: not raised: 'linalg.add' depends on what the group sizes of 'moecomm.permute_tokens' compute, and the dispatch or the combine would read it}}
  %y = linalg.add ins(%em, %em : tensor<?x16xf32>, tensor<?x16xf32>) outs(%y0 : tensor<?x16xf32>) -> tensor<?x16xf32>
  %sm = moecomm.unsort_chunks %y, %cm : tensor<?x16xf32>, tensor<?x2xi64>
  %io2 = tensor.expand_shape %io#1 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %bo2, %boc = moecomm.all_to_all %io2, %ones topology<ranks = 4, ranks_per_node = 2> : tensor<4x1xi64>, tensor<4xi64>
  %bo = tensor.collapse_shape %bo2 [[0, 1]] : tensor<?x1xi64> into tensor<?xi64>
  %bo4 = tensor.cast %bo : tensor<?xi64> to tensor<4xi64>
  %S = arith.index_cast %io#0 : i64 to index
  %hbuf = tensor.empty(%S) : tensor<?x16xf32>
  %home = "stablehlo.custom_call"(%sm, %hbuf, %ro#1, %recv, %bo4, %send) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xf32>
  %out = moecomm.unpermute_tokens %home, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xf32>, tensor<?x2xi64>
  return %out : tensor<?x16xf32>
}
