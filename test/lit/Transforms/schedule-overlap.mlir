// RUN: moecomm-opt %s -split-input-file --moecomm-schedule-overlap=chunks=1 | FileCheck %s --check-prefix=C1
// RUN: moecomm-opt %s -split-input-file --moecomm-schedule-overlap | FileCheck %s --check-prefix=C1
// RUN: moecomm-opt %s -split-input-file --moecomm-schedule-overlap=chunks=2 | FileCheck %s --check-prefix=C2
// Input: staged IR as moecomm-split-hierarchical=strategy=flat and
// moecomm-fuse-permute print it.

// The default is chunks=1, as moecomm-pipeline's.
// chunks=1: exchanges become start/wait; the dense work that does not need
// the received rows runs while they are in flight.
// C1-LABEL: func.func @layer
// C1: moecomm.layout
// C1: %[[REQ:.*]], %[[BUF:.*]] = moecomm.exchange_start {{.*}} dispatch stage 0 scope<global>
// C1-NEXT: %[[DENSE:.*]] = arith.addf %arg3, %arg3
// C1-NEXT: moecomm.exchange_wait %[[REQ]], %[[BUF]]
// C1-NOT: moecomm.exchange %
//
// chunks=2: two layouts, both before any exchange (each is a blocking
// all-gather); chunk 1's dispatch exchange is in flight while
// chunk 0's expert computation runs, and chunk 0's combine exchange while
// chunk 1's computation runs; the outputs are reassembled in token order.
// Chunk c starts at c * (T / 2) + min(c, T % 2).
// C2-LABEL: func.func @layer
// C2: %[[T:.*]] = tensor.dim %arg1, %c0
// C2: %[[Q:.*]] = arith.divui %[[T]], %c2
// C2: %[[R:.*]] = arith.remui %[[T]], %c2
// C2: %[[Q1:.*]] = arith.muli %[[Q]], %c1
// C2: %[[R1:.*]] = arith.minui %c1, %[[R]]
// C2: %[[START1:.*]] = arith.addi %[[Q1]], %[[R1]]
// C2: %[[SIZE0:.*]] = arith.subi %[[START1]], %c0
// C2: tensor.extract_slice %arg1[%c0, 0] [%[[SIZE0]], 2]
// C2: %[[H0:.*]], %{{.*}}, %{{.*}} = moecomm.layout
// C2: %[[SIZE1:.*]] = arith.subi %[[T]], %[[START1]]
// C2: tensor.extract_slice %arg1[%[[START1]], 0] [%[[SIZE1]], 2]
// C2: %[[H1:.*]], %{{.*}}, %{{.*}} = moecomm.layout
// C2: tensor.extract_slice %arg0[%c0, 0] [%[[SIZE0]], 64]
// C2: %[[REQ0:.*]], %[[B0:.*]] = moecomm.exchange_start {{.*}}, %[[H0]] dispatch stage 0
// C2: tensor.extract_slice %arg0[%[[START1]], 0] [%[[SIZE1]], 64]
// C2: %[[REQ1:.*]], %[[B1:.*]] = moecomm.exchange_start {{.*}}, %[[H1]] dispatch stage 0
// C2: moecomm.exchange_wait %[[REQ0]], %[[B0]]
// C2: %[[RECV0:.*]] = moecomm.unpack {{.*}}, %[[H0]] dispatch
// C2-NEXT: arith.mulf %[[RECV0]], %[[RECV0]]
// C2: %[[CREQ0:.*]], %[[CB0:.*]] = moecomm.exchange_start {{.*}}, %[[H0]] combine stage 0
// C2: moecomm.exchange_wait %[[REQ1]], %[[B1]]
// C2: %[[RECV1:.*]] = moecomm.unpack {{.*}}, %[[H1]] dispatch
// C2-NEXT: arith.mulf %[[RECV1]], %[[RECV1]]
// C2: moecomm.exchange_wait %[[CREQ0]], %[[CB0]]
// C2: %[[OUT0:.*]] = moecomm.unpack {{.*}}, %[[H0]] combine weighted
// C2: %[[ACC:.*]] = tensor.insert_slice %[[OUT0]] into
// C2: %[[OUT1:.*]] = moecomm.unpack {{.*}}, %[[H1]] combine weighted
// C2: %[[RES:.*]] = tensor.insert_slice %[[OUT1]] into %[[ACC]]
// C2: return %[[RES]], %{{.*}} :
//
func.func @layer(%arg0: tensor<?x64xbf16>, %arg1: tensor<?x2xi32>, %arg2: tensor<?x2xf32>, %arg3: tensor<8x8xf32>) -> (tensor<?x64xbf16>, tensor<8x8xf32>) {
  %handle, %recv_weights, %tokens_per_expert = moecomm.layout %arg1, %arg2 topology<ranks = 8, ranks_per_node = 4, experts = 16> strategy<flat> : tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.pack %arg0, %handle dispatch stage 0 : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat> -> tensor<?x64xbf16>
  %recv = moecomm.exchange %out, %handle dispatch stage 0 scope<global> : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat>
  %0 = moecomm.unpack %recv, %handle dispatch : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat> -> tensor<?x64xbf16>
  %1 = arith.mulf %0, %0 : tensor<?x64xbf16>
  %out_0 = moecomm.pack %1, %handle combine stage 0 weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat> -> tensor<?x64xbf16>
  %recv_1 = moecomm.exchange %out_0, %handle combine stage 0 scope<global> : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat>
  %2 = moecomm.unpack %recv_1, %handle combine weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat> -> tensor<?x64xbf16>
  %3 = arith.addf %arg3, %arg3 : tensor<8x8xf32>
  return %2, %3 : tensor<?x64xbf16>, tensor<8x8xf32>
}

