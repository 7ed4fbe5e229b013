// RUN: moecomm-opt %s -split-input-file --moecomm-split-hierarchical=strategy=flat --moecomm-fuse-permute --moecomm-schedule-overlap=chunks=1 | FileCheck %s --check-prefix=C1
// The default is chunks=1, as moecomm-pipeline's.
// RUN: moecomm-opt %s -split-input-file --moecomm-split-hierarchical=strategy=flat --moecomm-fuse-permute --moecomm-schedule-overlap | FileCheck %s --check-prefix=C1
// RUN: moecomm-opt %s -split-input-file --moecomm-split-hierarchical=strategy=flat --moecomm-fuse-permute --moecomm-schedule-overlap=chunks=2 | FileCheck %s --check-prefix=C2
// RUN: moecomm-opt %s -split-input-file --moecomm-split-hierarchical=strategy=hierarchical --moecomm-fuse-permute --moecomm-schedule-overlap=chunks=4 | FileCheck %s --check-prefix=C4

// chunks=1: exchanges become start/wait; the dense work that does not need
// the received rows runs while they are in flight.
// C1-LABEL: func.func @layer
// C1: moecomm.layout
// C1: %[[REQ:.*]], %[[BUF:.*]] = moecomm.exchange_start {{.*}} dispatch stage 0 scope<global>
// C1-NEXT: %[[DENSE:.*]] = arith.addf %arg3, %arg3
// C1-NEXT: moecomm.exchange_wait %[[REQ]], %[[BUF]]
// C1-NOT: moecomm.exchange %
//
// chunks=2: two layouts; chunk 1's dispatch exchange is in flight while
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
// C2: %[[X0:.*]] = tensor.extract_slice %arg0[%c0, 0] [%[[SIZE0]], 64]
// C2: %[[H0:.*]], %{{.*}}, %{{.*}} = moecomm.layout
// C2: %[[REQ0:.*]], %[[B0:.*]] = moecomm.exchange_start {{.*}}, %[[H0]] dispatch stage 0
// C2: %[[SIZE1:.*]] = arith.subi %[[T]], %[[START1]]
// C2: tensor.extract_slice %arg0[%[[START1]], 0] [%[[SIZE1]], 64]
// C2: %[[H1:.*]], %{{.*}}, %{{.*}} = moecomm.layout
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
// C4-LABEL: func.func @layer
// C4-COUNT-4: moecomm.layout
// C4-COUNT-4: tensor.insert_slice
// C4-NOT: moecomm.layout
// C4: return
func.func @layer(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>, %dense: tensor<8x8xf32>) -> (tensor<?x64xbf16>, tensor<8x8xf32>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %y = arith.mulf %recv, %recv : tensor<?x64xbf16>
  %out = moecomm.combine %y, %h weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xbf16>
  %d = arith.addf %dense, %dense : tensor<8x8xf32>
  return %out, %d : tensor<?x64xbf16>, tensor<8x8xf32>
}

// -----

// Two independent micro-batches through two layers: with chunks=1 the
// second micro-batch's dispatch is in flight while the first one computes.
// C1-LABEL: func.func @micro_batches
// C1: %[[HA:.*]], %{{.*}}, %{{.*}} = moecomm.layout %arg1
// C1: %[[RA:.*]], %[[BA:.*]] = moecomm.exchange_start {{.*}}, %[[HA]] dispatch
// C1: %[[HB:.*]], %{{.*}}, %{{.*}} = moecomm.layout %arg4
// C1: %[[RB:.*]], %[[BB:.*]] = moecomm.exchange_start {{.*}}, %[[HB]] dispatch
// C1: moecomm.exchange_wait %[[RA]], %[[BA]]
// C1: arith.mulf
// C1: moecomm.exchange_wait %[[RB]], %[[BB]]
func.func @micro_batches(%xa: tensor<?x64xbf16>, %ia: tensor<?x2xi32>, %wa: tensor<?x2xf32>,
                         %xb: tensor<?x64xbf16>, %ib: tensor<?x2xi32>, %wb: tensor<?x2xf32>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %ra, %rwa, %ta, %ha = moecomm.dispatch %xa, %ia, %wa topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %ya = arith.mulf %ra, %ra : tensor<?x64xbf16>
  %oa = moecomm.combine %ya, %ha weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xbf16>
  %rb, %rwb, %tb, %hb = moecomm.dispatch %xb, %ib, %wb topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %yb = arith.mulf %rb, %rb : tensor<?x64xbf16>
  %ob = moecomm.combine %yb, %hb weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xbf16>
  return %oa, %ob : tensor<?x64xbf16>, tensor<?x64xbf16>
}

// -----

// A row-wise expert computation as a linalg.matmul with an expert weight
// matrix from outside the layer: chunkable.
// C2-LABEL: func.func @matmul_expert
// C2-COUNT-2: moecomm.layout
// C2-NOT: remark
func.func @matmul_expert(%x: tensor<?x64xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>, %wexp: tensor<64x64xf32>) -> tensor<?x64xf32> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %recv, %c0 : tensor<?x64xf32>
  %init = tensor.empty(%n) : tensor<?x64xf32>
  %y = linalg.matmul ins(%recv, %wexp : tensor<?x64xf32>, tensor<64x64xf32>) outs(%init : tensor<?x64xf32>) -> tensor<?x64xf32>
  %out = moecomm.combine %y, %h weighted : tensor<?x64xf32>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xf32>
  return %out : tensor<?x64xf32>
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
func.func @barrier(%xa: tensor<?x64xbf16>, %ia: tensor<?x2xi32>, %wa: tensor<?x2xf32>,
                   %xb: tensor<?x64xbf16>, %ib: tensor<?x2xi32>, %wb: tensor<?x2xf32>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %ra, %rwa, %ta, %ha = moecomm.dispatch %xa, %ia, %wa topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %oa = moecomm.combine %ra, %ha weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xbf16>
  call @sync() : () -> ()
  %rb, %rwb, %tb, %hb = moecomm.dispatch %xb, %ib, %wb topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %ob = moecomm.combine %rb, %hb weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xbf16>
  return %oa, %ob : tensor<?x64xbf16>, tensor<?x64xbf16>
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
func.func @two_combines_one_rank(%x: tensor<1x8xf32>, %idx: tensor<1x1xi32>, %w: tensor<1x1xf32>) -> (tensor<1x8xf32>, tensor<1x8xf32>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 1, ranks_per_node = 1, experts = 4> : tensor<1x8xf32>, tensor<1x1xi32>, tensor<1x1xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x8xf32>, !moecomm.handle<ranks = 1, ranks_per_node = 1, experts = 4> -> tensor<1x8xf32>
  %gx = moecomm.combine %recv, %h : tensor<?x8xf32>, !moecomm.handle<ranks = 1, ranks_per_node = 1, experts = 4> -> tensor<1x8xf32>
  return %out, %gx : tensor<1x8xf32>, tensor<1x8xf32>
}
