// moecomm-lower-token-permutes: the framework-level row moves become scf
// loops over tensors (permute_tokens a counting sort: histogram, exclusive
// prefix sum, scatter), their inputs checked at run time with
// moecomm_rt_check; a failed check skips what it guards.
// RUN: moecomm-opt %s -split-input-file --moecomm-lower-token-permutes | FileCheck %s
// Nothing of the four ops is left, and the result goes through the pipeline
// to the LLVM dialect on both targets.
// RUN: moecomm-opt %s -split-input-file --moecomm-lower-token-permutes | FileCheck %s --check-prefix=GONE
// RUN: moecomm-opt %s -split-input-file --moecomm-pipeline=ranks=4 | FileCheck %s --check-prefix=LLVM
// RUN: moecomm-opt %s -split-input-file --moecomm-pipeline="ranks=4 target=cuda" 2>/dev/null | FileCheck %s --check-prefix=LLVM

// GONE-NOT: = moecomm.
// LLVM-NOT: = moecomm.
// LLVM: llvm.func @moecomm_rt_check(i32, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64)
// LLVM-NOT: scf.for

// The checks' texts: where (the op's location), and what with the values'
// places.
// CHECK-DAG: llvm.mlir.global internal constant @[[P_WHERE:moecomm.permute_tokens_check]]("moecomm.permute_tokens at {{.*}}lower-token-permutes.mlir:{{[0-9]+}}:{{[0-9]+}}\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[SAME_T:moecomm.permute_tokens_check_[0-9]+]]("x and topk_idx must have the same tokens ({} and {})\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[RANGE:moecomm.permute_tokens_check_[0-9]+]]("topk_idx[t][k] must be in [-1, E) (t = {}, k = {}: id {}, E = {})\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[TWICE:moecomm.permute_tokens_check_[0-9]+]]("an expert id may appear once per token (t = {}, k = {}: id {} repeated)\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[U_WHERE:moecomm.unpermute_tokens_check]]("moecomm.unpermute_tokens at {{.*}}lower-token-permutes.mlir:{{[0-9]+}}:{{[0-9]+}}\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[W_T:moecomm.unpermute_tokens_check_[0-9]+]]("weights and slot_rows must have the same tokens ({} and {})\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[SLOT:moecomm.unpermute_tokens_check_[0-9]+]]("slot_rows[t][k] must be in [-1, R) (t = {}, k = {}: {}, R = {})\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[S_WHERE:moecomm.sort_chunks_check]]("moecomm.sort_chunks at {{.*}}lower-token-permutes.mlir:{{[0-9]+}}:{{[0-9]+}}\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[US_WHERE:moecomm.unsort_chunks_check]]("moecomm.unsort_chunks at {{.*}}lower-token-permutes.mlir:{{[0-9]+}}:{{[0-9]+}}\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[COUNT_T:moecomm.[a-z_]+_check_[0-9]+]]("counts[s][l] must be >= 0 and at most the rows of in not yet counted (s = {}, l = {}: {}, {} rows left)\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[SUM_T:moecomm.[a-z_]+_check_[0-9]+]]("counts must sum to the rows of in ({} counted, {} rows)\00")
// CHECK-DAG: func.func private @moecomm_rt_check(i32, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64)

