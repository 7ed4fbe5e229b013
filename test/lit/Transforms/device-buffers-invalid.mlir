// moecomm-device-buffers refuses what the runtime's buffer calls cannot
// express, with an error on the op.
// RUN: moecomm-opt %s --moecomm-device-buffers -split-input-file -verify-diagnostics

func.func @memory_space() {
  // expected-error @+1 {{target=cuda: cannot place a buffer of 'memref<4xf32, 1>' (the runtime's buffers are viewed with memref.view: an identity layout in the default memory space)}}
  %b = memref.alloc() : memref<4xf32, 1>
  return
}

// -----

func.func @layout() {
  // expected-error @+1 {{target=cuda: cannot place a buffer of 'memref<4x4xf32, affine_map<(d0, d1) -> (d1, d0)>>'}}
  %b = memref.alloc() : memref<4x4xf32, affine_map<(d0, d1) -> (d1, d0)>>
  return
}

// -----

func.func @copy_f16(%a: memref<8xf16>, %b: memref<8xf16>) {
  // expected-error @+1 {{target=cuda: the runtime cannot copy device buffers of 'memref<8xf16>' (it takes bf16, f32, i32, i64, i8, f8E4M3FN and f8E8M0FNU elements)}}
  memref.copy %a, %b : memref<8xf16> to memref<8xf16>
  return
}

// -----

func.func @fill_f16(%a: memref<8xf16>) {
  %zero = arith.constant 0.0 : f16
  // expected-error @+1 {{target=cuda: the runtime cannot clear device buffers of 'memref<8xf16>'}}
  linalg.fill ins(%zero : f16) outs(%a : memref<8xf16>)
  return
}

// -----

// The moecomm_rt_ names belong to the runtime ABI.
func.func private @moecomm_rt_free(i64)

func.func @reserved() {
  %b = memref.alloc() : memref<4xf32>
  // expected-error @+1 {{'@moecomm_rt_free' is reserved for the runtime ABI, which calls it as '(!llvm.ptr) -> ()', but the module declares it as '(i64) -> ()'}}
  memref.dealloc %b : memref<4xf32>
  return
}

// -----

// A mutable global's device copy would drop the device's writes.
memref.global "private" @mut : memref<4xf32> = dense<0.0>
func.func @mutable(%x: memref<4xf32>) {
  // expected-error @+1 {{target=cuda: @mut is a mutable global, which device work cannot use (it would work on a device copy and drop its writes); pass the buffer as an argument}}
  %g = memref.get_global @mut : memref<4xf32>
  memref.copy %x, %g : memref<4xf32> to memref<4xf32>
  return
}

// -----

// A constant yielded out of its block: its device copy's lifetime is not
// the block's.
memref.global "private" constant @a : memref<4xf32> = dense<1.0>
func.func @escapes(%c: i1, %d: memref<4xf32>) {
  %w = scf.if %c -> memref<4xf32> {
    // expected-error @+1 {{target=cuda: the constant @a leaves its block ('scf.yield'), so its device copy has no place to be freed; use it where it is read}}
    %g = memref.get_global @a : memref<4xf32>
    scf.yield %g : memref<4xf32>
  } else {
    scf.yield %d : memref<4xf32>
  }
  memref.copy %w, %d : memref<4xf32> to memref<4xf32>
  return
}

// -----

func.func @overaligned() {
  // expected-error @+1 {{target=cuda: an alignment of 4096 bytes is above the runtime's 256}}
  %b = memref.alloc() {alignment = 4096} : memref<4xf32>
  return
}

// -----

// A constant read in a successor block outlives the block that reads it.
memref.global "private" constant @c : memref<4xf32> = dense<1.0>
func.func @successor(%d: memref<4xf32>) {
  // expected-error @+1 {{target=cuda: the constant @c leaves its block ('memref.copy'), so its device copy has no place to be freed; use it where it is read}}
  %g = memref.get_global @c : memref<4xf32>
  cf.br ^next
^next:
  memref.copy %g, %d : memref<4xf32> to memref<4xf32>
  return
}
