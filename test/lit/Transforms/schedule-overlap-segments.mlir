// RUN: moecomm-opt %s -split-input-file --moecomm-schedule-overlap=chunks=2 | FileCheck %s
// RUN: moecomm-opt %s -split-input-file --moecomm-schedule-overlap=chunks=2 -verify-diagnostics
// Layers whose experts are the expert-FFN IR form: a loop over the local
// experts, each applying its weights to its segment of the expert-major
// received rows (offsets and sizes from tokens_per_expert, or offsets from
// moecomm.expert_offsets). Input: staged IR as
// moecomm-split-hierarchical=strategy=flat and moecomm-fuse-permute print
// it. No remark: every layer is chunked.

// The forward layer: every chunk has its own layout, and that layout's
// tokens_per_expert sizes its loop (its trip count) and its segments; the
// loop slices the chunk's received rows and assembles the chunk's expert
// outputs, which go to the chunk's combine. Chunk 1's dispatch is in flight
// while chunk 0's loop runs. Both layouts come first.
// CHECK-LABEL: func.func @ffn_layer
// CHECK: %[[H0:.*]], %{{.*}}, %[[TPE0:.*]] = moecomm.layout
// CHECK: %[[H1:.*]], %{{.*}}, %[[TPE1:.*]] = moecomm.layout
// CHECK: %[[REQ0:.*]], %[[B0:.*]] = moecomm.exchange_start {{.*}}, %[[H0]] dispatch
// CHECK: %[[CNT0:.*]] = tensor.cast %[[TPE0]]
// CHECK: %[[N0:.*]] = tensor.dim %[[CNT0]], %c0
// CHECK: %[[REQ1:.*]], %[[B1:.*]] = moecomm.exchange_start {{.*}}, %[[H1]] dispatch
// CHECK: %[[CNT1:.*]] = tensor.cast %[[TPE1]]
// CHECK: %[[N1:.*]] = tensor.dim %[[CNT1]], %c0
// CHECK: moecomm.exchange_wait %[[REQ0]], %[[B0]]
// CHECK: %[[RECV0:.*]] = moecomm.unpack {{.*}}, %[[H0]] dispatch
// CHECK: %[[ROWS0:.*]] = tensor.dim %[[RECV0]], %c0
// CHECK: %[[INIT0:.*]] = tensor.empty(%[[ROWS0]])
// CHECK: %[[Y0:.*]]:2 = scf.for %[[E:.*]] = %c0{{[_0-9]*}} to %[[N0]] step %c1{{[_0-9]*}} iter_args(%[[ACC:.*]] = %[[INIT0]], %[[OFF:.*]] = %c0{{[_0-9]*}})
// CHECK-NEXT: %[[C:.*]] = tensor.extract %[[CNT0]][%[[E]]]
// CHECK-NEXT: %[[SIZE:.*]] = arith.index_cast %[[C]]
// CHECK-NEXT: tensor.extract_slice %[[RECV0]][%[[OFF]], 0] [%[[SIZE]], 16] [1, 1]
// CHECK: linalg.matmul
// CHECK: tensor.insert_slice %{{.*}} into %[[ACC]][%[[OFF]], 0] [%[[SIZE]], 16] [1, 1]
// CHECK: moecomm.pack %[[Y0]]#0, %[[H0]] combine
// CHECK: moecomm.exchange_wait %[[REQ1]], %[[B1]]
// CHECK: %[[RECV1:.*]] = moecomm.unpack {{.*}}, %[[H1]] dispatch
// CHECK: %[[Y1:.*]]:2 = scf.for %{{.*}} = %c0{{[_0-9]*}} to %[[N1]] step %c1
// CHECK-NEXT: tensor.extract %[[CNT1]][
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: tensor.extract_slice %[[RECV1]][
// CHECK: moecomm.pack %[[Y1]]#0, %[[H1]] combine
// CHECK: return
#rows = affine_map<(d0, d1) -> (d0, d1)>
func.func @ffn_layer(%arg0: tensor<?x16xbf16>, %arg1: tensor<?x2xi32>, %arg2: tensor<?x2xf32>, %arg3: tensor<?x16x8xf32>, %arg4: tensor<?x8x16xf32>) -> tensor<?x16xbf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cst = arith.constant 0.000000e+00 : f32
  %handle, %recv_weights, %tokens_per_expert = moecomm.layout %arg1, %arg2 topology<ranks = 4, ranks_per_node = 2, experts = 8> strategy<flat> : tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.pack %arg0, %handle dispatch stage 0 : tensor<?x16xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat> -> tensor<?x16xbf16>
  %recv = moecomm.exchange %out, %handle dispatch stage 0 scope<global> : tensor<?x16xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat>
  %0 = moecomm.unpack %recv, %handle dispatch : tensor<?x16xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat> -> tensor<?x16xbf16>
  %cast = tensor.cast %tokens_per_expert : tensor<2xi64> to tensor<?xi64>
  %n = tensor.dim %cast, %c0 : tensor<?xi64>
  %dim = tensor.dim %0, %c0 : tensor<?x16xbf16>
  %1 = tensor.empty(%dim) : tensor<?x16xbf16>
  %2:2 = scf.for %arg5 = %c0 to %n step %c1 iter_args(%arg6 = %1, %arg7 = %c0) -> (tensor<?x16xbf16>, index) {
    %extracted = tensor.extract %cast[%arg5] : tensor<?xi64>
    %4 = arith.index_cast %extracted : i64 to index
    %extracted_slice = tensor.extract_slice %0[%arg7, 0] [%4, 16] [1, 1] : tensor<?x16xbf16> to tensor<?x16xbf16>
    %extracted_slice_2 = tensor.extract_slice %arg3[%arg5, 0, 0] [1, 16, 8] [1, 1, 1] : tensor<?x16x8xf32> to tensor<16x8xf32>
    %extracted_slice_3 = tensor.extract_slice %arg4[%arg5, 0, 0] [1, 8, 16] [1, 1, 1] : tensor<?x8x16xf32> to tensor<8x16xf32>
    %5 = tensor.empty(%4) : tensor<?x16xf32>
    %6 = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%extracted_slice : tensor<?x16xbf16>) outs(%5 : tensor<?x16xf32>) {
    ^bb0(%in: bf16, %out_4: f32):
      %15 = arith.extf %in : bf16 to f32
      linalg.yield %15 : f32
    } -> tensor<?x16xf32>
    %7 = tensor.empty(%4) : tensor<?x8xf32>
    %8 = linalg.fill ins(%cst : f32) outs(%7 : tensor<?x8xf32>) -> tensor<?x8xf32>
    %9 = linalg.matmul ins(%6, %extracted_slice_2 : tensor<?x16xf32>, tensor<16x8xf32>) outs(%8 : tensor<?x8xf32>) -> tensor<?x8xf32>
    %10 = linalg.fill ins(%cst : f32) outs(%5 : tensor<?x16xf32>) -> tensor<?x16xf32>
    %11 = linalg.matmul ins(%9, %extracted_slice_3 : tensor<?x8xf32>, tensor<8x16xf32>) outs(%10 : tensor<?x16xf32>) -> tensor<?x16xf32>
    %12 = tensor.empty(%4) : tensor<?x16xbf16>
    %13 = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%11 : tensor<?x16xf32>) outs(%12 : tensor<?x16xbf16>) {
    ^bb0(%in: f32, %out_4: bf16):
      %15 = arith.truncf %in : f32 to bf16
      linalg.yield %15 : bf16
    } -> tensor<?x16xbf16>
    %inserted_slice = tensor.insert_slice %13 into %arg6[%arg7, 0] [%4, 16] [1, 1] : tensor<?x16xbf16> into tensor<?x16xbf16>
    %14 = arith.addi %arg7, %4 : index
    scf.yield %inserted_slice, %14 : tensor<?x16xbf16>, index
  }
  %out_0 = moecomm.pack %2#0, %handle combine stage 0 weighted : tensor<?x16xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat> -> tensor<?x16xbf16>
  %recv_1 = moecomm.exchange %out_0, %handle combine stage 0 scope<global> : tensor<?x16xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat>
  %3 = moecomm.unpack %recv_1, %handle combine weighted : tensor<?x16xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat> -> tensor<?x16xbf16>
  return %3 : tensor<?x16xbf16>
}


