// RUN: moecomm-opt %s -split-input-file --moecomm-split-hierarchical=strategy=hierarchical --moecomm-fuse-quant --moecomm-fuse-permute --convert-moecomm-to-runtime | FileCheck %s
// RUN: moecomm-opt %s -split-input-file --convert-moecomm-to-runtime | FileCheck %s --check-prefix=DIRECT
// Runtime declarations are sorted by name at the top of the module, whatever
// order one-shot bufferization visits the functions in (same graph, same
// module); the fourth case declares the most.
// RUN: moecomm-opt %s -split-input-file --convert-moecomm-to-runtime | FileCheck %s --check-prefix=DECLS
// DECLS-LABEL: func.func private @moecomm_rt_all_to_all_bf16_i64(
// DECLS-NEXT: func.func private @moecomm_rt_all_to_all_counts_i64(
// DECLS-NEXT: func.func private @moecomm_rt_combine_bf16(
// DECLS-NEXT: func.func private @moecomm_rt_dispatch_bf16(
// DECLS-NEXT: func.func private @moecomm_rt_layout_i32(
// DECLS-NEXT: func.func private @moecomm_rt_layout_release(
// DECLS-NEXT: func.func private @moecomm_rt_rows(

// Staged FP8 layer: every op is a runtime call on fresh buffers sized by the
// layout; the layout is released after its last use.
// Declarations come first; memref arguments use the C interface.
// CHECK: func.func private @moecomm_rt_gather_f8_bf16(!llvm.ptr, i32, i64, i32, memref<?x?xf8E4M3FN, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @layer
// CHECK-SAME: (%[[X:.*]]: memref<?x300xbf16>, %[[I:.*]]: memref<?x3xi32>, %[[W:.*]]: memref<?x3xf32>) -> memref<?x300xbf16>
// CHECK: %[[L:.*]] = call @moecomm_rt_layout_i32({{.*}}) : (memref<?x?xi32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, i64, i64, i64, i32, i64, i64, i32, i64, i64, !llvm.ptr, i32) -> !llvm.ptr
// CHECK: %[[N0:.*]] = call @moecomm_rt_rows(%[[L]], %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, i32, i64, i32) -> i64
// CHECK: call @moecomm_rt_gather_bf16_f8(%[[L]],
// CHECK: call @moecomm_rt_exchange_f8(%[[L]],
// CHECK: call @moecomm_rt_gather_f8_f8(%[[L]],
// CHECK: call @moecomm_rt_exchange_f8(%[[L]],
// CHECK: call @moecomm_rt_gather_f8_bf16(%[[L]],
// CHECK: call @moecomm_rt_gather_bf16_bf16(%[[L]],
// CHECK: call @moecomm_rt_exchange_bf16(%[[L]],
// CHECK: call @moecomm_rt_gather_bf16_bf16(%[[L]],
// CHECK: call @moecomm_rt_exchange_bf16(%[[L]],
// CHECK: call @moecomm_rt_gather_bf16_bf16(%[[L]],
// CHECK-NEXT: memref.dealloc
// CHECK-NEXT: call @moecomm_rt_layout_release(%[[L]])
// CHECK-NOT: moecomm.{{[a-z]}}
// CHECK: return
func.func @layer(%x: tensor<?x300xbf16>, %idx: tensor<?x3xi32>, %w: tensor<?x3xf32>) -> tensor<?x300xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> wire<fp8_e4m3> : tensor<?x300xbf16>, tensor<?x3xi32>, tensor<?x3xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x300xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x300xbf16>
  return %out : tensor<?x300xbf16>
}

// -----