// CHECK-LABEL: func.func @permute
// CHECK-SAME: (%[[X:.*]]: tensor<?x16xbf16>, %[[IDX:.*]]: tensor<?x4xi32>)
// CHECK-DAG: %[[P_W:.*]] = llvm.mlir.addressof @[[P_WHERE]] :
// CHECK-DAG: %[[RANGE_A:.*]] = llvm.mlir.addressof @[[RANGE]]
// CHECK-DAG: %[[TWICE_A:.*]] = llvm.mlir.addressof @[[TWICE]]
// CHECK-DAG: %[[SAME_A:.*]] = llvm.mlir.addressof @[[SAME_T]]
// CHECK-DAG: %[[ZEROS:.*]] = arith.constant dense<0> : tensor<8xi64>
// CHECK: %[[T:.*]] = tensor.dim %[[IDX]], %{{.*}} : tensor<?x4xi32>
// x and topk_idx may differ in tokens (both dynamic): checked once.
// CHECK: %[[SAME:.*]] = arith.cmpi eq, %{{.*}}, %[[T]] : index
// CHECK: call @moecomm_rt_check(%{{.*}}, %[[P_W]], %[[SAME_A]],
// 1. Histogram: every id checked (range, then once per token), the kept
// expert (or -1) recorded per slot.
// CHECK: %[[SLOTS0:.*]] = tensor.empty(%[[T]]) : tensor<?x4xi64>
// CHECK: %[[HIST:.*]]:2 = scf.for %[[TT:[a-z0-9_]+]] = %{{.*}} to %[[T]] step %{{.*}} iter_args(%{{.*}} = %[[ZEROS]], %{{.*}} = %[[SLOTS0]]) -> (tensor<8xi64>, tensor<?x4xi64>)
// CHECK:   scf.for %[[K:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[C:.*]] = %{{.*}}, %[[S:.*]] = %{{.*}}) -> (tensor<8xi64>, tensor<?x4xi64>)
// CHECK:     %[[E32:.*]] = tensor.extract %[[IDX]][%[[TT]], %[[K]]] : tensor<?x4xi32>
// CHECK:     %[[E:.*]] = arith.extsi %[[E32]] : i32 to i64
// CHECK:     func.call @moecomm_rt_check(%{{.*}}, %[[P_W]], %[[RANGE_A]], %{{.*}}, %{{.*}}, %[[E]], %{{.*}})
// CHECK:     scf.for %{{.*}} = %{{.*}} to %[[K]] step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (i1)
// CHECK:     func.call @moecomm_rt_check(%{{.*}}, %[[P_W]], %[[TWICE_A]], %{{.*}}, %{{.*}}, %[[E]], %{{.*}})
// CHECK:     %[[KEPT:.*]] = arith.andi %{{.*}}, %[[SAME]] : i1
// CHECK:     %[[EXPERT:.*]] = arith.select %[[KEPT]], %[[E]], %{{.*}} : i64
// CHECK:     tensor.insert %[[EXPERT]] into %[[S]][%[[TT]], %[[K]]] : tensor<?x4xi64>
// CHECK:     scf.if %[[KEPT]] -> (tensor<8xi64>)
// CHECK:       arith.addi
// CHECK:       tensor.insert %{{.*}} into %[[C]][%{{.*}}] : tensor<8xi64>
// 2. Exclusive prefix sum: each expert's first row, the rows in all.
// CHECK: %[[PREFIX:.*]]:2 = scf.for %{{.*}} -> (i64, tensor<8xi64>)
// CHECK: %[[ROWS:.*]] = arith.index_cast %[[PREFIX]]#0 : i64 to index
// CHECK: %[[OUT0:.*]] = tensor.empty(%[[ROWS]]) : tensor<?x16xbf16>
// 3. Scatter: a kept slot's token row to its expert's next row.
// CHECK: %[[SCATTER:.*]]:3 = scf.for %[[T3:[a-z0-9_]+]] = %{{.*}} to %[[T]] step %{{.*}} iter_args(%{{.*}} = %[[PREFIX]]#1, %{{.*}} = %[[OUT0]], %{{.*}} = %[[HIST]]#1)
// CHECK:   scf.for
// CHECK:     scf.if %{{.*}} -> (tensor<8xi64>, tensor<?x16xbf16>, tensor<?x4xi64>)
// CHECK:       %[[ROW:.*]] = tensor.extract_slice %[[X]][%[[T3]], 0] [%{{.*}}, 16] [1, 1]
// CHECK:       tensor.insert_slice %[[ROW]] into
// CHECK: return %[[SCATTER]]#1, %[[HIST]]#0, %[[SCATTER]]#2
func.func @permute(%x: tensor<?x16xbf16>, %idx: tensor<?x4xi32>) -> (tensor<?x16xbf16>, tensor<8xi64>, tensor<?x4xi64>) {
  %rows, %gs, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xbf16>, tensor<?x4xi32>
  return %rows, %gs, %slots : tensor<?x16xbf16>, tensor<8xi64>, tensor<?x4xi64>
}