// -----

// Two independent micro-batches through two layers: with chunks=1 the
// second micro-batch's dispatch is in flight while the first one computes.
// Both layouts (blocking all-gathers) come before the first exchange starts.
// C1-LABEL: func.func @micro_batches
// C1: %[[HA:.*]], %{{.*}}, %{{.*}} = moecomm.layout %arg1
// C1-NEXT: %[[HB:.*]], %{{.*}}, %{{.*}} = moecomm.layout %arg4
// C1: %[[RA:.*]], %[[BA:.*]] = moecomm.exchange_start {{.*}}, %[[HA]] dispatch
// C1: %[[RB:.*]], %[[BB:.*]] = moecomm.exchange_start {{.*}}, %[[HB]] dispatch
// C1: moecomm.exchange_wait %[[RA]], %[[BA]]
// C1: arith.mulf
// C1: moecomm.exchange_wait %[[RB]], %[[BB]]
func.func @micro_batches(%arg0: tensor<?x64xbf16>, %arg1: tensor<?x2xi32>, %arg2: tensor<?x2xf32>, %arg3: tensor<?x64xbf16>, %arg4: tensor<?x2xi32>, %arg5: tensor<?x2xf32>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %handle, %recv_weights, %tokens_per_expert = moecomm.layout %arg1, %arg2 topology<ranks = 8, ranks_per_node = 4, experts = 16> strategy<flat> : tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.pack %arg0, %handle dispatch stage 0 : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat> -> tensor<?x64xbf16>
  %recv = moecomm.exchange %out, %handle dispatch stage 0 scope<global> : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat>
  %0 = moecomm.unpack %recv, %handle dispatch : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat> -> tensor<?x64xbf16>
  %1 = arith.mulf %0, %0 : tensor<?x64xbf16>
  %out_0 = moecomm.pack %1, %handle combine stage 0 weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat> -> tensor<?x64xbf16>
  %recv_1 = moecomm.exchange %out_0, %handle combine stage 0 scope<global> : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat>
  %2 = moecomm.unpack %recv_1, %handle combine weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat> -> tensor<?x64xbf16>
  %handle_2, %recv_weights_3, %tokens_per_expert_4 = moecomm.layout %arg4, %arg5 topology<ranks = 8, ranks_per_node = 4, experts = 16> strategy<flat> : tensor<?x2xi32>, tensor<?x2xf32>
  %out_5 = moecomm.pack %arg3, %handle_2 dispatch stage 0 : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat> -> tensor<?x64xbf16>
  %recv_6 = moecomm.exchange %out_5, %handle_2 dispatch stage 0 scope<global> : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat>
  %3 = moecomm.unpack %recv_6, %handle_2 dispatch : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat> -> tensor<?x64xbf16>
  %4 = arith.mulf %3, %3 : tensor<?x64xbf16>
  %out_7 = moecomm.pack %4, %handle_2 combine stage 0 weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat> -> tensor<?x64xbf16>
  %recv_8 = moecomm.exchange %out_7, %handle_2 combine stage 0 scope<global> : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat>
  %5 = moecomm.unpack %recv_8, %handle_2 combine weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat> -> tensor<?x64xbf16>
  return %2, %5 : tensor<?x64xbf16>, tensor<?x64xbf16>
}

