// A topology's expert placement reaches the runtime's layout call
// (moecomm_compiled.h) as its slot count, the address of a private constant
// global of its slots' logical experts, and the replica choice (0 locality,
// 1 load_only); a topology without one passes 0, null, 0. Layouts with the
// same placement share one global; the globals are named after their
// contents and sorted after the runtime declarations (same graph, same
// module). Staged (after the split) and one-shot (DIRECT) layouts alike.
// RUN: moecomm-opt %s --moecomm-split-hierarchical=strategy=flat --convert-moecomm-to-runtime | FileCheck %s
// RUN: moecomm-opt %s --convert-moecomm-to-runtime | FileCheck %s
// RUN: moecomm-opt %s --moecomm-pipeline="strategy=hierarchical" | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVM

// CHECK: func.func private @moecomm_rt_layout_i32({{.*}}, i64, !llvm.ptr, i32) -> !llvm.ptr
// CHECK-NOT: func.func @
// CHECK: llvm.mlir.global private constant @[[P4:moecomm_placement_[0-9a-f]+]](dense<[0, 1, 2, 0]> : tensor<4xi64>) {addr_space = 0 : i32} : !llvm.array<4 x i64>
// CHECK-NEXT: llvm.mlir.global private constant @[[P6:moecomm_placement_[0-9a-f]+]](dense<[0, 1, 2, 3, 0, 1]> : tensor<6xi64>) {addr_space = 0 : i32} : !llvm.array<6 x i64>
// CHECK-NOT: llvm.mlir.global

// CHECK-LABEL: func.func @replicated
// CHECK: %[[S:.*]] = arith.constant 6 : i64
// CHECK-NEXT: %[[A:.*]] = llvm.mlir.addressof @[[P6]] : !llvm.ptr
// CHECK-NEXT: %[[C:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[L:.*]] = call @moecomm_rt_layout_i32({{.*}}, %[[S]], %[[A]], %[[C]])
// Per-slot results: [S/W + 1] offsets.
// CHECK: memref.alloc() {{.*}} : memref<4xi64>
// CHECK: call @moecomm_rt_expert_offsets(%[[L]],
func.func @replicated(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> (tensor<?x16xbf16>, tensor<4xi64>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 2, ranks_per_node = 1, experts = 4, slots = 6, placement = array<i64: 0, 1, 2, 3, 0, 1>> : tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %offs = moecomm.expert_offsets %h : !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4, slots = 6>
  %out = moecomm.combine %recv, %h weighted : tensor<?x16xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4, slots = 6> -> tensor<?x16xbf16>
  return %out, %offs : tensor<?x16xbf16>, tensor<4xi64>
}

// CHECK-LABEL: func.func @same_placement
// CHECK: llvm.mlir.addressof @[[P6]] : !llvm.ptr
func.func @same_placement(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x16xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 2, ranks_per_node = 1, experts = 4, slots = 6, placement = array<i64: 0, 1, 2, 3, 0, 1>> : tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  return %recv : tensor<?x16xbf16>
}

// CHECK-LABEL: func.func @load_only
// CHECK: %[[S:.*]] = arith.constant 4 : i64
// CHECK-NEXT: %[[A:.*]] = llvm.mlir.addressof @[[P4]] : !llvm.ptr
// CHECK-NEXT: %[[C:.*]] = arith.constant 1 : i32
// CHECK-NEXT: call @moecomm_rt_layout_i32({{.*}}, %[[S]], %[[A]], %[[C]])
func.func @load_only(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x16xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 2, ranks_per_node = 1, experts = 3, slots = 4, placement = array<i64: 0, 1, 2, 0>, replica_choice = load_only> : tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  return %recv : tensor<?x16xbf16>
}

// CHECK-LABEL: func.func @none
// CHECK: %[[A:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: %[[C:.*]] = arith.constant 0 : i32
// CHECK-NEXT: call @moecomm_rt_layout_i32({{.*}}, %[[A]], %[[C]])
func.func @none(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x16xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  return %recv : tensor<?x16xbf16>
}

// LLVM: @[[G4:moecomm_placement_[0-9a-f]+]] = private constant [4 x i64] [i64 0, i64 1, i64 2, i64 0]
// LLVM: @[[G6:moecomm_placement_[0-9a-f]+]] = private constant [6 x i64] [i64 0, i64 1, i64 2, i64 3, i64 0, i64 1]
// LLVM: define {{.*}} @replicated(
// LLVM: call ptr @moecomm_rt_layout_i32({{.*}}, i64 6, ptr @[[G6]], i32 0)
// LLVM: define {{.*}} @load_only(
// LLVM: call ptr @moecomm_rt_layout_i32({{.*}}, i64 4, ptr @[[G4]], i32 1)
// LLVM: define {{.*}} @none(
// LLVM: call ptr @moecomm_rt_layout_i32({{.*}}, i64 0, ptr null, i32 0)
