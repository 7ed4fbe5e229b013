// convert-moecomm-to-runtime frees buffers after their last use in
// straight-line functions. The caller owns every buffer a function returns
// (each distinct, copied where the function would return an argument or the
// same buffer twice), so calls borrow their arguments.
// RUN: moecomm-opt %s --convert-moecomm-to-runtime | FileCheck %s

!h = !moecomm.handle<ranks = 2, ranks_per_node = 2, experts = 2, strategy = flat>

// Returns its argument: as a copy.
// CHECK-LABEL: func.func private @identity
// CHECK: %[[COPY:.*]] = memref.alloc
// CHECK: linalg.copy ins(%{{.*}} : {{.*}}) outs(%[[COPY]] :
// CHECK-NEXT: return %[[COPY]]
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
// CHECK-NEXT: memref.dealloc %[[P]]
// CHECK: %[[G:.*]] = call @gather(%[[A]]
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK: %[[OUT:.*]] = memref.alloc
// CHECK: call @moecomm_rt_gather_f32_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NEXT: memref.dealloc %[[G]]
// CHECK-NOT: memref.dealloc %[[OUT]]
// CHECK: return %[[OUT]]
func.func @caller(%x: tensor<?x8xf32>, %h: !h) -> tensor<?x8xf32> {
  %p = moecomm.permute %x, %h dispatch stage 0 : tensor<?x8xf32>, !h
  %a = call @identity(%p) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %g = call @gather(%a, %h) : (tensor<?x8xf32>, !h) -> tensor<?x8xf32>
  %out = moecomm.permute %g, %h combine output : tensor<?x8xf32>, !h
  return %out : tensor<?x8xf32>
}

// Results are owned by the caller and distinct: a returned argument, and a
// buffer returned twice, come back as fresh copies (the original is freed
// by the caller of the copy, never twice).
// CHECK-LABEL: func.func @returns_argument
// CHECK-SAME: (%[[ARG:.*]]: memref<?x16xbf16>
// CHECK: %[[COPY:.*]] = memref.alloc
// CHECK: linalg.copy ins(%[[ARG]] : {{.*}}) outs(%[[COPY]] :
// CHECK-NOT: memref.dealloc
// CHECK: return %[[COPY]]
func.func @returns_argument(%x: tensor<?x16xbf16>) -> tensor<?x16xbf16> {
  return %x : tensor<?x16xbf16>
}
// CHECK-LABEL: func.func @returns_twice
// CHECK: call @moecomm_rt_dispatch_bf16
// CHECK: %[[COPY:.*]] = memref.alloc
// CHECK: linalg.copy ins(%[[RECV:.*]] : {{.*}}) outs(%[[COPY]] :
// CHECK-NOT: memref.dealloc
// CHECK: return %[[RECV]], %[[COPY]]
func.func @returns_twice(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> (tensor<?x16xbf16>, tensor<?x16xbf16>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  return %recv, %recv : tensor<?x16xbf16>, tensor<?x16xbf16>
}

// A function that is not straight-line (a loop) goes through the upstream
// deallocation pipeline, whose function boundary ABI is the same: its
// straight-line caller frees what it passed and what it got back.
func.func private @looped(%t: tensor<?x8xf32>, %h: !h, %n: index) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %t) -> tensor<?x8xf32> {
    %p = moecomm.permute %acc, %h dispatch output : tensor<?x8xf32>, !h
    scf.yield %p : tensor<?x8xf32>
  }
  return %r : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @loop_caller
// CHECK: %[[P:.*]] = memref.alloc
// CHECK: %[[L:.*]] = call @looped(%[[P]],
// CHECK-NEXT: memref.dealloc %[[P]]
// CHECK: call @moecomm_rt_gather_f32_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NEXT: memref.dealloc %[[L]]
func.func @loop_caller(%x: tensor<?x8xf32>, %h: !h, %n: index) -> tensor<?x8xf32> {
  %p = moecomm.permute %x, %h dispatch stage 0 : tensor<?x8xf32>, !h
  %l = call @looped(%p, %h, %n) : (tensor<?x8xf32>, !h, index) -> tensor<?x8xf32>
  %out = moecomm.permute %l, %h combine output : tensor<?x8xf32>, !h
  return %out : tensor<?x8xf32>
}
