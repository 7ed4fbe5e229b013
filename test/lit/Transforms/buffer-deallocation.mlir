// moecomm-buffer-deallocation on runtime-level IR (what
// convert-moecomm-to-runtime=deallocate=false leaves): in straight-line
// functions each buffer is freed right after its last use, a buffer of an
// asynchronous exchange after its wait; a buffer that escapes is not freed;
// the caller owns every buffer a function returns, each distinct; other
// functions go through MLIR's buffer-deallocation pipeline.
// RUN: moecomm-opt %s --moecomm-buffer-deallocation | FileCheck %s --implicit-check-not=bufferization.dealloc

!abi = memref<?x?xf32, strided<[?, ?], offset: ?>>
func.func private @moecomm_rt_gather_f32_f32(!llvm.ptr, i32, i64, i32, !abi, !abi) attributes {llvm.emit_c_interface}
func.func private @moecomm_rt_exchange_start_f32(!llvm.ptr, i32, i64, !abi, !abi) -> !llvm.ptr attributes {llvm.emit_c_interface}
func.func private @moecomm_rt_wait(!llvm.ptr)
func.func private @keep(memref<?x8xf32>)

// CHECK-LABEL: func.func @frees_after_last_use
// CHECK: %[[A:.*]] = memref.alloc
// CHECK: %[[B:.*]] = memref.alloc
// CHECK: call @moecomm_rt_gather_f32_f32
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NOT: memref.dealloc
// CHECK: return %[[B]]
func.func @frees_after_last_use(%h: !llvm.ptr, %n: index) -> memref<?x8xf32> {
  %c0 = arith.constant 0 : i32
  %s0 = arith.constant 0 : i64
  %a = memref.alloc(%n) : memref<?x8xf32>
  %b = memref.alloc(%n) : memref<?x8xf32>
  %va = memref.cast %a : memref<?x8xf32> to !abi
  %vb = memref.cast %b : memref<?x8xf32> to !abi
  call @moecomm_rt_gather_f32_f32(%h, %c0, %s0, %c0, %va, %vb) : (!llvm.ptr, i32, i64, i32, !abi, !abi) -> ()
  return %b : memref<?x8xf32>
}

// The runtime reads the send buffer until the wait.
// CHECK-LABEL: func.func @frees_after_wait
// CHECK: %[[SEND:.*]] = memref.alloc
// CHECK: call @moecomm_rt_exchange_start_f32
// CHECK-NOT: memref.dealloc
// CHECK: call @moecomm_rt_wait
// CHECK-NEXT: memref.dealloc %[[SEND]]
// CHECK-NEXT: return
func.func @frees_after_wait(%h: !llvm.ptr, %n: index) -> memref<?x8xf32> {
  %c0 = arith.constant 0 : i32
  %s0 = arith.constant 0 : i64
  %send = memref.alloc(%n) : memref<?x8xf32>
  %recv = memref.alloc(%n) : memref<?x8xf32>
  %vs = memref.cast %send : memref<?x8xf32> to !abi
  %vr = memref.cast %recv : memref<?x8xf32> to !abi
  %req = call @moecomm_rt_exchange_start_f32(%h, %c0, %s0, %vs, %vr) : (!llvm.ptr, i32, i64, !abi, !abi) -> !llvm.ptr
  call @moecomm_rt_wait(%req) : (!llvm.ptr) -> ()
  return %recv : memref<?x8xf32>
}

// A buffer passed to a function that is not in the module may be kept.
// CHECK-LABEL: func.func @escapes
// CHECK-NOT: memref.dealloc
// CHECK: return
func.func @escapes(%n: index) {
  %a = memref.alloc(%n) : memref<?x8xf32>
  call @keep(%a) : (memref<?x8xf32>) -> ()
  return
}

// CHECK-LABEL: func.func @returns_argument
// CHECK-SAME: (%[[ARG:.*]]: memref<?x8xf32>
// CHECK: %[[COPY:.*]] = memref.alloc
// CHECK: linalg.copy ins(%[[ARG]] : {{.*}}) outs(%[[COPY]] :
// CHECK-NEXT: return %[[COPY]]
func.func @returns_argument(%x: memref<?x8xf32>) -> memref<?x8xf32> {
  return %x : memref<?x8xf32>
}

// CHECK-LABEL: func.func @caller
// CHECK: %[[A:.*]] = memref.alloc
// CHECK: %[[R:.*]] = call @returns_argument(%[[A]])
// CHECK-NEXT: memref.dealloc %[[R]]
// CHECK-NEXT: memref.dealloc %[[A]]
func.func @caller(%n: index) {
  %a = memref.alloc(%n) : memref<?x8xf32>
  %r = call @returns_argument(%a) : (memref<?x8xf32>) -> memref<?x8xf32>
  return
}

// A function with a loop goes through MLIR's buffer-deallocation pipeline:
// each iteration frees the buffer it no longer needs; the dealloc after the
// loop lowers to a call of the library function that lowering adds to the
// module. No bufferization.dealloc is left.
// CHECK-LABEL: func.func @loop
// CHECK: scf.for
// CHECK: call @moecomm_rt_gather_f32_f32
// CHECK: memref.dealloc
// CHECK: scf.yield
// CHECK: call @dealloc_helper
// CHECK: return
// CHECK: func.func private @dealloc_helper
func.func @loop(%h: !llvm.ptr, %n: index, %steps: index) -> memref<?x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %i0 = arith.constant 0 : i32
  %s0 = arith.constant 0 : i64
  %a = memref.alloc(%n) : memref<?x8xf32>
  %r = scf.for %i = %c0 to %steps step %c1 iter_args(%acc = %a) -> memref<?x8xf32> {
    %b = memref.alloc(%n) : memref<?x8xf32>
    %vacc = memref.cast %acc : memref<?x8xf32> to !abi
    %vb = memref.cast %b : memref<?x8xf32> to !abi
    func.call @moecomm_rt_gather_f32_f32(%h, %i0, %s0, %i0, %vacc, %vb) : (!llvm.ptr, i32, i64, i32, !abi, !abi) -> ()
    scf.yield %b : memref<?x8xf32>
  }
  return %r : memref<?x8xf32>
}
