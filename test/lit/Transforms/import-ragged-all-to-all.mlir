// moecomm-import-ragged-all-to-all: JAX's stablehlo.custom_call
// @ragged_all_to_all (generic form, as JAX prints it) becomes a gather into
// destination order, moecomm.all_to_all of the rows, moecomm.all_to_all of
// the output offsets (one row per peer, their bits as two f32), and a
// scatter of each source's rows into the output at its sender's offset.
// RUN: moecomm-opt %s | moecomm-opt | FileCheck %s --check-prefix=ROUNDTRIP
// RUN: moecomm-opt %s --moecomm-import-ragged-all-to-all | FileCheck %s
// RUN: moecomm-opt %s --moecomm-import-ragged-all-to-all=ranks-per-node=2 | FileCheck %s --check-prefix=NODES
// The result goes through moecomm-pipeline to the LLVM dialect.
// RUN: moecomm-opt %s --moecomm-import-ragged-all-to-all | moecomm-opt --moecomm-pipeline | FileCheck %s --check-prefix=LLVM

// ROUNDTRIP-LABEL: func.func @exchange
// ROUNDTRIP: "stablehlo.custom_call"(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5) {api_version = 4 : i32, backend_config = {replica_groups = dense<{{\[\[}}0, 1, 2, 3]]> : tensor<1x4xi64>}, call_target_name = "ragged_all_to_all"}

// The checks' texts, for the runtime's moecomm_rt_check: where (the custom
// call's location), and what with the values' places.
// CHECK-DAG: llvm.mlir.global internal constant @[[WHERE:ragged_all_to_all_check]]("ragged_all_to_all at {{.*}}import-ragged-all-to-all.mlir:{{[0-9]+}}:{{[0-9]+}}\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[IN:ragged_all_to_all_check_[0-9]+]]("input_offsets[j] + send_sizes[j] must lie in the operand's rows, both >= 0 (j = {}: {} + {}, {} rows)\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[ARRIVED:ragged_all_to_all_check_[0-9]+]]("the rows from rank j exceed those received (the exchange failed) (j = {}: {} rows, {} left)\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[RECV_SIZES:ragged_all_to_all_check_[0-9]+]]("recv_sizes[j] must equal the rows rank j sent here (its send_sizes entry for this rank) (j = {}: recv_sizes[j] = {}, {} arrived)\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[OUT_OFFS:ragged_all_to_all_check_[0-9]+]]("output_offsets[j] (given by rank j for this rank) + the rows from j must lie in the output's rows, >= 0 (j = {}: {} + {}, {} rows)\00")
// CHECK-DAG: func.func private @moecomm_rt_check(i32, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64)

