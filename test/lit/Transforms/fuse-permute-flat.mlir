// RUN: moecomm-opt %s -split-input-file --moecomm-fuse-permute | FileCheck %s --check-prefix=FLAT
// Input: staged IR as moecomm-split-hierarchical=strategy=flat prints it.

// Flat FP8 dispatch without fuse-quant: the quantize of the (only) hop folds
// into the pack, which gathers and quantizes; the received rows are
// dequantized, then unpacked.
// FLAT-LABEL: func.func @layer
// FLAT: moecomm.pack %arg0, %{{.*}} dispatch stage 0 : {{.*}} -> tensor<?x7168xf8E4M3FN>, tensor<?x56xf32>
// FLAT-NEXT: moecomm.exchange {{.*}} scope<global>
// FLAT-NEXT: moecomm.dequantize
// FLAT-NEXT: moecomm.unpack {{.*}} dispatch
func.func @layer(%arg0: tensor<?x7168xbf16>, %arg1: tensor<?x8xi32>, %arg2: tensor<?x8xf32>) -> tensor<?x7168xbf16> {
  %handle, %recv_weights, %tokens_per_expert = moecomm.layout %arg1, %arg2 topology<ranks = 16, ranks_per_node = 8, experts = 256> strategy<flat> : tensor<?x8xi32>, tensor<?x8xf32>
  %out = moecomm.permute %arg0, %handle dispatch stage 0 : tensor<?x7168xbf16>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256, strategy = flat>
  %q, %scales = moecomm.quantize %out : tensor<?x7168xbf16>
  %recv, %recv_scales = moecomm.exchange %q scales(%scales : tensor<?x56xf32>), %handle dispatch stage 0 scope<global> : tensor<?x7168xf8E4M3FN>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256, strategy = flat>
  %0 = moecomm.dequantize %recv, %recv_scales : tensor<?x7168xf8E4M3FN>, tensor<?x56xf32> -> tensor<?x7168xbf16>
  %out_0 = moecomm.permute %0, %handle dispatch output : tensor<?x7168xbf16>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256, strategy = flat>
  %1 = arith.mulf %out_0, %out_0 : tensor<?x7168xbf16>
  %out_1 = moecomm.permute %1, %handle combine stage 0 weighted : tensor<?x7168xbf16>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256, strategy = flat>
  %recv_2 = moecomm.exchange %out_1, %handle combine stage 0 scope<global> : tensor<?x7168xbf16>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256, strategy = flat>
  %out_3 = moecomm.permute %recv_2, %handle combine output weighted : tensor<?x7168xbf16>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256, strategy = flat>
  return %out_3 : tensor<?x7168xbf16>
}