// Per token: its slot rows checked, then per column the weighted sum of the
// kept slots in slot order, in f32 from +0.0, rounded once.
// CHECK-LABEL: func.func @unpermute
// CHECK-SAME: (%[[R:.*]]: tensor<?x16xbf16>, %[[SL:.*]]: tensor<?x4xi64>, %[[W:.*]]: tensor<?x4xf32>)
// CHECK-DAG: %[[U_W:.*]] = llvm.mlir.addressof @[[U_WHERE]] :
// CHECK-DAG: %[[SLOT_A:.*]] = llvm.mlir.addressof @[[SLOT]]
// CHECK-DAG: %[[WT_A:.*]] = llvm.mlir.addressof @[[W_T]]
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[WSAME:.*]] = arith.cmpi eq
// CHECK: call @moecomm_rt_check(%{{.*}}, %[[U_W]], %[[WT_A]],
// CHECK: scf.for %[[T:[a-z0-9_]+]] = {{.*}} -> (tensor<?x16xbf16>)
// CHECK:   scf.for %[[K:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:     %[[ROW:.*]] = tensor.extract %[[SL]][%[[T]], %[[K]]]
// CHECK:     func.call @moecomm_rt_check(%{{.*}}, %[[U_W]], %[[SLOT_A]], %{{.*}}, %{{.*}}, %[[ROW]], %{{.*}})
// CHECK:   scf.for %[[H:[a-z0-9_]+]] = {{.*}} -> (tensor<?x16xbf16>)
// CHECK:     %[[SUM:.*]] = scf.for %[[K2:[a-z0-9_]+]] = {{.*}} iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (f32)
// CHECK:       %[[KEPT:.*]] = arith.andi %{{.*}}, %[[WSAME]] : i1
// CHECK:       scf.if %[[KEPT]] -> (f32)
// CHECK:         %[[Y:.*]] = tensor.extract %[[R]][%{{.*}}, %[[H]]] : tensor<?x16xbf16>
// CHECK:         %[[YF:.*]] = arith.extf %[[Y]] : bf16 to f32
// CHECK:         %[[WK:.*]] = tensor.extract %[[W]][%[[T]], %[[K2]]] : tensor<?x4xf32>
// CHECK:         %[[P:.*]] = arith.mulf %[[WK]], %[[YF]] : f32
// CHECK:         arith.addf %[[ACC]], %[[P]] : f32
// CHECK:       } else {
// CHECK:         scf.yield %[[ACC]] : f32
// CHECK:     %[[B:.*]] = arith.truncf %[[SUM]] : f32 to bf16
// CHECK:     tensor.insert %[[B]] into %{{.*}}[%[[T]], %[[H]]] : tensor<?x16xbf16>
func.func @unpermute(%r: tensor<?x16xbf16>, %s: tensor<?x4xi64>, %w: tensor<?x4xf32>) -> tensor<?x16xbf16> {
  %o = moecomm.unpermute_tokens %r, %s weights(%w : tensor<?x4xf32>) : tensor<?x16xbf16>, tensor<?x4xi64>
  return %o : tensor<?x16xbf16>
}

