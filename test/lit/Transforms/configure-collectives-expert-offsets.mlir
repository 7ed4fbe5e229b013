// moecomm-configure-collectives retargets moecomm.expert_offsets like
// tokens_per_expert: its type [E/W + 1] is re-inferred from the retargeted
// handle and carried through function signatures, and a tensor.cast to
// tensor<?xi64> keeps a segment loop that indexes it valid for any E/W.
// RUN: moecomm-opt %s --moecomm-configure-collectives="experts=64" | FileCheck %s --check-prefix=EXPERTS
// RUN: moecomm-opt %s --moecomm-configure-collectives="ranks=4 ranks-per-node=2" | FileCheck %s --check-prefix=RANKS
// RUN: moecomm-opt %s --moecomm-configure-collectives="ranks=4 experts=8" | FileCheck %s --check-prefix=BOTH
// The examples' expert FFNs (which read their segment starts from it)
// retarget their experts through the whole pipeline.
// RUN: moecomm-opt %moecomm_src/examples/qwen3-30b-a3b.mlir --moecomm-pipeline="ranks=4 ranks-per-node=2 experts=64 align=16 chunks=2" -o /dev/null

// 16 experts on 8 ranks (E/W = 2, offsets [3]) become 64 (E/W = 8, offsets
// [9]); on 4 ranks 16 are 4 per rank (offsets [5]); 8 on 4, 2 per rank.
// EXPERTS-LABEL: func.func @segment_starts
// EXPERTS-SAME: (%arg0: tensor<9xi64>) -> tensor<9xi64>
// EXPERTS-LABEL: func.func @layer
// EXPERTS: %[[OFFS:.*]] = moecomm.expert_offsets %{{.*}} : !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 64>
// EXPERTS: call @segment_starts(%[[OFFS]]) : (tensor<9xi64>) -> tensor<9xi64>
// EXPERTS: tensor.cast %[[OFFS]] : tensor<9xi64> to tensor<?xi64>
// EXPERTS: return {{.*}} : tensor<?x64xbf16>, tensor<9xi64>
// RANKS-LABEL: func.func @segment_starts
// RANKS-SAME: (%arg0: tensor<5xi64>) -> tensor<5xi64>
// RANKS-LABEL: func.func @layer
// RANKS: %[[OFFS:.*]] = moecomm.expert_offsets %{{.*}} : !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 16>
// RANKS: tensor.cast %[[OFFS]] : tensor<5xi64> to tensor<?xi64>
// BOTH-LABEL: func.func @segment_starts
// BOTH-SAME: (%arg0: tensor<3xi64>) -> tensor<3xi64>
// BOTH: moecomm.expert_offsets %{{.*}} : !moecomm.handle<ranks = 4, ranks_per_node = 4, experts = 8>
func.func @segment_starts(%offs: tensor<3xi64>) -> tensor<3xi64> {
  return %offs : tensor<3xi64>
}
func.func @layer(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> (tensor<?x64xbf16>, tensor<3xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> align(16) : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %offs = moecomm.expert_offsets %h : !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>
  %starts = call @segment_starts(%offs) : (tensor<3xi64>) -> tensor<3xi64>
  // The segment loop of the examples' expert FFNs, with identity experts:
  // expert e's rows [offsets[e], offsets[e] + tokens_per_expert[e]).
  %counts = tensor.cast %tpe : tensor<2xi64> to tensor<?xi64>
  %offsets = tensor.cast %offs : tensor<3xi64> to tensor<?xi64>
  %n = tensor.dim %counts, %c0 : tensor<?xi64>
  %rows = tensor.dim %recv, %c0 : tensor<?x64xbf16>
  %init = tensor.empty(%rows) : tensor<?x64xbf16>
  %y = scf.for %e = %c0 to %n step %c1 iter_args(%acc = %init) -> (tensor<?x64xbf16>) {
    %cnt64 = tensor.extract %counts[%e] : tensor<?xi64>
    %cnt = arith.index_cast %cnt64 : i64 to index
    %off64 = tensor.extract %offsets[%e] : tensor<?xi64>
    %off = arith.index_cast %off64 : i64 to index
    %seg = tensor.extract_slice %recv[%off, 0] [%cnt, 64] [1, 1] : tensor<?x64xbf16> to tensor<?x64xbf16>
    %acc2 = tensor.insert_slice %seg into %acc[%off, 0] [%cnt, 64] [1, 1] : tensor<?x64xbf16> into tensor<?x64xbf16>
    scf.yield %acc2 : tensor<?x64xbf16>
  }
  %out = moecomm.combine %y, %h weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xbf16>
  return %out, %starts : tensor<?x64xbf16>, tensor<3xi64>
}