// -----

// A training step: the forward loop, then the backward's loop over the same
// segments (the gradient rows scaled by recv_weights, products with the
// transposed weights). Every chunk's two loops read its own layout's
// tokens_per_expert; its forward out and backward grad_x are reassembled
// in token order.
// CHECK-LABEL: func.func @training_step
// CHECK: %[[H0:.*]], %[[RW0:.*]], %[[TPE0:.*]] = moecomm.layout
// CHECK: %[[H1:.*]], %[[RW1:.*]], %[[TPE1:.*]] = moecomm.layout
// CHECK: %[[CNT0:.*]] = tensor.cast %[[TPE0]]
// CHECK: %[[CNT1:.*]] = tensor.cast %[[TPE1]]
// CHECK: %[[F0:.*]]:2 = scf.for
// CHECK-NEXT: tensor.extract %[[CNT0]][
// CHECK: moecomm.pack %[[F0]]#0, %[[H0]] combine stage 0 weighted
// CHECK: %[[G0:.*]] = moecomm.unpack {{.*}}, %[[H0]] dispatch
// CHECK: %[[GY0:.*]] = linalg.generic {{.*}} ins(%[[G0]], %[[RW0]] :
// CHECK: %[[B0:.*]]:2 = scf.for
// CHECK-NEXT: tensor.extract %[[CNT0]][
// CHECK-NEXT: %[[S0:.*]] = arith.index_cast
// CHECK-NEXT: tensor.extract_slice %[[GY0]][%{{.*}}, 0] [%[[S0]], 16] [1, 1]
// CHECK: linalg.matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}]
// CHECK: moecomm.pack %[[B0]]#0, %[[H0]] combine stage 0 :
// CHECK: %[[F1:.*]]:2 = scf.for
// CHECK-NEXT: tensor.extract %[[CNT1]][
// CHECK: moecomm.pack %[[F1]]#0, %[[H1]] combine stage 0 weighted
// CHECK: %[[B1:.*]]:2 = scf.for
// CHECK-NEXT: tensor.extract %[[CNT1]][
// CHECK: moecomm.pack %[[B1]]#0, %[[H1]] combine stage 0 :
// CHECK: %[[OUT0:.*]] = moecomm.unpack {{.*}}, %[[H0]] combine weighted
// CHECK: %[[GX0:.*]] = moecomm.unpack {{.*}}, %[[H0]] combine :
// CHECK: %[[OUT1:.*]] = moecomm.unpack {{.*}}, %[[H1]] combine weighted
// CHECK: %[[OUTS:.*]] = tensor.insert_slice %[[OUT1]] into
// CHECK: %[[GX1:.*]] = moecomm.unpack {{.*}}, %[[H1]] combine :
// CHECK: %[[GXS:.*]] = tensor.insert_slice %[[GX1]] into
// CHECK: return %[[OUTS]], %[[GXS]]
#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#bt = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @training_step(%arg0: tensor<?x16xf32>, %arg1: tensor<?x2xi32>, %arg2: tensor<?x2xf32>, %arg3: tensor<?x16xf32>, %arg4: tensor<?x16x8xf32>, %arg5: tensor<?x8x16xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %c2 = arith.constant 2 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cst = arith.constant 0.000000e+00 : f32
  %handle, %recv_weights, %tokens_per_expert = moecomm.layout %arg1, %arg2 topology<ranks = 4, ranks_per_node = 2, experts = 8> strategy<flat> : tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.pack %arg0, %handle dispatch stage 0 : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat> -> tensor<?x16xf32>
  %recv = moecomm.exchange %out, %handle dispatch stage 0 scope<global> : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat>
  %0 = moecomm.unpack %recv, %handle dispatch : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat> -> tensor<?x16xf32>
  %cast = tensor.cast %tokens_per_expert : tensor<2xi64> to tensor<?xi64>
  %dim = tensor.dim %0, %c0 : tensor<?x16xf32>
  %1 = tensor.empty(%dim) : tensor<?x16xf32>
  %2:2 = scf.for %arg6 = %c0 to %c2 step %c1 iter_args(%arg7 = %1, %arg8 = %c0) -> (tensor<?x16xf32>, index) {
    %extracted = tensor.extract %cast[%arg6] : tensor<?xi64>
    %10 = arith.index_cast %extracted : i64 to index
    %extracted_slice = tensor.extract_slice %0[%arg8, 0] [%10, 16] [1, 1] : tensor<?x16xf32> to tensor<?x16xf32>
    %extracted_slice_6 = tensor.extract_slice %arg4[%arg6, 0, 0] [1, 16, 8] [1, 1, 1] : tensor<?x16x8xf32> to tensor<16x8xf32>
    %extracted_slice_7 = tensor.extract_slice %arg5[%arg6, 0, 0] [1, 8, 16] [1, 1, 1] : tensor<?x8x16xf32> to tensor<8x16xf32>
    %11 = tensor.empty(%10) : tensor<?x8xf32>
    %12 = linalg.fill ins(%cst : f32) outs(%11 : tensor<?x8xf32>) -> tensor<?x8xf32>
    %13 = linalg.matmul ins(%extracted_slice, %extracted_slice_6 : tensor<?x16xf32>, tensor<16x8xf32>) outs(%12 : tensor<?x8xf32>) -> tensor<?x8xf32>
    %14 = tensor.empty(%10) : tensor<?x16xf32>
    %15 = linalg.fill ins(%cst : f32) outs(%14 : tensor<?x16xf32>) -> tensor<?x16xf32>
    %16 = linalg.matmul ins(%13, %extracted_slice_7 : tensor<?x8xf32>, tensor<8x16xf32>) outs(%15 : tensor<?x16xf32>) -> tensor<?x16xf32>
    %inserted_slice = tensor.insert_slice %16 into %arg7[%arg8, 0] [%10, 16] [1, 1] : tensor<?x16xf32> into tensor<?x16xf32>
    %17 = arith.addi %arg8, %10 : index
    scf.yield %inserted_slice, %17 : tensor<?x16xf32>, index
  }
  %out_0 = moecomm.pack %2#0, %handle combine stage 0 weighted : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat> -> tensor<?x16xf32>
  %recv_1 = moecomm.exchange %out_0, %handle combine stage 0 scope<global> : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat>
  %3 = moecomm.unpack %recv_1, %handle combine weighted : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat> -> tensor<?x16xf32>
  %out_2 = moecomm.pack %arg3, %handle dispatch stage 0 : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat> -> tensor<?x16xf32>
  %recv_3 = moecomm.exchange %out_2, %handle dispatch stage 0 scope<global> : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat>
  %4 = moecomm.unpack %recv_3, %handle dispatch : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat> -> tensor<?x16xf32>
  %5 = tensor.empty(%dim) : tensor<?x16xf32>
  %6 = linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]} ins(%4, %recv_weights : tensor<?x16xf32>, tensor<?xf32>) outs(%5 : tensor<?x16xf32>) {
  ^bb0(%in: f32, %in_6: f32, %out_7: f32):
    %10 = arith.mulf %in, %in_6 : f32
    linalg.yield %10 : f32
  } -> tensor<?x16xf32>
  %7 = tensor.empty(%dim) : tensor<?x16xf32>
  %8:2 = scf.for %arg6 = %c0 to %c2 step %c1 iter_args(%arg7 = %7, %arg8 = %c0) -> (tensor<?x16xf32>, index) {
    %extracted = tensor.extract %cast[%arg6] : tensor<?xi64>
    %10 = arith.index_cast %extracted : i64 to index
    %extracted_slice = tensor.extract_slice %6[%arg8, 0] [%10, 16] [1, 1] : tensor<?x16xf32> to tensor<?x16xf32>
    %extracted_slice_6 = tensor.extract_slice %arg4[%arg6, 0, 0] [1, 16, 8] [1, 1, 1] : tensor<?x16x8xf32> to tensor<16x8xf32>
    %extracted_slice_7 = tensor.extract_slice %arg5[%arg6, 0, 0] [1, 8, 16] [1, 1, 1] : tensor<?x8x16xf32> to tensor<8x16xf32>
    %11 = tensor.empty(%10) : tensor<?x8xf32>
    %12 = linalg.fill ins(%cst : f32) outs(%11 : tensor<?x8xf32>) -> tensor<?x8xf32>
    %13 = linalg.matmul indexing_maps = [#a, #bt, #c] ins(%extracted_slice, %extracted_slice_7 : tensor<?x16xf32>, tensor<8x16xf32>) outs(%12 : tensor<?x8xf32>) -> tensor<?x8xf32>
    %14 = tensor.empty(%10) : tensor<?x16xf32>
    %15 = linalg.fill ins(%cst : f32) outs(%14 : tensor<?x16xf32>) -> tensor<?x16xf32>
    %16 = linalg.matmul indexing_maps = [#a, #bt, #c] ins(%13, %extracted_slice_6 : tensor<?x8xf32>, tensor<16x8xf32>) outs(%15 : tensor<?x16xf32>) -> tensor<?x16xf32>
    %inserted_slice = tensor.insert_slice %16 into %arg7[%arg8, 0] [%10, 16] [1, 1] : tensor<?x16xf32> into tensor<?x16xf32>
    %17 = arith.addi %arg8, %10 : index
    scf.yield %inserted_slice, %17 : tensor<?x16xf32>, index
  }
  %out_4 = moecomm.pack %8#0, %handle combine stage 0 : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat> -> tensor<?x16xf32>
  %recv_5 = moecomm.exchange %out_4, %handle combine stage 0 scope<global> : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat>
  %9 = moecomm.unpack %recv_5, %handle combine : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat> -> tensor<?x16xf32>
  return %3, %9 : tensor<?x16xf32>, tensor<?x16xf32>
}



// -----

// Padded segments (align(16)): the loop reads each segment's start from the
// layout's moecomm.expert_offsets, as a grouped GEMM takes its group
// offsets. Every chunk's layout keeps the align and gets its own
// expert_offsets, which its loop reads: a chunk's segments are padded in its
// own received rows.
// CHECK-LABEL: func.func @aligned_ffn_layer
// CHECK: %[[H0:.*]], %{{.*}}, %[[TPE0:.*]] = moecomm.layout {{.*}} align(16)
// CHECK: %[[H1:.*]], %{{.*}}, %[[TPE1:.*]] = moecomm.layout {{.*}} align(16)
// CHECK: %[[OFFS0:.*]] = moecomm.expert_offsets %[[H0]]
// CHECK: %[[STARTS0:.*]] = tensor.cast %[[OFFS0]] : tensor<3xi64> to tensor<?xi64>
// CHECK: %[[OFFS1:.*]] = moecomm.expert_offsets %[[H1]]
// CHECK: %[[STARTS1:.*]] = tensor.cast %[[OFFS1]] : tensor<3xi64> to tensor<?xi64>
// CHECK: %[[RECV0:.*]] = moecomm.unpack {{.*}}, %[[H0]] dispatch
// CHECK: %[[Y0:.*]] = scf.for %[[E0:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC0:.*]] = %{{.*}}) -> (tensor<?x16xbf16>)
// CHECK-NEXT: %[[C0:.*]] = tensor.extract %{{.*}}[%[[E0]]]
// CHECK-NEXT: %[[SIZE0:.*]] = arith.index_cast %[[C0]]
// CHECK-NEXT: %[[S0:.*]] = tensor.extract %[[STARTS0]][%[[E0]]]
// CHECK-NEXT: %[[OFF0:.*]] = arith.index_cast %[[S0]]
// CHECK-NEXT: tensor.extract_slice %[[RECV0]][%[[OFF0]], 0] [%[[SIZE0]], 16] [1, 1]
// CHECK: tensor.insert_slice %{{.*}} into %[[ACC0]][%[[OFF0]], 0] [%[[SIZE0]], 16] [1, 1]
// CHECK: moecomm.pack %[[Y0]], %[[H0]] combine
// CHECK: %[[RECV1:.*]] = moecomm.unpack {{.*}}, %[[H1]] dispatch
// CHECK: %[[Y1:.*]] = scf.for %[[E1:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC1:.*]] = %{{.*}}) -> (tensor<?x16xbf16>)
// CHECK-NEXT: tensor.extract %{{.*}}[%[[E1]]]
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: %[[S1:.*]] = tensor.extract %[[STARTS1]][%[[E1]]]
// CHECK-NEXT: %[[OFF1:.*]] = arith.index_cast %[[S1]]
// CHECK-NEXT: tensor.extract_slice %[[RECV1]][%[[OFF1]], 0]
// CHECK: tensor.insert_slice %{{.*}} into %[[ACC1]][%[[OFF1]], 0]
// CHECK: moecomm.pack %[[Y1]], %[[H1]] combine
// CHECK: return
#rows = affine_map<(d0, d1) -> (d0, d1)>
func.func @aligned_ffn_layer(%arg0: tensor<?x16xbf16>, %arg1: tensor<?x2xi32>, %arg2: tensor<?x2xf32>, %arg3: tensor<?x16x8xf32>, %arg4: tensor<?x8x16xf32>) -> tensor<?x16xbf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cst = arith.constant 0.000000e+00 : f32
  %handle, %recv_weights, %tokens_per_expert = moecomm.layout %arg1, %arg2 topology<ranks = 4, ranks_per_node = 2, experts = 8> strategy<flat> align(16) : tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.pack %arg0, %handle dispatch stage 0 : tensor<?x16xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat> -> tensor<?x16xbf16>
  %recv = moecomm.exchange %out, %handle dispatch stage 0 scope<global> : tensor<?x16xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat>
  %0 = moecomm.unpack %recv, %handle dispatch : tensor<?x16xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat> -> tensor<?x16xbf16>
  %cast = tensor.cast %tokens_per_expert : tensor<2xi64> to tensor<?xi64>
  %n = tensor.dim %cast, %c0 : tensor<?xi64>
  %offsets = moecomm.expert_offsets %handle : !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat>
  %starts = tensor.cast %offsets : tensor<3xi64> to tensor<?xi64>
  %dim = tensor.dim %0, %c0 : tensor<?x16xbf16>
  %1 = tensor.empty(%dim) : tensor<?x16xbf16>
  %2 = scf.for %arg5 = %c0 to %n step %c1 iter_args(%arg6 = %1) -> (tensor<?x16xbf16>) {
    %extracted = tensor.extract %cast[%arg5] : tensor<?xi64>
    %4 = arith.index_cast %extracted : i64 to index
    %start = tensor.extract %starts[%arg5] : tensor<?xi64>
    %off = arith.index_cast %start : i64 to index
    %extracted_slice = tensor.extract_slice %0[%off, 0] [%4, 16] [1, 1] : tensor<?x16xbf16> to tensor<?x16xbf16>
    %extracted_slice_2 = tensor.extract_slice %arg3[%arg5, 0, 0] [1, 16, 8] [1, 1, 1] : tensor<?x16x8xf32> to tensor<16x8xf32>
    %extracted_slice_3 = tensor.extract_slice %arg4[%arg5, 0, 0] [1, 8, 16] [1, 1, 1] : tensor<?x8x16xf32> to tensor<8x16xf32>
    %5 = tensor.empty(%4) : tensor<?x16xf32>
    %6 = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%extracted_slice : tensor<?x16xbf16>) outs(%5 : tensor<?x16xf32>) {
    ^bb0(%in: bf16, %out_4: f32):
      %15 = arith.extf %in : bf16 to f32
      linalg.yield %15 : f32
    } -> tensor<?x16xf32>
    %7 = tensor.empty(%4) : tensor<?x8xf32>
    %8 = linalg.fill ins(%cst : f32) outs(%7 : tensor<?x8xf32>) -> tensor<?x8xf32>
    %9 = linalg.matmul ins(%6, %extracted_slice_2 : tensor<?x16xf32>, tensor<16x8xf32>) outs(%8 : tensor<?x8xf32>) -> tensor<?x8xf32>
    %10 = linalg.fill ins(%cst : f32) outs(%5 : tensor<?x16xf32>) -> tensor<?x16xf32>
    %11 = linalg.matmul ins(%9, %extracted_slice_3 : tensor<?x8xf32>, tensor<8x16xf32>) outs(%10 : tensor<?x16xf32>) -> tensor<?x16xf32>
    %12 = tensor.empty(%4) : tensor<?x16xbf16>
    %13 = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%11 : tensor<?x16xf32>) outs(%12 : tensor<?x16xbf16>) {
    ^bb0(%in: f32, %out_4: bf16):
      %15 = arith.truncf %in : f32 to bf16
      linalg.yield %15 : bf16
    } -> tensor<?x16xbf16>
    %inserted_slice = tensor.insert_slice %13 into %arg6[%off, 0] [%4, 16] [1, 1] : tensor<?x16xbf16> into tensor<?x16xbf16>
    scf.yield %inserted_slice : tensor<?x16xbf16>
  }
  %out_0 = moecomm.pack %2, %handle combine stage 0 weighted : tensor<?x16xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat> -> tensor<?x16xbf16>
  %recv_1 = moecomm.exchange %out_0, %handle combine stage 0 scope<global> : tensor<?x16xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat>
  %3 = moecomm.unpack %recv_1, %handle combine weighted : tensor<?x16xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat> -> tensor<?x16xbf16>
  return %3 : tensor<?x16xbf16>
}