// sort_chunks: counts checked source-major (each chunk's source-major
// offset and the per-expert sums recorded), their total against the rows;
// then chunk (s, l) copied local expert by local expert, source by source,
// or zero rows and sums when a count failed.
// CHECK-LABEL: func.func @sort
// CHECK-SAME: (%[[IN:.*]]: tensor<?x16xf32>, %[[CNT:.*]]: tensor<?x2xi64>)
// CHECK-DAG: %[[S_W:.*]] = llvm.mlir.addressof @[[S_WHERE]] :
// CHECK-DAG: %[[COUNT_A:.*]] = llvm.mlir.addressof @[[COUNT_T]]
// CHECK-DAG: %[[SUM_A:.*]] = llvm.mlir.addressof @[[SUM_T]]
// CHECK-DAG: %[[SUMS0:.*]] = arith.constant dense<0> : tensor<2xi64>
// CHECK: %[[W:.*]] = tensor.dim %[[CNT]], %{{.*}} : tensor<?x2xi64>
// CHECK: %[[COUNTED:.*]]:4 = scf.for %[[S:[a-z0-9_]+]] = %{{.*}} to %[[W]] {{.*}} -> (i64, i1, tensor<2xi64>, tensor<?x2xi64>)
// CHECK:   scf.for %[[L:[a-z0-9_]+]] = {{.*}} -> (i64, i1, tensor<2xi64>, tensor<?x2xi64>)
// CHECK:     %[[C:.*]] = tensor.extract %[[CNT]][%[[S]], %[[L]]]
// CHECK:     func.call @moecomm_rt_check(%{{.*}}, %[[S_W]], %[[COUNT_A]], %{{.*}}, %{{.*}}, %[[C]], %{{.*}})
// CHECK: call @moecomm_rt_check(%{{.*}}, %[[S_W]], %[[SUM_A]], %[[COUNTED]]#0, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK: scf.if %{{.*}} -> (tensor<?x16xf32>, tensor<2xi64>)
// CHECK:   scf.for %[[L2:[a-z0-9_]+]] = {{.*}} -> (i64, tensor<?x16xf32>)
// CHECK:     scf.for %[[S2:[a-z0-9_]+]] = %{{.*}} to %[[W]] {{.*}} -> (i64, tensor<?x16xf32>)
// CHECK:       %[[N:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK:       %[[FROM:.*]] = tensor.extract %[[COUNTED]]#3[%[[S2]], %[[L2]]]
// CHECK:       %[[FROMI:.*]] = arith.index_cast %[[FROM]] : i64 to index
// CHECK:       %[[TO:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK:       %[[CHUNK:.*]] = tensor.extract_slice %[[IN]][%[[FROMI]], 0] [%[[N]], 16] [1, 1]
// CHECK:       tensor.insert_slice %[[CHUNK]] into %{{.*}}[%[[TO]], 0] [%[[N]], 16] [1, 1]
// CHECK:   scf.yield %{{.*}}, %[[COUNTED]]#2 : tensor<?x16xf32>, tensor<2xi64>
// CHECK: } else {
// CHECK:   linalg.fill
// CHECK:   scf.yield %{{.*}}, %[[SUMS0]] : tensor<?x16xf32>, tensor<2xi64>
func.func @sort(%r: tensor<?x16xf32>, %c: tensor<?x2xi64>) -> (tensor<?x16xf32>, tensor<2xi64>) {
  %o, %t = moecomm.sort_chunks %r, %c : tensor<?x16xf32>, tensor<?x2xi64>
  return %o, %t : tensor<?x16xf32>, tensor<2xi64>
}

// unsort_chunks: the same checks; each chunk from the next expert-major row
// back to its source-major offset.
// CHECK-LABEL: func.func @unsort
// CHECK-SAME: (%[[IN:.*]]: tensor<6x16xbf16>, %[[CNT:.*]]: tensor<4x2xi64>)
// CHECK-DAG: %[[US_W:.*]] = llvm.mlir.addressof @[[US_WHERE]] :
// CHECK: %[[COUNTED:.*]]:4 = scf.for
// CHECK:     func.call @moecomm_rt_check(%{{.*}}, %[[US_W]],
// CHECK: call @moecomm_rt_check(%{{.*}}, %[[US_W]],
// CHECK: scf.if %{{.*}} -> (tensor<6x16xbf16>, tensor<2xi64>)
// CHECK:   scf.for %[[L2:[a-z0-9_]+]] = {{.*}} -> (i64, tensor<6x16xbf16>)
// CHECK:     scf.for %[[S2:[a-z0-9_]+]] = {{.*}} iter_args(%[[EM:.*]] = %{{.*}}, %{{.*}} = %{{.*}}) -> (i64, tensor<6x16xbf16>)
// CHECK:       %[[N:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK:       %[[TO:.*]] = tensor.extract %[[COUNTED]]#3[%[[S2]], %[[L2]]]
// CHECK:       %[[TOI:.*]] = arith.index_cast %[[TO]] : i64 to index
// CHECK:       %[[FROM:.*]] = arith.index_cast %[[EM]] : i64 to index
// CHECK:       %[[CHUNK:.*]] = tensor.extract_slice %[[IN]][%[[FROM]], 0] [%[[N]], 16] [1, 1]
// CHECK:       tensor.insert_slice %[[CHUNK]] into %{{.*}}[%[[TOI]], 0] [%[[N]], 16] [1, 1]
func.func @unsort(%y: tensor<6x16xbf16>, %c: tensor<4x2xi64>) -> tensor<6x16xbf16> {
  %o = moecomm.unsort_chunks %y, %c : tensor<6x16xbf16>, tensor<4x2xi64>
  return %o : tensor<6x16xbf16>
}

// -----

