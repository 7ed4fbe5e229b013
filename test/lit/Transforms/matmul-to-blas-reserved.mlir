// moecomm_rt_matmul_f32 belongs to the runtime's compiled-code ABI: a module
// that declares it with other types, or uses the name for something else,
// gets an error at the matmul, not a call the runtime cannot serve.
// RUN: moecomm-opt %s -split-input-file --moecomm-matmul-to-blas -verify-diagnostics

func.func private @moecomm_rt_matmul_f32(i32)
func.func @declared_otherwise(%a: memref<4x8xf32>, %b: memref<8x2xf32>, %c: memref<4x2xf32>) {
  // expected-error @below {{'@moecomm_rt_matmul_f32' is reserved for the runtime ABI, which calls it as '(i32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> ()', but the module declares it as '(i32) -> ()'}}
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x2xf32>) outs(%c : memref<4x2xf32>)
  return
}

// -----

memref.global "private" @moecomm_rt_matmul_f32 : memref<i64>
func.func @named_otherwise(%a: memref<4x8xf32>, %b: memref<8x2xf32>, %c: memref<4x2xf32>) {
  // expected-error @below {{'@moecomm_rt_matmul_f32' is reserved for the runtime ABI, which calls it as '(i32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> ()', but the module defines that name as something else}}
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x2xf32>) outs(%c : memref<4x2xf32>)
  return
}