// A handle that leaves its function is a pointer owned by the receiver: the
// caller releases it after its last use (lending it to @backward is a use);
// a function never releases a handle it receives as an argument. Buffers a
// call returns are the caller's to free, after their last use.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: -> (memref<?x64xf32>, !llvm.ptr)
// CHECK-NOT: moecomm_rt_layout_release
// CHECK: return %{{.*}}, %{{.*}} : memref<?x64xf32>, !llvm.ptr
// CHECK-LABEL: func.func @backward
// CHECK-SAME: %{{.*}}: !llvm.ptr
// CHECK: call @moecomm_rt_gather_f32_f32
// CHECK-NOT: moecomm_rt_layout_release
// CHECK: return
// CHECK-LABEL: func.func @step
// CHECK: %[[F:.*]]:2 = call @forward
// CHECK: call @backward(%[[F]]#0, %[[F]]#1)
// CHECK-NEXT: memref.dealloc %[[F]]#0
// CHECK-NEXT: call @moecomm_rt_layout_release(%[[F]]#1)
func.func @forward(%x: tensor<?x64xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> (tensor<?x64xf32>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x64xf32>, tensor<?x2xi64>, tensor<?x2xf32>
  return %recv, %h : tensor<?x64xf32>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>
}
func.func @backward(%dy: tensor<?x64xf32>, %h: !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>) -> tensor<?x64xf32> {
  %dx = moecomm.combine %dy, %h : tensor<?x64xf32>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4> -> tensor<?x64xf32>
  return %dx : tensor<?x64xf32>
}
func.func @step(%x: tensor<?x64xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x64xf32> {
  %r:2 = call @forward(%x, %idx, %w) : (tensor<?x64xf32>, tensor<?x2xi64>, tensor<?x2xf32>) -> (tensor<?x64xf32>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>)
  %dx = call @backward(%r#0, %r#1) : (tensor<?x64xf32>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>) -> tensor<?x64xf32>
  return %dx : tensor<?x64xf32>
}

// -----

// A call that returns its handle argument unchanged hands nothing over: the
// caller releases its layout once, after the last use of either pointer.
// CHECK-LABEL: func.func @passthrough_caller
// CHECK: %[[L:.*]] = call @moecomm_rt_layout_i64(
// CHECK: %[[P:.*]] = call @pass(%[[L]])
// CHECK-NOT: moecomm_rt_layout_release
// CHECK: call @moecomm_rt_exchange_f32(%[[P]],
// CHECK-NOT: moecomm_rt_layout_release
// CHECK: call @moecomm_rt_gather_f32_f32(%[[P]],
// CHECK-NOT: moecomm_rt_layout_release
// CHECK: call @moecomm_rt_layout_release(%[[L]])
// CHECK-NOT: moecomm_rt_layout_release
// CHECK: return
func.func private @pass(%h: !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>) -> !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4> {
  return %h : !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>
}
func.func @passthrough_caller(%x: tensor<?x64xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x64xf32> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x64xf32>, tensor<?x2xi64>, tensor<?x2xf32>
  %h2 = call @pass(%h) : (!moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>) -> !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>
  %out = moecomm.combine %recv, %h2 weighted : tensor<?x64xf32>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4> -> tensor<?x64xf32>
  return %out : tensor<?x64xf32>
}

// -----

// Without the split, collectives lower to the runtime's one-shot calls (its
// `auto` picks the strategy per call); all_to_all learns its counts first.
// DIRECT-LABEL: func.func @direct
// DIRECT: %[[AUTO:.*]] = arith.constant 3 : i32
// DIRECT: %[[H:.*]] = arith.constant 64 : i64
// DIRECT: %[[L:.*]] = call @moecomm_rt_layout_i32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[AUTO]], %{{.*}}, %[[H]], %{{.*}})
// DIRECT: call @moecomm_rt_dispatch_bf16(%[[L]],
// DIRECT: call @moecomm_rt_dispatch_bf16(%[[L]],
// DIRECT: call @moecomm_rt_combine_bf16(%[[L]],
// DIRECT: call @moecomm_rt_layout_release(%[[L]])
// DIRECT: %[[TOTAL:.*]] = call @moecomm_rt_all_to_all_counts_i64(
// DIRECT: %[[ROWS:.*]] = arith.index_cast %[[TOTAL]] : i64 to index
// DIRECT: memref.alloc(%[[ROWS]]) {{.*}} : memref<?x64xbf16>
// DIRECT: call @moecomm_rt_all_to_all_bf16_i64(
func.func @direct(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>, %counts: tensor<2xi64>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 2, ranks_per_node = 2, experts = 4> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %again = moecomm.cached_dispatch %x, %h : tensor<?x64xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 2, experts = 4>
  %out = moecomm.combine %again, %h weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 2, experts = 4> -> tensor<?x64xbf16>
  %a, %ac = moecomm.all_to_all %x, %counts topology<ranks = 2, ranks_per_node = 2> : tensor<?x64xbf16>, tensor<2xi64>
  return %out, %a : tensor<?x64xbf16>, tensor<?x64xbf16>
}

// -----

// Asynchronous exchanges: the start returns the request, the wait completes
// the buffers in place; the send buffer lives until the wait, the receive
// buffer until its last reader, the returned buffer is not freed.
// CHECK-LABEL: func.func @async
// CHECK: %[[SEND:.*]] = memref.alloc({{.*}} : memref<?x8xbf16>
// CHECK: %[[RECV:.*]] = memref.alloc({{.*}} : memref<?x8xbf16>
// CHECK: %[[REQ:.*]] = call @moecomm_rt_exchange_start_bf16(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : {{.*}} -> !llvm.ptr
// CHECK-NEXT: call @moecomm_rt_wait(%[[REQ]]) : (!llvm.ptr) -> ()
// CHECK-NEXT: memref.dealloc %[[SEND]]
// CHECK: %[[OUT:.*]] = memref.alloc({{.*}} : memref<?x8xbf16>
// CHECK: call @moecomm_rt_gather_bf16_bf16
// CHECK-NEXT: memref.dealloc %[[RECV]]
// CHECK-NOT: memref.dealloc %[[OUT]]
// CHECK: return %[[OUT]]
func.func @async(%x: tensor<?x8xbf16>, %idx: tensor<?x1xi32>, %w: tensor<?x1xf32>) -> tensor<?x8xbf16> {
  %h, %rw, %tpe = moecomm.layout %idx, %w topology<ranks = 2, ranks_per_node = 2, experts = 2> strategy<flat> : tensor<?x1xi32>, tensor<?x1xf32>
  %p = moecomm.pack %x, %h dispatch stage 0 : tensor<?x8xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 2, experts = 2, strategy = flat> -> tensor<?x8xbf16>
  %req, %r = moecomm.exchange_start %p, %h dispatch stage 0 scope<global> : tensor<?x8xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 2, experts = 2, strategy = flat>
  %o = moecomm.exchange_wait %req, %r : tensor<?x8xbf16>
  %u = moecomm.unpack %o, %h dispatch : tensor<?x8xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 2, experts = 2, strategy = flat> -> tensor<?x8xbf16>
  return %u : tensor<?x8xbf16>
}

// -----

// Chunk outputs reassembled by a chain of insert_slice into a tensor.empty
// (moecomm-schedule-overlap) fill one buffer in place, a copy where each
// insert was.
// DIRECT-LABEL: func.func @assemble
// DIRECT-SAME: (%[[A:.*]]: memref<?x8xf32>, %[[B:.*]]: memref<?x8xf32>, %[[N:.*]]: index, %[[M:.*]]: index)
// DIRECT-NEXT: %[[OUT:.*]] = memref.alloc(%[[N]])
// DIRECT-NEXT: %[[S0:.*]] = memref.subview %[[OUT]][0, 0] [%[[M]], 8] [1, 1]
// DIRECT-NEXT: linalg.copy ins(%[[A]] : {{.*}}) outs(%[[S0]] :
// DIRECT-NEXT: %[[K:.*]] = arith.subi %[[N]], %[[M]]
// DIRECT-NEXT: %[[S1:.*]] = memref.subview %[[OUT]][%[[M]], 0] [%[[K]], 8] [1, 1]
// DIRECT-NEXT: linalg.copy ins(%[[B]] : {{.*}}) outs(%[[S1]] :
// DIRECT-NEXT: return %[[OUT]]
func.func @assemble(%a: tensor<?x8xf32>, %b: tensor<?x8xf32>, %n: index, %m: index) -> tensor<?x8xf32> {
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %0 = tensor.insert_slice %a into %e[0, 0] [%m, 8] [1, 1] : tensor<?x8xf32> into tensor<?x8xf32>
  %k = arith.subi %n, %m : index
  %1 = tensor.insert_slice %b into %0[%m, 0] [%k, 8] [1, 1] : tensor<?x8xf32> into tensor<?x8xf32>
  return %1 : tensor<?x8xf32>
}

// -----

// An intermediate result used elsewhere ends the chain: the next insert
// writes a copy.
// DIRECT-LABEL: func.func @partial_read
// DIRECT: %[[FIRST:.*]] = memref.alloc
// DIRECT: linalg.copy ins(%{{.*}} : {{.*}}) outs(%{{.*}} :
// DIRECT: %[[SECOND:.*]] = memref.alloc
// DIRECT-NEXT: linalg.copy ins(%[[FIRST]] : {{.*}}) outs(%[[SECOND]] :
// DIRECT-NEXT: %[[S1:.*]] = memref.subview %[[SECOND]]
// DIRECT-NEXT: linalg.copy ins(%{{.*}} : {{.*}}) outs(%[[S1]] :
// DIRECT-NEXT: return %[[FIRST]], %[[SECOND]]
func.func @partial_read(%a: tensor<?x8xf32>, %b: tensor<?x8xf32>, %n: index, %m: index) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %0 = tensor.insert_slice %a into %e[0, 0] [%m, 8] [1, 1] : tensor<?x8xf32> into tensor<?x8xf32>
  %k = arith.subi %n, %m : index
  %1 = tensor.insert_slice %b into %0[%m, 0] [%k, 8] [1, 1] : tensor<?x8xf32> into tensor<?x8xf32>
  return %0, %1 : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// align follows wire in the layout call's arguments (1 without it, above),
// before the expert placement's; the
// segment offsets are a local query of the same layout, into a fresh
// [E/W + 1] buffer.
// CHECK-LABEL: func.func @aligned
// CHECK: %[[A:.*]] = arith.constant 256 : i64
// CHECK: %[[L:.*]] = call @moecomm_rt_layout_i64({{.*}}, %[[A]], %{{.*}}, %{{.*}}, %{{.*}}) :
// CHECK: %[[O:.*]] = memref.alloc() {{.*}} : memref<3xi64>
// CHECK: %[[OC:.*]] = memref.cast %[[O]] : memref<3xi64> to memref<?xi64, strided<[?], offset: ?>>
// CHECK: call @moecomm_rt_expert_offsets(%[[L]], %[[OC]]) : (!llvm.ptr, memref<?xi64, strided<[?], offset: ?>>) -> ()
// CHECK: return %{{.*}}, %[[O]] : memref<?x64xbf16>, memref<3xi64>
// DIRECT-LABEL: func.func @aligned
// DIRECT: %[[A:.*]] = arith.constant 256 : i64
// DIRECT: %[[L:.*]] = call @moecomm_rt_layout_i64({{.*}}, %[[A]], %{{.*}}, %{{.*}}, %{{.*}}) :
// DIRECT: call @moecomm_rt_dispatch_bf16(%[[L]],
// DIRECT: call @moecomm_rt_expert_offsets(%[[L]], %{{.*}})
func.func @aligned(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> (tensor<?x64xbf16>, tensor<3xi64>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> align(256) : tensor<?x64xbf16>, tensor<?x2xi64>, tensor<?x2xf32>
  %offs = moecomm.expert_offsets %h : !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8>
  %out = moecomm.combine %recv, %h weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x64xbf16>
  return %out, %offs : tensor<?x64xbf16>, tensor<3xi64>
}

// -----

// The E8M0 wires: staged, every FP8 call names the format (mxfp8 here) and
// its scales are f8E8M0FNU buffers; the layout's wire hint is the runtime's
// data type (moecommMxfp8 = 6). Without the split, the one-shot dispatch
// passes the runtime's data type too.
// CHECK-LABEL: func.func @e8m0_layer
// CHECK-DAG: %[[MX:.*]] = arith.constant 6 : i32
// CHECK: %[[L:.*]] = call @moecomm_rt_layout_i32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[MX]], %{{.*}})
// CHECK: call @moecomm_rt_gather_bf16_mxfp8(%[[L]], {{.*}} : (!llvm.ptr, i32, i64, i32, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xf8E4M3FN, strided<[?, ?], offset: ?>>, memref<?x?xf8E8M0FNU, strided<[?, ?], offset: ?>>) -> ()
// CHECK: call @moecomm_rt_exchange_mxfp8(%[[L]],
// CHECK: call @moecomm_rt_gather_mxfp8_mxfp8(%[[L]],
// CHECK: call @moecomm_rt_exchange_mxfp8(%[[L]],
// CHECK: call @moecomm_rt_gather_mxfp8_bf16(%[[L]],
// DIRECT-LABEL: func.func @e8m0_layer
// DIRECT: %[[L:.*]] = call @moecomm_rt_layout_i32(
// DIRECT: %[[MX:.*]] = arith.constant 6 : i32
// DIRECT: call @moecomm_rt_dispatch_bf16(%[[L]], %[[MX]],
func.func @e8m0_layer(%x: tensor<?x300xbf16>, %idx: tensor<?x3xi32>, %w: tensor<?x3xf32>) -> tensor<?x300xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> wire<mxfp8> : tensor<?x300xbf16>, tensor<?x3xi32>, tensor<?x3xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x300xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x300xbf16>
  return %out : tensor<?x300xbf16>
}

// -----

// A cached dispatch with the fp8_e4m3_ue8m0 wire (moecommFloat8E4M3UE8M0 =
// 5 for the one-shot call).
// CHECK-LABEL: func.func @e8m0_cached
// CHECK: call @moecomm_rt_gather_bf16_ue8m0(
// CHECK: call @moecomm_rt_exchange_ue8m0(
// CHECK: call @moecomm_rt_gather_ue8m0_bf16(
// DIRECT-LABEL: func.func @e8m0_cached
// DIRECT: %[[UE:.*]] = arith.constant 5 : i32
// DIRECT: call @moecomm_rt_dispatch_bf16(%{{.*}}, %[[UE]],
func.func @e8m0_cached(%x: tensor<?x300xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) -> tensor<?x300xbf16> {
  %recv = moecomm.cached_dispatch %x, %h wire<fp8_e4m3_ue8m0> : tensor<?x300xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>
  return %recv : tensor<?x300xbf16>
}

// -----

// A consumer's quantize and a dequantize in an E8M0 format: conversions
// named quantize_<T>_<format> / dequantize_<T>_<format>.
// DIRECT-LABEL: func.func @e8m0_convert
// DIRECT: call @moecomm_rt_quantize_f32_ue8m0({{.*}}) : (memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf8E4M3FN, strided<[?, ?], offset: ?>>, memref<?x?xf8E8M0FNU, strided<[?, ?], offset: ?>>) -> ()
// DIRECT: call @moecomm_rt_dequantize_bf16_mxfp8(
func.func @e8m0_convert(%x: tensor<?x20xf32>, %q: tensor<?x40xf8E4M3FN>, %s: tensor<?x2xf8E8M0FNU>) -> (tensor<?x20xf8E4M3FN>, tensor<?x1xf8E8M0FNU>, tensor<?x40xbf16>) {
  %q0, %s0 = moecomm.quantize %x wire<fp8_e4m3_ue8m0> : tensor<?x20xf32>
  %d = moecomm.dequantize %q, %s wire<mxfp8> : tensor<?x40xf8E4M3FN>, tensor<?x2xf8E8M0FNU> -> tensor<?x40xbf16>
  return %q0, %s0, %d : tensor<?x20xf8E4M3FN>, tensor<?x1xf8E8M0FNU>, tensor<?x40xbf16>
}