// Static tokens: nothing to compare, no check of them.
// CHECK: // -----
// CHECK-NOT: must have the same tokens
// CHECK-LABEL: func.func @permute_static
// CHECK: return
func.func @permute_static(%x: tensor<3x8xf32>, %idx: tensor<3x2xi64>) -> (tensor<?x8xf32>, tensor<4xi64>, tensor<3x2xi64>) {
  %rows, %gs, %slots = moecomm.permute_tokens %x, %idx experts(4) : tensor<3x8xf32>, tensor<3x2xi64>
  return %rows, %gs, %slots : tensor<?x8xf32>, tensor<4xi64>, tensor<3x2xi64>
}

// Without weights, f32 rows: the plain sum, no conversions.
// CHECK-LABEL: func.func @unpermute_plain
// CHECK-NOT: arith.mulf
// CHECK-NOT: arith.truncf
// CHECK: arith.addf
// CHECK: return
func.func @unpermute_plain(%r: tensor<?x8xf32>, %s: tensor<3x2xi64>) -> tensor<3x8xf32> {
  %o = moecomm.unpermute_tokens %r, %s : tensor<?x8xf32>, tensor<3x2xi64>
  return %o : tensor<3x8xf32>
}

// -----

// With weights (a backward exchange's rows): their tokens checked against
// topk_idx's and part of "kept"; each copy is the row times its slot's
// weight, in f32, rounded once.
// CHECK-DAG: llvm.mlir.global internal constant @[[PW_T:moecomm.permute_tokens_check_[0-9]+]]("weights and topk_idx must have the same tokens ({} and {})\00")
// CHECK-LABEL: func.func @permute_weighted
// CHECK-SAME: (%[[X:.*]]: tensor<?x16xbf16>, %[[IDX:.*]]: tensor<?x4xi32>, %[[W:.*]]: tensor<?x4xf32>)
// CHECK-DAG: %[[PW_A:.*]] = llvm.mlir.addressof @[[PW_T]]
// CHECK: %[[T:.*]] = tensor.dim %[[IDX]], %{{.*}} : tensor<?x4xi32>
// CHECK: %[[XSAME:.*]] = arith.cmpi eq, %{{.*}}, %[[T]] : index
// CHECK: %[[WT:.*]] = tensor.dim %[[W]], %{{.*}} : tensor<?x4xf32>
// CHECK: %[[WSAME:.*]] = arith.cmpi eq, %[[WT]], %[[T]] : index
// CHECK: call @moecomm_rt_check(%{{.*}}, %{{.*}}, %[[PW_A]],
// CHECK: %[[BOTH:.*]] = arith.andi %[[XSAME]], %[[WSAME]] : i1
// CHECK: scf.for
// CHECK:     arith.andi %{{.*}}, %[[BOTH]] : i1
// CHECK: scf.for %[[T3:[a-z0-9_]+]] = %{{.*}} to %[[T]] step
// CHECK:   scf.for %[[K3:[a-z0-9_]+]] =
// CHECK:     scf.if %{{.*}} -> (tensor<8xi64>, tensor<?x16xbf16>, tensor<?x4xi64>)
// CHECK:       %[[ROW:.*]] = tensor.extract_slice %[[X]][%[[T3]], 0] [%{{.*}}, 16] [1, 1]
// CHECK:       %[[WK:.*]] = tensor.extract %[[W]][%[[T3]], %[[K3]]] : tensor<?x4xf32>
// CHECK:       %[[WV:.*]] = tensor.from_elements %[[WK]] : tensor<1xf32>
// CHECK:       %[[SCALED:.*]] = linalg.generic {{.*}} ins(%[[ROW]], %[[WV]] : tensor<?x16xbf16>, tensor<1xf32>)
// CHECK:         arith.extf %{{.*}} : bf16 to f32
// CHECK:         arith.mulf
// CHECK:         arith.truncf %{{.*}} : f32 to bf16
// CHECK:       tensor.insert_slice %[[SCALED]] into
func.func @permute_weighted(%x: tensor<?x16xbf16>, %idx: tensor<?x4xi32>, %w: tensor<?x4xf32>) -> (tensor<?x16xbf16>, tensor<8xi64>, tensor<?x4xi64>) {
  %rows, %gs, %slots = moecomm.permute_tokens %x, %idx weights(%w : tensor<?x4xf32>) experts(8) : tensor<?x16xbf16>, tensor<?x4xi32>
  return %rows, %gs, %slots : tensor<?x16xbf16>, tensor<8xi64>, tensor<?x4xi64>
}