// -----

// A row-wise expert computation as a linalg.matmul with an expert weight
// matrix from outside the layer: chunkable.
// C2-LABEL: func.func @matmul_expert
// C2-COUNT-2: moecomm.layout
// C2-NOT: remark
func.func @matmul_expert(%arg0: tensor<?x64xf32>, %arg1: tensor<?x2xi32>, %arg2: tensor<?x2xf32>, %arg3: tensor<64x64xf32>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %handle, %recv_weights, %tokens_per_expert = moecomm.layout %arg1, %arg2 topology<ranks = 8, ranks_per_node = 4, experts = 16> strategy<flat> : tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.pack %arg0, %handle dispatch stage 0 : tensor<?x64xf32>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat> -> tensor<?x64xf32>
  %recv = moecomm.exchange %out, %handle dispatch stage 0 scope<global> : tensor<?x64xf32>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat>
  %0 = moecomm.unpack %recv, %handle dispatch : tensor<?x64xf32>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat> -> tensor<?x64xf32>
  %dim = tensor.dim %0, %c0 : tensor<?x64xf32>
  %1 = tensor.empty(%dim) : tensor<?x64xf32>
  %2 = linalg.matmul ins(%0, %arg3 : tensor<?x64xf32>, tensor<64x64xf32>) outs(%1 : tensor<?x64xf32>) -> tensor<?x64xf32>
  %out_0 = moecomm.pack %2, %handle combine stage 0 weighted : tensor<?x64xf32>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat> -> tensor<?x64xf32>
  %recv_1 = moecomm.exchange %out_0, %handle combine stage 0 scope<global> : tensor<?x64xf32>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat>
  %3 = moecomm.unpack %recv_1, %handle combine weighted : tensor<?x64xf32>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat> -> tensor<?x64xf32>
  return %3 : tensor<?x64xf32>
}

// -----

// An op with unknown effects (an external call) is a barrier: no collective
// moves across it, in either direction.
// C1-LABEL: func.func @barrier
// C1: moecomm.layout %arg1
// C1: moecomm.exchange_wait
// C1: moecomm.exchange_wait
// C1: call @sync() : () -> ()
// C1: moecomm.layout %arg4
func.func private @sync()
func.func @barrier(%arg0: tensor<?x64xbf16>, %arg1: tensor<?x2xi32>, %arg2: tensor<?x2xf32>, %arg3: tensor<?x64xbf16>, %arg4: tensor<?x2xi32>, %arg5: tensor<?x2xf32>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %handle, %recv_weights, %tokens_per_expert = moecomm.layout %arg1, %arg2 topology<ranks = 8, ranks_per_node = 4, experts = 16> strategy<flat> : tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.pack %arg0, %handle dispatch stage 0 : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat> -> tensor<?x64xbf16>
  %recv = moecomm.exchange %out, %handle dispatch stage 0 scope<global> : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat>
  %0 = moecomm.unpack %recv, %handle dispatch : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat> -> tensor<?x64xbf16>
  %out_0 = moecomm.pack %0, %handle combine stage 0 weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat> -> tensor<?x64xbf16>
  %recv_1 = moecomm.exchange %out_0, %handle combine stage 0 scope<global> : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat>
  %1 = moecomm.unpack %recv_1, %handle combine weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat> -> tensor<?x64xbf16>
  call @sync() : () -> ()
  %handle_2, %recv_weights_3, %tokens_per_expert_4 = moecomm.layout %arg4, %arg5 topology<ranks = 8, ranks_per_node = 4, experts = 16> strategy<flat> : tensor<?x2xi32>, tensor<?x2xf32>
  %out_5 = moecomm.pack %arg3, %handle_2 dispatch stage 0 : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat> -> tensor<?x64xbf16>
  %recv_6 = moecomm.exchange %out_5, %handle_2 dispatch stage 0 scope<global> : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat>
  %2 = moecomm.unpack %recv_6, %handle_2 dispatch : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat> -> tensor<?x64xbf16>
  %out_7 = moecomm.pack %2, %handle_2 combine stage 0 weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat> -> tensor<?x64xbf16>
  %recv_8 = moecomm.exchange %out_7, %handle_2 combine stage 0 scope<global> : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat>
  %3 = moecomm.unpack %recv_8, %handle_2 combine weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat> -> tensor<?x64xbf16>
  return %1, %3 : tensor<?x64xbf16>, tensor<?x64xbf16>
}

