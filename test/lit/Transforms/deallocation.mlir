// convert-moecomm-to-runtime frees buffers after their last use in
// straight-line functions; calls borrow arguments only from functions that
// return fresh buffers, and buffers a function returns are its caller's.
// RUN: moecomm-opt %s --convert-moecomm-to-runtime | FileCheck %s

!h = !moecomm.handle<ranks = 2, ranks_per_node = 2, experts = 2, strategy = flat>

// Returns its argument: calls of it may alias.
func.func private @identity(%t: tensor<?x8xf32>) -> tensor<?x8xf32> {
  return %t : tensor<?x8xf32>
}

// Returns a fresh buffer.
func.func private @gather(%t: tensor<?x8xf32>, %h: !h) -> tensor<?x8xf32> {
  %p = moecomm.permute %t, %h dispatch output : tensor<?x8xf32>, !h
  return %p : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @caller
// CHECK: %[[P:.*]] = memref.alloc
// CHECK: call @moecomm_rt_gather_f32_f32
// CHECK: %[[A:.*]] = call @identity(%[[P]])
// CHECK: %[[G:.*]] = call @gather(%[[A]]
// CHECK: %[[OUT:.*]] = memref.alloc
// CHECK: call @moecomm_rt_gather_f32_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NEXT: memref.dealloc %[[G]]
// CHECK-NOT: memref.dealloc %[[P]]
// CHECK-NOT: memref.dealloc %[[A]]
// CHECK-NOT: memref.dealloc %[[OUT]]
// CHECK: return %[[OUT]]
func.func @caller(%x: tensor<?x8xf32>, %h: !h) -> tensor<?x8xf32> {
  %p = moecomm.permute %x, %h dispatch stage 0 : tensor<?x8xf32>, !h
  %a = call @identity(%p) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %g = call @gather(%a, %h) : (tensor<?x8xf32>, !h) -> tensor<?x8xf32>
  %out = moecomm.permute %g, %h combine output : tensor<?x8xf32>, !h
  return %out : tensor<?x8xf32>
}