// CHECK-LABEL: func.func @exchange
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xbf16>, %[[OUT:.*]]: tensor<6x16xbf16>, %[[IN_OFF:.*]]: tensor<4xi64>, %[[SEND:.*]]: tensor<4xi64>, %[[OUT_OFF:.*]]: tensor<4xi64>, %[[RECV:.*]]: tensor<4xi64>)
// CHECK-NOT: stablehlo
// Sender: bounds of each segment (whether all hold: #2), the offsets' bits,
// the total.
// CHECK: %[[SIZES:.*]]:3 = scf.for %[[J:.*]] = {{.*}} iter_args({{.*}}) -> (index, tensor<4x2xf32>, i1)
// CHECK:   %[[START:.*]] = tensor.extract %[[IN_OFF]][%[[J]]]
// CHECK:   %[[SIZE:.*]] = tensor.extract %[[SEND]][%[[J]]]
// CHECK:   %[[J64:.*]] = arith.index_cast %[[J]] : index to i64
// CHECK:   %[[OK:.*]] = arith.extui %{{.*}} : i1 to i32
// CHECK:   %[[W:.*]] = llvm.mlir.addressof @[[WHERE]] : !llvm.ptr
// CHECK:   %[[WHAT:.*]] = llvm.mlir.addressof @[[IN]] : !llvm.ptr
// CHECK:   func.call @moecomm_rt_check(%[[OK]], %[[W]], %[[WHAT]], %[[J64]], %[[START]], %[[SIZE]], %{{.*}})
// CHECK:   tensor.extract %[[OUT_OFF]][%[[J]]]
// CHECK:   arith.bitcast {{.*}} : i32 to f32
// CHECK:   arith.bitcast {{.*}} : i32 to f32
// Gather into destination order: nothing unless every segment passed.
// CHECK: %[[TOTAL:.*]] = arith.select %[[SIZES]]#2, %[[SIZES]]#0, %{{.*}} : index
// CHECK: %[[EMPTY:.*]] = tensor.empty(%[[TOTAL]]) : tensor<?x16xbf16>
// CHECK: %[[GATHER:.*]]:2 = scf.for
// CHECK:   arith.select %[[SIZES]]#2
// CHECK:   arith.select %[[SIZES]]#2
// CHECK:   tensor.extract_slice %[[X]]
// CHECK:   tensor.insert_slice
// CHECK: %[[ROWS:.*]], %[[COUNTS:.*]] = moecomm.all_to_all %[[GATHER]]#1, %[[SEND]] topology<ranks = 4, ranks_per_node = 4> : tensor<?x16xbf16>, tensor<4xi64>
// CHECK: %[[ONES:.*]] = arith.constant dense<1> : tensor<4xi64>
// CHECK: %[[OFFS:.*]], %{{.*}} = moecomm.all_to_all %[[SIZES]]#1, %[[ONES]] topology<ranks = 4, ranks_per_node = 4> : tensor<4x2xf32>, tensor<4xi64>
// Receiver, when the offsets arrived (a failed exchange leaves them empty):
// counts against what arrived and recv_sizes, offsets in bounds, scatter
// into the output while every check passed.
// CHECK: %[[ARRIVED_OK:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : i64
// CHECK: %[[RESULT:.*]] = scf.if %[[ARRIVED_OK]] -> (tensor<6x16xbf16>) {
// CHECK:   %[[SCATTER:.*]]:3 = scf.for %[[I:.*]] = {{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %[[OUT]], %{{.*}} = %{{.*}}) -> (index, tensor<6x16xbf16>, i1)
// CHECK:     tensor.extract %[[COUNTS]][%[[I]]]
// CHECK:     llvm.mlir.addressof @[[ARRIVED]]
// CHECK:     func.call @moecomm_rt_check(
// CHECK:     tensor.extract %[[RECV]][%[[I]]]
// CHECK:     llvm.mlir.addressof @[[RECV_SIZES]]
// CHECK:     func.call @moecomm_rt_check(
// CHECK:     tensor.extract %[[OFFS]]
// CHECK:     tensor.extract %[[OFFS]]
// CHECK:     arith.shli
// CHECK:     arith.ori
// CHECK:     llvm.mlir.addressof @[[OUT_OFFS]]
// CHECK:     func.call @moecomm_rt_check(
// CHECK:     arith.andi
// CHECK:     arith.andi
// CHECK:     %[[VALID:.*]] = arith.andi
// CHECK:     arith.select %[[VALID]]
// CHECK:     arith.select %[[VALID]]
// CHECK:     tensor.extract_slice %[[ROWS]]
// CHECK:     tensor.insert_slice
// CHECK:   scf.yield %[[SCATTER]]#1 : tensor<6x16xbf16>
// CHECK: } else {
// CHECK:   scf.yield %[[OUT]] : tensor<6x16xbf16>
// CHECK: return %[[RESULT]] : tensor<6x16xbf16>

// NODES-LABEL: func.func @exchange
// NODES: moecomm.all_to_all {{.*}} topology<ranks = 4, ranks_per_node = 2>
// NODES: moecomm.all_to_all {{.*}} topology<ranks = 4, ranks_per_node = 2>

// LLVM-LABEL: llvm.func @exchange
// LLVM: llvm.call @moecomm_rt_check
// LLVM-COUNT-2: llvm.call @moecomm_rt_all_to_all_counts_i64
// LLVM-NOT: stablehlo
func.func @exchange(%x: tensor<8x16xbf16>, %out: tensor<6x16xbf16>, %in_off: tensor<4xi64>, %send: tensor<4xi64>, %out_off: tensor<4xi64>, %recv: tensor<4xi64>) -> tensor<6x16xbf16> {
  %r = "stablehlo.custom_call"(%x, %out, %in_off, %send, %out_off, %recv) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}

// i32 offsets and sizes (sign-extended), f32 rows, dynamic row counts, the
// inherent attributes as properties (StableHLO's generic form) with JAX's
// SPMD channel_id and the custom call's defaults.
// ROUNDTRIP-LABEL: func.func @properties
// CHECK-LABEL: func.func @properties
// CHECK: arith.extsi {{.*}} : i32 to i64
// CHECK: moecomm.all_to_all {{.*}} topology<ranks = 2, ranks_per_node = 2> : tensor<?x8xf32>, tensor<2xi32>
// CHECK: moecomm.all_to_all {{.*}} : tensor<2x2xf32>, tensor<2xi64>
// CHECK: return {{.*}} : tensor<?x8xf32>
func.func @properties(%x: tensor<?x8xf32>, %out: tensor<?x8xf32>, %in_off: tensor<2xi32>, %send: tensor<2xi32>, %out_off: tensor<2xi32>, %recv: tensor<2xi32>) -> tensor<?x8xf32> {
  %r = "stablehlo.custom_call"(%x, %out, %in_off, %send, %out_off, %recv) <{api_version = 4 : i32, backend_config = {channel_id = 1 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}, call_target_name = "ragged_all_to_all", called_computations = [], has_side_effect = false, output_operand_aliases = []}> : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