// -----

// One handle feeds two combines (forward out and backward grad_x) with W = 1
// (no exchange) and a static T: every chunk's outputs are reassembled where
// all the layer's inputs are available and before either output is used.
// C2-LABEL: func.func @two_combines_one_rank
// C2: %[[T:.*]] = tensor.dim %arg1, %c0 : tensor<1x1xi32>
// C2-DAG: %[[E0:.*]] = tensor.empty(%[[T]]) : tensor<?x8xf32>
// C2-DAG: %[[E1:.*]] = tensor.empty(%[[T]]) : tensor<?x8xf32>
// C2: %[[H0:.*]], %{{.*}}, %{{.*}} = moecomm.layout
// C2: %[[R0:.*]] = moecomm.unpack %{{.*}}, %[[H0]] dispatch
// C2: %[[O0:.*]] = moecomm.unpack %[[R0]], %[[H0]] combine weighted
// C2: %[[G0:.*]] = moecomm.unpack %[[R0]], %[[H0]] combine :
// C2: %[[AO:.*]] = tensor.insert_slice %[[O0]] into %[[E0]]
// C2: %[[AG:.*]] = tensor.insert_slice %[[G0]] into %[[E1]]
// C2: %[[H1:.*]], %{{.*}}, %{{.*}} = moecomm.layout
// C2: %[[R1:.*]] = moecomm.unpack %{{.*}}, %[[H1]] dispatch
// C2: %[[O1:.*]] = moecomm.unpack %[[R1]], %[[H1]] combine weighted
// C2: %[[G1:.*]] = moecomm.unpack %[[R1]], %[[H1]] combine :
// C2: %[[OUT:.*]] = tensor.insert_slice %[[O1]] into %[[AO]]
// C2: %[[GX:.*]] = tensor.insert_slice %[[G1]] into %[[AG]]
// C2: %[[OUTC:.*]] = tensor.cast %[[OUT]] : tensor<?x8xf32> to tensor<1x8xf32>
// C2: %[[GXC:.*]] = tensor.cast %[[GX]] : tensor<?x8xf32> to tensor<1x8xf32>
// C2: return %[[OUTC]], %[[GXC]]
func.func @two_combines_one_rank(%arg0: tensor<1x8xf32>, %arg1: tensor<1x1xi32>, %arg2: tensor<1x1xf32>) -> (tensor<1x8xf32>, tensor<1x8xf32>) {
  %handle, %recv_weights, %tokens_per_expert = moecomm.layout %arg1, %arg2 topology<ranks = 1, ranks_per_node = 1, experts = 4> strategy<flat> : tensor<1x1xi32>, tensor<1x1xf32>
  %0 = moecomm.unpack %arg0, %handle dispatch : tensor<1x8xf32>, !moecomm.handle<ranks = 1, ranks_per_node = 1, experts = 4, strategy = flat> -> tensor<?x8xf32>
  %1 = moecomm.unpack %0, %handle combine weighted : tensor<?x8xf32>, !moecomm.handle<ranks = 1, ranks_per_node = 1, experts = 4, strategy = flat> -> tensor<?x8xf32>
  %cast = tensor.cast %1 : tensor<?x8xf32> to tensor<1x8xf32>
  %2 = moecomm.unpack %0, %handle combine : tensor<?x8xf32>, !moecomm.handle<ranks = 1, ranks_per_node = 1, experts = 4, strategy = flat> -> tensor<?x8xf32>
  %cast_0 = tensor.cast %2 : tensor<?x8xf32> to tensor<1x8xf32>
  return %cast, %cast_0 : tensor<1x8xf32>, tensor<1x8xf32>
}
