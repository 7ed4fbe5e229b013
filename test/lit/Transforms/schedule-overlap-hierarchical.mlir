// RUN: moecomm-opt %s -split-input-file --moecomm-schedule-overlap=chunks=4 | FileCheck %s --check-prefix=C4
// Input: staged IR as moecomm-split-hierarchical=strategy=hierarchical and
// moecomm-fuse-permute print it.

// chunks=4 on a two-stage (hierarchical) layer: four layouts, each chunk
// with its own exchanges, the outputs reassembled with four insert_slices.
// C4-LABEL: func.func @layer
// C4-COUNT-4: moecomm.layout
// C4-COUNT-4: tensor.insert_slice
// C4-NOT: moecomm.layout
// C4: return
func.func @layer(%arg0: tensor<?x64xbf16>, %arg1: tensor<?x2xi32>, %arg2: tensor<?x2xf32>, %arg3: tensor<8x8xf32>) -> (tensor<?x64xbf16>, tensor<8x8xf32>) {
  %handle, %recv_weights, %tokens_per_expert = moecomm.layout %arg1, %arg2 topology<ranks = 8, ranks_per_node = 4, experts = 16> strategy<hierarchical> : tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.pack %arg0, %handle dispatch stage 0 : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical> -> tensor<?x64xbf16>
  %recv = moecomm.exchange %out, %handle dispatch stage 0 scope<inter_node> : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical>
  %out_0 = moecomm.pack %recv, %handle dispatch stage 1 : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical> -> tensor<?x64xbf16>
  %recv_1 = moecomm.exchange %out_0, %handle dispatch stage 1 scope<intra_node> : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical>
  %0 = moecomm.unpack %recv_1, %handle dispatch : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical> -> tensor<?x64xbf16>
  %1 = arith.mulf %0, %0 : tensor<?x64xbf16>
  %out_2 = moecomm.pack %1, %handle combine stage 0 weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical> -> tensor<?x64xbf16>
  %recv_3 = moecomm.exchange %out_2, %handle combine stage 0 scope<intra_node> : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical>
  %out_4 = moecomm.pack %recv_3, %handle combine stage 1 weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical> -> tensor<?x64xbf16>
  %recv_5 = moecomm.exchange %out_4, %handle combine stage 1 scope<inter_node> : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical>
  %2 = moecomm.unpack %recv_5, %handle combine weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical> -> tensor<?x64xbf16>
  %3 = arith.addf %arg3, %arg3 : tensor<8x8xf32>
  return %2, %3 : tensor<?x64xbf16>, tensor<8x8xf32>
}
