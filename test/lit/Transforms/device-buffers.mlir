// moecomm-device-buffers (the cuda target's buffers) on runtime-level IR:
// allocations become moecomm_rt_alloc(bytes, device) viewed as the buffer,
// deallocations moecomm_rt_free of the aligned address, copies and zero
// fills that touch device memory the runtime's stream-ordered calls. The
// per-expert metadata the runtime writes (and its copies) and index / i1
// bookkeeping stay on the host (device = 0); constants device work reads
// are copied to the device.
// RUN: moecomm-opt %s --moecomm-device-buffers 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=WARN < %t.err

// The declarations the pass adds: C interface for memref operands and
// results, sorted by name.
// CHECK-DAG: func.func private @moecomm_rt_alloc(i64, i32) -> memref<?xi8> attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @moecomm_rt_copy_bf16(memref<*xbf16>, memref<*xbf16>) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @moecomm_rt_fill_zero_f32(memref<*xf32>) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @moecomm_rt_free(!llvm.ptr)
// CHECK-NOT: memref.alloc(
// CHECK-NOT: memref.dealloc

func.func private @moecomm_rt_tokens_per_expert(!llvm.ptr, memref<?xi64, strided<[?], offset: ?>>) attributes {llvm.emit_c_interface}
func.func private @moecomm_rt_gather_bf16_bf16(!llvm.ptr, i32, i64, i32, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>) attributes {llvm.emit_c_interface}

// Rows: a dynamic allocation of R x 64 bf16 = R * 128 bytes on the device,
// freed by address.
// CHECK-LABEL: func.func @rows(
// CHECK-SAME: %[[L:.*]]: !llvm.ptr, %[[X:.*]]: memref<?x64xbf16>, %[[R:.*]]: index)
// CHECK: %[[C128:.*]] = arith.constant 128 : index
// CHECK: %[[BYTES:.*]] = arith.muli %[[C128]], %[[R]] : index
// CHECK: %[[B64:.*]] = arith.index_cast %[[BYTES]] : index to i64
// CHECK: %[[DEV:.*]] = arith.constant 1 : i32
// CHECK: %[[RAW:.*]] = call @moecomm_rt_alloc(%[[B64]], %[[DEV]]) : (i64, i32) -> memref<?xi8>
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[BUF:.*]] = memref.view %[[RAW]][%[[C0]]][%[[R]]] : memref<?xi8> to memref<?x64xbf16>
// CHECK: call @moecomm_rt_gather_bf16_bf16
// CHECK: %[[ADDR:.*]] = memref.extract_aligned_pointer_as_index %[[BUF]] : memref<?x64xbf16> -> index
// CHECK: %[[A64:.*]] = arith.index_cast %[[ADDR]] : index to i64
// CHECK: %[[PTR:.*]] = llvm.inttoptr %[[A64]] : i64 to !llvm.ptr
// CHECK: call @moecomm_rt_free(%[[PTR]]) : (!llvm.ptr) -> ()
func.func @rows(%layout: !llvm.ptr, %x: memref<?x64xbf16>, %r: index) {
  %buf = memref.alloc(%r) : memref<?x64xbf16>
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 0 : i64
  %in = memref.cast %x : memref<?x64xbf16> to memref<?x?xbf16, strided<[?, ?], offset: ?>>
  %out = memref.cast %buf : memref<?x64xbf16> to memref<?x?xbf16, strided<[?, ?], offset: ?>>
  call @moecomm_rt_gather_bf16_bf16(%layout, %c0, %c1, %c0, %in, %out) : (!llvm.ptr, i32, i64, i32, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>) -> ()
  memref.dealloc %buf : memref<?x64xbf16>
  return
}

// tokens_per_expert (4 x i64 = 32 bytes) and a copy of it stay on the host,
// read by host code; the copy between host buffers stays a linalg.copy.
// CHECK-LABEL: func.func @metadata(
// CHECK: %[[C32:.*]] = arith.constant 32 : index
// CHECK: %[[B32:.*]] = arith.index_cast %[[C32]] : index to i64
// CHECK: %[[HOST:.*]] = arith.constant 0 : i32
// CHECK: call @moecomm_rt_alloc(%[[B32]], %[[HOST]])
// CHECK: call @moecomm_rt_tokens_per_expert
// CHECK: %[[HOST2:.*]] = arith.constant 0 : i32
// CHECK: call @moecomm_rt_alloc(%{{.*}}, %[[HOST2]])
// CHECK: linalg.copy
// CHECK: memref.load
func.func @metadata(%layout: !llvm.ptr, %e: index) -> i64 {
  %counts = memref.alloc() : memref<4xi64>
  %cast = memref.cast %counts : memref<4xi64> to memref<?xi64, strided<[?], offset: ?>>
  call @moecomm_rt_tokens_per_expert(%layout, %cast) : (!llvm.ptr, memref<?xi64, strided<[?], offset: ?>>) -> ()
  %copy = memref.alloc() : memref<4xi64>
  linalg.copy ins(%counts : memref<4xi64>) outs(%copy : memref<4xi64>)
  %v = memref.load %copy[%e] : memref<4xi64>
  memref.dealloc %counts : memref<4xi64>
  memref.dealloc %copy : memref<4xi64>
  return %v : i64
}

