// RUN: moecomm-opt %s --moecomm-raise-dispatch | FileCheck %s
// RUN: moecomm-opt %s --moecomm-raise-dispatch --moecomm-pipeline="ranks=4" | FileCheck %s --check-prefix=LOWERED
// MaxText's sparse path with JAX's ragged all-to-all (generic
// "stablehlo.custom_call" @ragged_all_to_all) and the offsets its
// get_all_to_all_params computes, raised to dispatch / combine: the calls,
// the offsets' scans and exchanges and the counts matrix go; what is still
// used elsewhere stays. What is not raised: raise-dispatch-jax-remarks.mlir.
// A run of the original and the raised layer:
// tools/moecomm-run/raise-dispatch-jax.test.

// LOWERED-NOT: stablehlo
// LOWERED-NOT: moecomm.
// LOWERED: llvm.call @moecomm_rt_layout

// Grouped experts (each local expert's rows doubled); the forward call's
// backend_config has JAX's channel_id.
// CHECK-LABEL: func.func @grouped(
// CHECK-SAME: %[[X:[^:]*]]: tensor<?x16xf32>, %[[IDX:[^:]*]]: tensor<?x2xi64>, %[[W:[^:]*]]: tensor<?x2xf32>)
// CHECK-NOT: moecomm.permute_tokens
// CHECK-NOT: moecomm.all_to_all
// CHECK-NOT: scf.for
// CHECK-NOT: stablehlo
// CHECK: %[[R:.*]], %{{.*}}, %[[TPE:.*]], %[[H:.*]] = moecomm.dispatch %[[X]], %[[IDX]], %[[W]] topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x16xf32>, tensor<?x2xi64>, tensor<?x2xf32>
// CHECK: %[[Y:.*]] = arith.addf %[[R]], %[[R]]
// CHECK-NOT: moecomm.all_to_all
// CHECK-NOT: stablehlo
// CHECK: %[[OUT:.*]] = moecomm.combine %[[Y]], %[[H]] weighted
// CHECK-NOT: moecomm.unpermute_tokens
// CHECK-NOT: scf.for
// CHECK: return %[[OUT]] :
func.func @grouped(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
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
      %s = arith.addi %acc, %a : i64
      linalg.yield %s : i64
    }
  %io:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %c0_i64, %t = %init) -> (i64, tensor<4xi64>) {
    %t1 = tensor.insert %s into %t[%i] : tensor<4xi64>
    %n = tensor.extract %send[%i] : tensor<4xi64>
    %s1 = arith.addi %s, %n : i64
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
  %got = "stablehlo.custom_call"(%rows, %buf, %io#1, %send, %oo4, %recv) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, channel_id = 1 : i64}} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xf32>
  %em, %tpe = moecomm.sort_chunks %got, %cm : tensor<?x16xf32>, tensor<?x2xi64>
  %y = arith.addf %em, %em : tensor<?x16xf32>
  %sm = moecomm.unsort_chunks %y, %cm4 : tensor<?x16xf32>, tensor<4x2xi64>
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
