// RUN: moecomm-opt %s --moecomm-raise-dispatch -verify-diagnostics | FileCheck %s
// RUN: moecomm-opt %s --moecomm-raise-dispatch --moecomm-pipeline="ranks=4" | FileCheck %s --check-prefix=LOWERED
// The backward of a per-expert exchange (weights at permute_tokens: each row
// sent is w[t, k] * grad_out[t]; none at unpermute_tokens) raised to
// cached_dispatch along the forward's layout, the rows scaled by the
// layout's recv_weights, and an unweighted combine; without a forward
// dispatch, to a dispatch of its own. The forward form: raise-dispatch.mlir
// and raise-dispatch-row-wise.mlir.

// Lowered, the training step computes one layout (the forward's), which
// the backward reuses, and releases it once.
// LOWERED-NOT: moecomm.
// LOWERED-LABEL: llvm.func @training_step(
// LOWERED: %[[L:.*]] = llvm.call @moecomm_rt_layout_i32(
// LOWERED-NOT: llvm.call @moecomm_rt_layout_
// LOWERED: llvm.call @moecomm_rt_layout_release(%[[L]])
// LOWERED-NOT: llvm.call @moecomm_rt_layout_
// LOWERED: llvm.return

// A training step: the forward (row-wise, identity experts), then the
// backward (grouped: sort_chunks, experts that negate their rows,
// unsort_chunks). The backward's cached_dispatch takes the forward's handle;
// its rows, scaled by the forward's recv_weights, are sort_chunks' rows.
// CHECK-LABEL: func.func @training_step(
// CHECK-SAME: %[[X:[^:]*]]: tensor<?x16xbf16>, %[[IDX:[^:]*]]: tensor<?x2xi32>, %[[W:[^:]*]]: tensor<?x2xf32>, %[[G:[^:]*]]: tensor<?x16xbf16>)
// CHECK-NOT: moecomm.permute_tokens
// CHECK-NOT: moecomm.all_to_all
// CHECK: %[[R:.*]], %[[RW:.*]], %[[TPE:.*]], %[[H:.*]] = moecomm.dispatch %[[X]], %[[IDX]], %[[W]] topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
// CHECK: %[[OUT:.*]] = moecomm.combine %[[R]], %[[H]] weighted
// CHECK-NOT: moecomm.dispatch
// CHECK: %[[GR:.*]] = moecomm.cached_dispatch %[[G]], %[[H]] : tensor<?x16xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8>
// CHECK: %[[GW:.*]] = linalg.generic {{.*}} ins(%[[GR]], %[[RW]] : tensor<?x16xbf16>, tensor<?xf32>)
// CHECK: ^bb0(%[[E:.*]]: bf16, %[[WE:.*]]: f32, %{{.*}}: bf16):
// CHECK-NEXT: %[[EF:.*]] = arith.extf %[[E]] : bf16 to f32
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[EF]], %[[WE]] : f32
// CHECK-NEXT: %[[PB:.*]] = arith.truncf %[[P]] : f32 to bf16
// CHECK-NEXT: linalg.yield %[[PB]] : bf16
// CHECK: tensor.dim %[[GW]], %{{.*}} : tensor<?x16xbf16>
// CHECK: %[[Y:.*]]:2 = scf.for
// CHECK: tensor.extract %[[TPE]][
// CHECK: tensor.extract_slice %[[GW]][
// CHECK: arith.negf
// CHECK-NOT: moecomm.unsort_chunks
// CHECK: %[[GX:.*]] = moecomm.combine %[[Y]]#0, %[[H]] : tensor<?x16xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xbf16>
// CHECK-NOT: moecomm.unpermute_tokens
// CHECK: return %[[OUT]], %[[GX]]
func.func @training_step(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>,
                         %g: tensor<?x16xbf16>) -> (tensor<?x16xbf16>, tensor<?x16xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c0_i64 = arith.constant 0 : i64
  %ones = arith.constant dense<1> : tensor<4xi64>
  %init = tensor.empty() : tensor<4xi64>
  %zeros = linalg.fill ins(%c0_i64 : i64) outs(%init : tensor<4xi64>) -> tensor<4xi64>
  // Forward.
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xbf16>, tensor<?x2xi32>
  %groups = tensor.expand_shape %sizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %send_counts = linalg.reduce ins(%groups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %recv, %recv_counts = moecomm.all_to_all %rows, %send_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xbf16>, tensor<4xi64>
  %back, %back_counts = moecomm.all_to_all %recv, %recv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xbf16>, tensor<4xi64>
  %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x2xf32>) : tensor<?x16xbf16>, tensor<?x2xi64>
  // Backward.
  %grows, %gsizes, %gslots = moecomm.permute_tokens %g, %idx weights(%w : tensor<?x2xf32>) experts(8) : tensor<?x16xbf16>, tensor<?x2xi32>
  %ggroups = tensor.expand_shape %gsizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %gsend_counts = linalg.reduce ins(%ggroups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %grecv, %grecv_counts = moecomm.all_to_all %grows, %gsend_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xbf16>, tensor<4xi64>
  %matrix, %unused = moecomm.all_to_all %ggroups, %ones topology<ranks = 4, ranks_per_node = 2>
      : tensor<4x2xi64>, tensor<4xi64>
  %sorted, %tpe = moecomm.sort_chunks %grecv, %matrix : tensor<?x16xbf16>, tensor<?x2xi64>
  %n = tensor.dim %sorted, %c0 : tensor<?x16xbf16>
  %y0 = tensor.empty(%n) : tensor<?x16xbf16>
  %y:2 = scf.for %e = %c0 to %c2 step %c1 iter_args(%acc = %y0, %off = %c0) -> (tensor<?x16xbf16>, index) {
    %cnt64 = tensor.extract %tpe[%e] : tensor<2xi64>
    %cnt = arith.index_cast %cnt64 : i64 to index
    %seg = tensor.extract_slice %sorted[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xbf16> to tensor<?x16xbf16>
    %neg = arith.negf %seg : tensor<?x16xbf16>
    %next = tensor.insert_slice %neg into %acc[%off, 0] [%cnt, 16] [1, 1] : tensor<?x16xbf16> into tensor<?x16xbf16>
    %off2 = arith.addi %off, %cnt : index
    scf.yield %next, %off2 : tensor<?x16xbf16>, index
  }
  %unsorted = moecomm.unsort_chunks %y#0, %matrix : tensor<?x16xbf16>, tensor<?x2xi64>
  %gback, %gback_counts = moecomm.all_to_all %unsorted, %grecv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xbf16>, tensor<4xi64>
  %grad_x = moecomm.unpermute_tokens %gback, %gslots : tensor<?x16xbf16>, tensor<?x2xi64>
  return %out, %grad_x : tensor<?x16xbf16>, tensor<?x16xbf16>
}

// A backward function of its own (f32 rows, i64 ids, identity experts): no
// dispatch to take a layout from, so it gets one; its rows are scaled by its
// own recv_weights.
// CHECK-LABEL: func.func @backward_only(
// CHECK-SAME: %[[G:[^:]*]]: tensor<?x16xf32>, %[[IDX:[^:]*]]: tensor<?x2xi64>, %[[W:[^:]*]]: tensor<?x2xf32>)
// CHECK: %[[R:.*]], %[[RW:.*]], %{{.*}}, %[[H:.*]] = moecomm.dispatch %[[G]], %[[IDX]], %[[W]] topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x16xf32>, tensor<?x2xi64>, tensor<?x2xf32>
// CHECK: %[[GW:.*]] = linalg.generic {{.*}} ins(%[[R]], %[[RW]] : tensor<?x16xf32>, tensor<?xf32>)
// CHECK: ^bb0(%[[E:.*]]: f32, %[[WE:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[E]], %[[WE]] : f32
// CHECK-NEXT: linalg.yield %[[P]] : f32
// CHECK: %[[GX:.*]] = moecomm.combine %[[GW]], %[[H]] : tensor<?x16xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x16xf32>
// CHECK-NEXT: return %[[GX]]
func.func @backward_only(%g: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %grows, %gsizes, %gslots = moecomm.permute_tokens %g, %idx weights(%w : tensor<?x2xf32>) experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %ggroups = tensor.expand_shape %gsizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %gsend_counts = linalg.reduce ins(%ggroups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %grecv, %grecv_counts = moecomm.all_to_all %grows, %gsend_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %gback, %gback_counts = moecomm.all_to_all %grecv, %grecv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %grad_x = moecomm.unpermute_tokens %gback, %gslots : tensor<?x16xf32>, tensor<?x2xi64>
  return %grad_x : tensor<?x16xf32>
}

// Dispatches whose layout the backward may not reuse: with capacity (it
// would drop rows the exchange sends), with other weights, and one computed
// after the backward's exchange. It gets a dispatch of its own, and a remark
// says why the first of them was not taken.
// CHECK-LABEL: func.func @no_reusable_layout(
// CHECK-SAME: %[[X:[^:]*]]: tensor<?x16xf32>, %[[IDX:[^:]*]]: tensor<?x2xi64>, %[[W:[^:]*]]: tensor<?x2xf32>, %[[W2:[^:]*]]: tensor<?x2xf32>)
// CHECK: moecomm.dispatch %[[X]], %[[IDX]], %[[W]] {{.*}} capacity(64)
// CHECK: moecomm.dispatch %[[X]], %[[IDX]], %[[W2]]
// CHECK: %[[R:.*]], %[[RW:.*]], %{{.*}}, %[[H:.*]] = moecomm.dispatch %[[X]], %[[IDX]], %[[W]] topology<ranks = 4, ranks_per_node = 2, experts = 8> :
// CHECK: linalg.generic {{.*}} ins(%[[R]], %[[RW]] :
// CHECK: moecomm.combine %{{.*}}, %[[H]] :
// CHECK: moecomm.dispatch %[[X]], %[[IDX]], %[[W]] topology<ranks = 4, ranks_per_node = 2, experts = 8> wire
// CHECK-NOT: moecomm.cached_dispatch
func.func @no_reusable_layout(%x: tensor<?x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>, %w2: tensor<?x2xf32>)
    -> (tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>) {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %r1, %rw1, %t1, %h1 = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> capacity(64)
      : tensor<?x16xf32>, tensor<?x2xi64>, tensor<?x2xf32>
  %r2, %rw2, %t2, %h2 = moecomm.dispatch %x, %idx, %w2 topology<ranks = 4, ranks_per_node = 2, experts = 8>
      : tensor<?x16xf32>, tensor<?x2xi64>, tensor<?x2xf32>
  // expected-remark @below {{moecomm-raise-dispatch: the backward gets a layout of its own: the 'moecomm.dispatch' of its ids at 145:25 has a capacity}}
  %grows, %gsizes, %gslots = moecomm.permute_tokens %x, %idx weights(%w : tensor<?x2xf32>) experts(8) : tensor<?x16xf32>, tensor<?x2xi64>
  %ggroups = tensor.expand_shape %gsizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %gsend_counts = linalg.reduce ins(%ggroups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %grecv, %grecv_counts = moecomm.all_to_all %grows, %gsend_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %gback, %gback_counts = moecomm.all_to_all %grecv, %grecv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %grad_x = moecomm.unpermute_tokens %gback, %gslots : tensor<?x16xf32>, tensor<?x2xi64>
  %r3, %rw3, %t3, %h3 = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> wire<fp8_e4m3>
      : tensor<?x16xf32>, tensor<?x2xi64>, tensor<?x2xf32>
  return %r1, %r2, %grad_x, %r3 : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>
}

// A forward dispatch of 8 static tokens and a backward of 6 (the ids'
// count is dynamic): cached_dispatch would be invalid, so the backward gets
// a dispatch of its own (with a remark).
// CHECK-LABEL: func.func @static_tokens_differ(
// CHECK: moecomm.dispatch %{{.*}} : tensor<8x16xf32>
// CHECK: moecomm.dispatch %{{.*}} : tensor<6x16xf32>
// CHECK-NOT: moecomm.cached_dispatch
func.func @static_tokens_differ(%x: tensor<8x16xf32>, %g: tensor<6x16xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>)
    -> (tensor<?x16xf32>, tensor<6x16xf32>) {
  %zeros = arith.constant dense<0> : tensor<4xi64>
  %r, %rw, %t, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8>
      : tensor<8x16xf32>, tensor<?x2xi64>, tensor<?x2xf32>
  // expected-remark @below {{moecomm-raise-dispatch: the backward gets a layout of its own: the 'moecomm.dispatch' of its ids at 177:21 has another static token count}}
  %grows, %gsizes, %gslots = moecomm.permute_tokens %g, %idx weights(%w : tensor<?x2xf32>) experts(8) : tensor<6x16xf32>, tensor<?x2xi64>
  %ggroups = tensor.expand_shape %gsizes [[0, 1]] output_shape [4, 2] : tensor<8xi64> into tensor<4x2xi64>
  %gsend_counts = linalg.reduce ins(%ggroups : tensor<4x2xi64>) outs(%zeros : tensor<4xi64>) dimensions = [1]
    (%a: i64, %acc: i64) {
      %s = arith.addi %a, %acc : i64
      linalg.yield %s : i64
    }
  %grecv, %grecv_counts = moecomm.all_to_all %grows, %gsend_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %gback, %gback_counts = moecomm.all_to_all %grecv, %grecv_counts topology<ranks = 4, ranks_per_node = 2>
      : tensor<?x16xf32>, tensor<4xi64>
  %grad_x = moecomm.unpermute_tokens %gback, %gslots : tensor<?x16xf32>, tensor<?x2xi64>
  %gx = tensor.cast %grad_x : tensor<?x16xf32> to tensor<6x16xf32>
  return %r, %gx : tensor<?x16xf32>, tensor<6x16xf32>
}