// Bookkeeping of index elements stays on the host, whoever reads it.
// CHECK-LABEL: func.func @bookkeeping(
// CHECK: %[[HOST:.*]] = arith.constant 0 : i32
// CHECK: call @moecomm_rt_alloc(%{{.*}}, %[[HOST]])
// CHECK: memref.store
func.func @bookkeeping(%n: index, %v: index) {
  %b = memref.alloc(%n) : memref<?xindex>
  %c0 = arith.constant 0 : index
  memref.store %v, %b[%c0] : memref<?xindex>
  memref.dealloc %b : memref<?xindex>
  return
}

// A copy into a subview of device rows (a chunk's output) and a zero fill
// (an expert GEMM's accumulator) become runtime calls on unranked operands.
// CHECK-LABEL: func.func @copy_and_fill(
// CHECK-SAME: %[[SRC:.*]]: memref<?x64xbf16>, %[[DST:.*]]: memref<?x64xbf16, strided<[64, 1], offset: ?>>, %[[ACC:.*]]: memref<?x32xf32>)
// CHECK: %[[US:.*]] = memref.cast %[[SRC]] : memref<?x64xbf16> to memref<*xbf16>
// CHECK: %[[UD:.*]] = memref.cast %[[DST]] : memref<?x64xbf16, strided<[64, 1], offset: ?>> to memref<*xbf16>
// CHECK: call @moecomm_rt_copy_bf16(%[[US]], %[[UD]])
// CHECK: %[[UA:.*]] = memref.cast %[[ACC]] : memref<?x32xf32> to memref<*xf32>
// CHECK: call @moecomm_rt_fill_zero_f32(%[[UA]])
// CHECK-NOT: linalg.
// CHECK: return
func.func @copy_and_fill(%src: memref<?x64xbf16>, %dst: memref<?x64xbf16, strided<[64, 1], offset: ?>>, %acc: memref<?x32xf32>) {
  memref.copy %src, %dst : memref<?x64xbf16> to memref<?x64xbf16, strided<[64, 1], offset: ?>>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%acc : memref<?x32xf32>)
  return
}

// A fill that is not all zero bits (-0.0) and elementwise compute on device
// buffers stay host code, with one warning per function naming the first.
// WARN: device-buffers.mlir:[[@LINE+7]]:3: warning: target=cuda: @host_compute runs 'linalg.fill' and 2 more op(s) on the host over device buffers: this works on the host device (CPU tests) but not on a GPU, where compute on device buffers must be stream work (docs/pipeline.md, "The cuda target")
// WARN-NOT: warning
// CHECK-LABEL: func.func @host_compute(
// CHECK: linalg.fill
// CHECK: memref.load
func.func @host_compute(%acc: memref<?x32xf32>, %i: index) -> f32 {
  %nzero = arith.constant -0.0 : f32
  linalg.fill ins(%nzero : f32) outs(%acc : memref<?x32xf32>)
  %v = memref.load %acc[%i, %i] : memref<?x32xf32>
  %two = arith.addf %v, %v : f32
  memref.store %two, %acc[%i, %i] : memref<?x32xf32>
  return %v : f32
}

// A constant the device's GEMM reads is copied into a device buffer after
// get_global and freed after its last use; one only loaded on the host
// stays as it is.
memref.global "private" constant @eye : memref<2x2xf32> = dense<[[1.0, 0.0], [0.0, 1.0]]>
memref.global "private" constant @bounds : memref<2xi64> = dense<[3, 5]>
// CHECK-LABEL: func.func @constants(
// CHECK-SAME: %[[A:.*]]: memref<?x2xf32>, %[[C:.*]]: memref<?x2xf32>)
// CHECK: %[[G:.*]] = memref.get_global @eye : memref<2x2xf32>
// CHECK: %[[RAW:.*]] = call @moecomm_rt_alloc(%{{.*}}, %c1_i32{{[_0-9]*}})
// CHECK: %[[DEV:.*]] = memref.view %[[RAW]]
// CHECK: %[[UG:.*]] = memref.cast %[[G]] : memref<2x2xf32> to memref<*xf32>
// CHECK: %[[UD:.*]] = memref.cast %[[DEV]] : memref<2x2xf32> to memref<*xf32>
// CHECK: call @moecomm_rt_copy_f32(%[[UG]], %[[UD]])
// CHECK: linalg.matmul ins(%[[A]], %[[DEV]] : memref<?x2xf32>, memref<2x2xf32>) outs(%[[C]] : memref<?x2xf32>)
// CHECK-NEXT: memref.extract_aligned_pointer_as_index %[[DEV]]
// CHECK: call @moecomm_rt_free(
// CHECK-NEXT: %[[B:.*]] = memref.get_global @bounds : memref<2xi64>
// CHECK: memref.load %[[B]]
func.func @constants(%a: memref<?x2xf32>, %c: memref<?x2xf32>) -> i64 {
  %eye = memref.get_global @eye : memref<2x2xf32>
  linalg.matmul ins(%a, %eye : memref<?x2xf32>, memref<2x2xf32>) outs(%c : memref<?x2xf32>)
  %bounds = memref.get_global @bounds : memref<2xi64>
  %i = arith.constant 1 : index
  %v = memref.load %bounds[%i] : memref<2xi64>
  return %v : i64
}
