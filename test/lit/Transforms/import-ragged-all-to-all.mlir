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

// CHECK-LABEL: func.func @exchange
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xbf16>, %[[OUT:.*]]: tensor<6x16xbf16>, %[[IN_OFF:.*]]: tensor<4xi64>, %[[SEND:.*]]: tensor<4xi64>, %[[OUT_OFF:.*]]: tensor<4xi64>, %[[RECV:.*]]: tensor<4xi64>)
// CHECK-NOT: stablehlo
// Sender: bounds of each segment, the offsets' bits, the total.
// CHECK: %[[SIZES:.*]]:2 = scf.for %[[J:.*]] = {{.*}} iter_args({{.*}}) -> (index, tensor<4x2xf32>)
// CHECK:   tensor.extract %[[IN_OFF]][%[[J]]]
// CHECK:   tensor.extract %[[SEND]][%[[J]]]
// CHECK:   cf.assert {{.*}} "ragged_all_to_all at {{.*}}import-ragged-all-to-all.mlir:{{[0-9]+}}:{{[0-9]+}}: input_offsets[j] + send_sizes[j] must lie in the operand's rows, both >= 0"
// CHECK:   tensor.extract %[[OUT_OFF]][%[[J]]]
// CHECK:   arith.bitcast {{.*}} : i32 to f32
// CHECK:   arith.bitcast {{.*}} : i32 to f32
// Gather into destination order.
// CHECK: %[[EMPTY:.*]] = tensor.empty(%[[SIZES]]#0) : tensor<?x16xbf16>
// CHECK: %[[GATHER:.*]]:2 = scf.for
// CHECK:   tensor.extract_slice %[[X]]
// CHECK:   tensor.insert_slice
// CHECK: %[[ROWS:.*]], %[[COUNTS:.*]] = moecomm.all_to_all %[[GATHER]]#1, %[[SEND]] topology<ranks = 4, ranks_per_node = 4> : tensor<?x16xbf16>, tensor<4xi64>
// CHECK: %[[ONES:.*]] = arith.constant dense<1> : tensor<4xi64>
// CHECK: %[[OFFS:.*]], %{{.*}} = moecomm.all_to_all %[[SIZES]]#1, %[[ONES]] topology<ranks = 4, ranks_per_node = 4> : tensor<4x2xf32>, tensor<4xi64>
// Receiver: counts against recv_sizes, offsets in bounds, scatter into the output.
// CHECK: %[[SCATTER:.*]]:2 = scf.for %[[I:.*]] = {{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %[[OUT]]) -> (index, tensor<6x16xbf16>)
// CHECK:   tensor.extract %[[COUNTS]][%[[I]]]
// CHECK:   tensor.extract %[[RECV]][%[[I]]]
// CHECK:   cf.assert {{.*}} "ragged_all_to_all at {{.*}}: recv_sizes[j] must equal the rows rank j sent here (its send_sizes entry for this rank)"
// CHECK:   tensor.extract %[[OFFS]]
// CHECK:   tensor.extract %[[OFFS]]
// CHECK:   arith.shli
// CHECK:   arith.ori
// CHECK:   cf.assert {{.*}} "ragged_all_to_all at {{.*}}: output_offsets[j] (given by rank j for this rank) + the rows from j must lie in the output's rows, >= 0"
// CHECK:   tensor.extract_slice %[[ROWS]]
// CHECK:   tensor.insert_slice
// CHECK: return %[[SCATTER]]#1 : tensor<6x16xbf16>

// NODES-LABEL: func.func @exchange
// NODES: moecomm.all_to_all {{.*}} topology<ranks = 4, ranks_per_node = 2>
// NODES: moecomm.all_to_all {{.*}} topology<ranks = 4, ranks_per_node = 2>

// LLVM-LABEL: llvm.func @exchange
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
