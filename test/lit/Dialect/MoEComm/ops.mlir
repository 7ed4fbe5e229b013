// Round trip of every moecomm op, attribute and type: custom form, and the
// generic form parsed back, must print identically and stably.
// RUN: moecomm-opt %s | moecomm-opt | FileCheck %s
// RUN: moecomm-opt %s --mlir-print-op-generic | moecomm-opt | FileCheck %s
// RUN: moecomm-opt %s | moecomm-opt > %t.1 && moecomm-opt %t.1 > %t.2 && diff %t.1 %t.2

// CHECK-LABEL: func.func @collective
// CHECK: moecomm.dispatch %{{.*}}, %{{.*}}, %{{.*}} topology<ranks = 16, ranks_per_node = 8, experts = 256> wire<fp8_e4m3> strategy<hierarchical> capacity(4096) : tensor<?x7168xbf16>, tensor<?x8xi32>, tensor<?x8xf32>
// CHECK: moecomm.combine %{{.*}}, %{{.*}} weighted : tensor<?x7168xbf16>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256, strategy = hierarchical> -> tensor<?x7168xbf16>
// CHECK: moecomm.combine %{{.*}}, %{{.*}} : tensor<?x7168xbf16>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256, strategy = hierarchical> -> tensor<?x7168xbf16>
func.func @collective(%x: tensor<?x7168xbf16>, %idx: tensor<?x8xi32>, %w: tensor<?x8xf32>) -> (tensor<?x7168xbf16>, tensor<?x7168xbf16>, tensor<16xi64>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 16, ranks_per_node = 8, experts = 256> wire<fp8_e4m3> strategy<hierarchical> capacity(4096) : tensor<?x7168xbf16>, tensor<?x8xi32>, tensor<?x8xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x7168xbf16>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256, strategy = hierarchical> -> tensor<?x7168xbf16>
  %grad = moecomm.combine %recv, %h : tensor<?x7168xbf16>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256, strategy = hierarchical> -> tensor<?x7168xbf16>
  return %out, %grad, %tpe : tensor<?x7168xbf16>, tensor<?x7168xbf16>, tensor<16xi64>
}

// CHECK-LABEL: func.func @training_step
// CHECK: %[[R:.*]], %[[RW:.*]], %{{.*}}, %[[H:.*]] = moecomm.dispatch
// CHECK: moecomm.cached_dispatch %arg3, %[[H]] wire<fp8_e4m3> : tensor<?x64xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8>
func.func @training_step(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>, %grad_out: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x64xbf16>
  %grad_recv = moecomm.cached_dispatch %grad_out, %h wire<fp8_e4m3> : tensor<?x64xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8>
  %grad_x = moecomm.combine %grad_recv, %h : tensor<?x64xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x64xbf16>
  return %out, %grad_x : tensor<?x64xbf16>, tensor<?x64xbf16>
}

// The FP8 wire formats with E8M0 scales: fp8_e4m3_ue8m0 (1x128) and mxfp8
// (1x32), on dispatch and cached_dispatch.
// CHECK-LABEL: func.func @e8m0_wires
// CHECK: moecomm.dispatch %{{.*}}, %{{.*}}, %{{.*}} topology<ranks = 4, ranks_per_node = 2, experts = 8> wire<fp8_e4m3_ue8m0> : tensor<?x40xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
// CHECK: moecomm.cached_dispatch %{{.*}}, %{{.*}} wire<mxfp8> : tensor<?x40xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8>
func.func @e8m0_wires(%x: tensor<?x40xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>, %g: tensor<?x40xf32>) -> (tensor<?x40xbf16>, tensor<?x40xf32>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> wire<fp8_e4m3_ue8m0> : tensor<?x40xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %grad = moecomm.cached_dispatch %g, %h wire<mxfp8> : tensor<?x40xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8>
  return %recv, %grad : tensor<?x40xbf16>, tensor<?x40xf32>
}

// Aligned expert segments: `align(N)` on dispatch and layout (after
// capacity), and the segment offsets of a handle.
// CHECK-LABEL: func.func @aligned
// CHECK: moecomm.dispatch %{{.*}}, %{{.*}}, %{{.*}} topology<ranks = 4, ranks_per_node = 2, experts = 8> capacity(32) align(128) : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
// CHECK: moecomm.expert_offsets %{{.*}} : !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8>
// CHECK: moecomm.layout %{{.*}}, %{{.*}} topology<ranks = 4, ranks_per_node = 2, experts = 8> strategy<flat> align(16) : tensor<?x2xi32>, tensor<?x2xf32>
// CHECK: moecomm.expert_offsets %{{.*}} : !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat>
func.func @aligned(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> (tensor<3xi64>, tensor<3xi64>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> capacity(32) align(128) : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %offs = moecomm.expert_offsets %h : !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8>
  %h2, %rw2, %tpe2 = moecomm.layout %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> strategy<flat> align(16) : tensor<?x2xi32>, tensor<?x2xf32>
  %offs2 = moecomm.expert_offsets %h2 : !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8, strategy = flat>
  return %offs, %offs2 : tensor<3xi64>, tensor<3xi64>
}

// CHECK-LABEL: func.func @defaults
// CHECK: moecomm.dispatch %{{.*}}, %{{.*}}, %{{.*}} topology<ranks = 1, ranks_per_node = 1, experts = 8> : tensor<4x7xf32>, tensor<4x3xi64>, tensor<4x3xf32>
// CHECK: moecomm.dispatch %{{.*}}, %{{.*}}, %{{.*}} topology<ranks = 4, ranks_per_node = 2, experts = 8> wire<bf16> strategy<auto> : tensor<0x1xbf16>, tensor<0x1xi32>, tensor<0x1xf32>
// CHECK: moecomm.combine {{.*}} -> tensor<4x7xf32>
func.func @defaults(%x: tensor<4x7xf32>, %idx: tensor<4x3xi64>, %w: tensor<4x3xf32>, %e: tensor<0x1xbf16>, %ei: tensor<0x1xi32>, %ew: tensor<0x1xf32>) -> tensor<4x7xf32> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 1, ranks_per_node = 1, experts = 8> : tensor<4x7xf32>, tensor<4x3xi64>, tensor<4x3xf32>
  %r2, %rw2, %tpe2, %h2 = moecomm.dispatch %e, %ei, %ew topology<ranks = 4, ranks_per_node = 2, experts = 8> wire<bf16> strategy<auto> : tensor<0x1xbf16>, tensor<0x1xi32>, tensor<0x1xf32>
  %out = moecomm.combine %recv, %h : tensor<?x7xf32>, !moecomm.handle<ranks = 1, ranks_per_node = 1, experts = 8> -> tensor<4x7xf32>
  return %out : tensor<4x7xf32>
}

// CHECK-LABEL: func.func @all_to_all
// CHECK: moecomm.all_to_all %{{.*}}, %{{.*}} topology<ranks = 4, ranks_per_node = 2> : tensor<?x64xbf16>, tensor<4xi64>
// CHECK: moecomm.all_to_all %{{.*}}, %{{.*}} topology<ranks = 2, ranks_per_node = 1> : tensor<6x3xf32>, tensor<2xi32>
// CHECK: moecomm.all_to_all %{{.*}}, %{{.*}} topology<ranks = 4, ranks_per_node = 2> : tensor<?x64xbf16>, tensor<?xi64>
// CHECK: moecomm.all_to_all %{{.*}}, %{{.*}} topology<ranks = 4, ranks_per_node = 2> : tensor<4x2xi64>, tensor<4xi64>
func.func @all_to_all(%rows: tensor<?x64xbf16>, %counts: tensor<4xi64>, %r2: tensor<6x3xf32>, %c2: tensor<2xi32>, %c3: tensor<?xi64>, %meta: tensor<4x2xi64>) -> (tensor<?x64xbf16>, tensor<4xi64>) {
  %recv, %rc = moecomm.all_to_all %rows, %counts topology<ranks = 4, ranks_per_node = 2> : tensor<?x64xbf16>, tensor<4xi64>
  %recv2, %rc2 = moecomm.all_to_all %r2, %c2 topology<ranks = 2, ranks_per_node = 1> : tensor<6x3xf32>, tensor<2xi32>
  %recv3, %rc3 = moecomm.all_to_all %rows, %c3 topology<ranks = 4, ranks_per_node = 2> : tensor<?x64xbf16>, tensor<?xi64>
  %recv4, %rc4 = moecomm.all_to_all %meta, %counts topology<ranks = 4, ranks_per_node = 2> : tensor<4x2xi64>, tensor<4xi64>
  return %recv, %rc : tensor<?x64xbf16>, tensor<4xi64>
}

// CHECK-LABEL: func.func @staged_unfused
// CHECK: moecomm.layout %{{.*}}, %{{.*}} topology<ranks = 8, ranks_per_node = 4, experts = 16> strategy<hierarchical> capacity(64) : tensor<?x3xi64>, tensor<?x3xf32>
// CHECK: moecomm.permute %{{.*}}, %{{.*}} dispatch stage 0 : tensor<?x300xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical>
// CHECK: moecomm.quantize %{{.*}} : tensor<?x300xbf16>
// CHECK: moecomm.exchange %{{.*}} scales(%{{.*}} : tensor<?x3xf32>), %{{.*}} dispatch stage 0 scope<inter_node> : tensor<?x300xf8E4M3FN>, !moecomm.handle
// CHECK: moecomm.dequantize %{{.*}}, %{{.*}} : tensor<?x300xf8E4M3FN>, tensor<?x3xf32> -> tensor<?x300xbf16>
// CHECK: moecomm.permute %{{.*}}, %{{.*}} dispatch stage 1 :
// CHECK: moecomm.exchange %{{.*}} dispatch stage 1 scope<intra_node>
// CHECK: moecomm.permute %{{.*}} scales(%{{.*}} : tensor<?x3xf32>), %{{.*}} dispatch output :
// CHECK: moecomm.permute %{{.*}}, %{{.*}} combine stage 0 weighted :
// CHECK: moecomm.permute %{{.*}}, %{{.*}} combine output :
func.func @staged_unfused(%x: tensor<?x300xbf16>, %idx: tensor<?x3xi64>, %w: tensor<?x3xf32>) -> (tensor<?x300xbf16>, tensor<?x300xbf16>, tensor<?xf32>, tensor<2xi64>) {
  %h, %rw, %tpe = moecomm.layout %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> strategy<hierarchical> capacity(64) : tensor<?x3xi64>, tensor<?x3xf32>
  %p0 = moecomm.permute %x, %h dispatch stage 0 : tensor<?x300xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical>
  %q0, %s0 = moecomm.quantize %p0 : tensor<?x300xbf16>
  %r0, %rs0 = moecomm.exchange %q0 scales(%s0 : tensor<?x3xf32>), %h dispatch stage 0 scope<inter_node> : tensor<?x300xf8E4M3FN>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical>
  %d0 = moecomm.dequantize %r0, %rs0 : tensor<?x300xf8E4M3FN>, tensor<?x3xf32> -> tensor<?x300xbf16>
  %p1 = moecomm.permute %d0, %h dispatch stage 1 : tensor<?x300xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical>
  %q1, %s1 = moecomm.quantize %p1 : tensor<?x300xbf16>
  %r1, %rs1 = moecomm.exchange %q1 scales(%s1 : tensor<?x3xf32>), %h dispatch stage 1 scope<intra_node> : tensor<?x300xf8E4M3FN>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical>
  %o, %os = moecomm.permute %r1 scales(%rs1 : tensor<?x3xf32>), %h dispatch output : tensor<?x300xf8E4M3FN>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical>
  %recv = moecomm.dequantize %o, %os : tensor<?x300xf8E4M3FN>, tensor<?x3xf32> -> tensor<?x300xbf16>
  %c0 = moecomm.permute %recv, %h combine stage 0 weighted : tensor<?x300xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical>
  %out = moecomm.permute %c0, %h combine output : tensor<?x300xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical>
  return %recv, %out, %rw, %tpe : tensor<?x300xbf16>, tensor<?x300xbf16>, tensor<?xf32>, tensor<2xi64>
}

// CHECK-LABEL: func.func @staged_fused
// CHECK: moecomm.pack %{{.*}}, %{{.*}} dispatch stage 0 : tensor<?x128xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 4, experts = 8, strategy = hierarchical> -> tensor<?x128xf8E4M3FN>, tensor<?x1xf32>
// CHECK: %[[REQ:.*]], %[[RECV:.*]], %[[RS:.*]] = moecomm.exchange_start %{{.*}} scales(%{{.*}} : tensor<?x1xf32>), %{{.*}} dispatch stage 0 scope<intra_node>
// CHECK: moecomm.exchange_wait %[[REQ]], %[[RECV]] scales(%[[RS]] : tensor<?x1xf32>) : tensor<?x128xf8E4M3FN>
// CHECK: moecomm.unpack %{{.*}} scales(%{{.*}} : tensor<?x1xf32>), %{{.*}} dispatch : tensor<?x128xf8E4M3FN>, !moecomm.handle<ranks = 4, ranks_per_node = 4, experts = 8, strategy = hierarchical> -> tensor<?x128xf32>
// CHECK: moecomm.pack %{{.*}}, %{{.*}} combine stage 0 weighted : tensor<?x128xf32>, {{.*}} -> tensor<?x128xf32>
// CHECK: moecomm.exchange %{{.*}}, %{{.*}} combine stage 0 scope<intra_node>
// CHECK: moecomm.unpack %{{.*}}, %{{.*}} combine : tensor<?x128xf32>, {{.*}} -> tensor<?x128xf32>
func.func @staged_fused(%x: tensor<?x128xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x128xf32> {
  %h, %rw, %tpe = moecomm.layout %idx, %w topology<ranks = 4, ranks_per_node = 4, experts = 8> strategy<hierarchical> : tensor<?x2xi32>, tensor<?x2xf32>
  %s, %ss = moecomm.pack %x, %h dispatch stage 0 : tensor<?x128xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 4, experts = 8, strategy = hierarchical> -> tensor<?x128xf8E4M3FN>, tensor<?x1xf32>
  %req, %r, %rs = moecomm.exchange_start %s scales(%ss : tensor<?x1xf32>), %h dispatch stage 0 scope<intra_node> : tensor<?x128xf8E4M3FN>, !moecomm.handle<ranks = 4, ranks_per_node = 4, experts = 8, strategy = hierarchical>
  %rr, %rrs = moecomm.exchange_wait %req, %r scales(%rs : tensor<?x1xf32>) : tensor<?x128xf8E4M3FN>
  %recv = moecomm.unpack %rr scales(%rrs : tensor<?x1xf32>), %h dispatch : tensor<?x128xf8E4M3FN>, !moecomm.handle<ranks = 4, ranks_per_node = 4, experts = 8, strategy = hierarchical> -> tensor<?x128xf32>
  %c = moecomm.pack %recv, %h combine stage 0 weighted : tensor<?x128xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 4, experts = 8, strategy = hierarchical> -> tensor<?x128xf32>
  %cr = moecomm.exchange %c, %h combine stage 0 scope<intra_node> : tensor<?x128xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 4, experts = 8, strategy = hierarchical>
  %out = moecomm.unpack %cr, %h combine : tensor<?x128xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 4, experts = 8, strategy = hierarchical> -> tensor<?x128xf32>
  return %out : tensor<?x128xf32>
}

// The E8M0 formats at the staged level: mxfp8 quantize/dequantize with
// ceil(300/32) = 10 f8E8M0FNU scales per row, and a pack that quantizes to
// fp8_e4m3_ue8m0 (one E8M0 scale per 128) ahead of an overlapped exchange.
// CHECK-LABEL: func.func @staged_e8m0
// CHECK: %{{.*}}, %[[S:.*]] = moecomm.quantize %{{.*}} wire<mxfp8> : tensor<?x300xf32>
// CHECK: moecomm.dequantize %{{.*}}, %[[S]] wire<mxfp8> : tensor<?x300xf8E4M3FN>, tensor<?x10xf8E8M0FNU> -> tensor<?x300xbf16>
// CHECK: moecomm.pack %{{.*}}, %{{.*}} dispatch stage 0 wire<fp8_e4m3_ue8m0> : tensor<?x300xf32>, {{.*}} -> tensor<?x300xf8E4M3FN>, tensor<?x3xf8E8M0FNU>
// CHECK: moecomm.exchange_start %{{.*}} scales(%{{.*}} : tensor<?x3xf8E8M0FNU>)
// CHECK: moecomm.exchange_wait %{{.*}}, %{{.*}} scales(%{{.*}} : tensor<?x3xf8E8M0FNU>) : tensor<?x300xf8E4M3FN>
// CHECK: moecomm.unpack %{{.*}} scales(%{{.*}} : tensor<?x3xf8E8M0FNU>), %{{.*}} dispatch : tensor<?x300xf8E4M3FN>, {{.*}} -> tensor<?x300xf32>
func.func @staged_e8m0(%x: tensor<?x300xf32>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> (tensor<?x300xbf16>, tensor<?x300xf32>) {
  %q, %qs = moecomm.quantize %x wire<mxfp8> : tensor<?x300xf32>
  %d = moecomm.dequantize %q, %qs wire<mxfp8> : tensor<?x300xf8E4M3FN>, tensor<?x10xf8E8M0FNU> -> tensor<?x300xbf16>
  %h, %rw, %tpe = moecomm.layout %idx, %w topology<ranks = 4, ranks_per_node = 4, experts = 8> strategy<flat> : tensor<?x2xi32>, tensor<?x2xf32>
  %s, %ss = moecomm.pack %x, %h dispatch stage 0 wire<fp8_e4m3_ue8m0> : tensor<?x300xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 4, experts = 8, strategy = flat> -> tensor<?x300xf8E4M3FN>, tensor<?x3xf8E8M0FNU>
  %req, %r, %rs = moecomm.exchange_start %s scales(%ss : tensor<?x3xf8E8M0FNU>), %h dispatch stage 0 scope<global> : tensor<?x300xf8E4M3FN>, !moecomm.handle<ranks = 4, ranks_per_node = 4, experts = 8, strategy = flat>
  %rr, %rrs = moecomm.exchange_wait %req, %r scales(%rs : tensor<?x3xf8E8M0FNU>) : tensor<?x300xf8E4M3FN>
  %recv = moecomm.unpack %rr scales(%rrs : tensor<?x3xf8E8M0FNU>), %h dispatch : tensor<?x300xf8E4M3FN>, !moecomm.handle<ranks = 4, ranks_per_node = 4, experts = 8, strategy = flat> -> tensor<?x300xf32>
  return %d, %recv : tensor<?x300xbf16>, tensor<?x300xf32>
}

// Attributes and types on their own (also in the generic form).
// CHECK-LABEL: func.func @attributes
// CHECK-SAME: dir = #moecomm.direction<combine>
// CHECK-SAME: scope = #moecomm.scope<global>
// CHECK-SAME: strategy = #moecomm.strategy<per_expert>
// CHECK-SAME: topo = #moecomm.topology<ranks = 8, ranks_per_node = 8>
// CHECK-SAME: wire = #moecomm.wire<f32>
func.func @attributes(%h: !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 2>, %r: !moecomm.request) -> !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 2>
    attributes {topo = #moecomm.topology<ranks = 8, ranks_per_node = 8>, wire = #moecomm.wire<f32>, strategy = #moecomm.strategy<per_expert>, scope = #moecomm.scope<global>, dir = #moecomm.direction<combine>} {
  return %h : !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 2>
}

// The largest top-k the verifier accepts.
// CHECK-LABEL: func.func @largest_topk
// CHECK: moecomm.dispatch %{{.*}}, %{{.*}}, %{{.*}} topology<ranks = 2, ranks_per_node = 1, experts = 8192> : tensor<?x8xf32>, tensor<?x4096xi32>, tensor<?x4096xf32>
func.func @largest_topk(%x: tensor<?x8xf32>, %idx: tensor<?x4096xi32>, %w: tensor<?x4096xf32>) -> tensor<?x8xf32> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 2, ranks_per_node = 1, experts = 8192> : tensor<?x8xf32>, tensor<?x4096xi32>, tensor<?x4096xf32>
  return %recv : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @framework
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = moecomm.permute_tokens %{{.*}}, %{{.*}} experts(8) : tensor<?x16xbf16>, tensor<?x4xi32>
// CHECK: moecomm.permute_tokens %{{.*}}, %{{.*}} experts(2) : tensor<3x8xf32>, tensor<3x2xi64>
// CHECK: moecomm.permute_tokens %{{.*}}, %{{.*}} weights(%{{.*}} : tensor<?x4xf32>) experts(8) : tensor<?x16xbf16>, tensor<?x4xi32>
// CHECK: moecomm.sort_chunks %{{.*}}, %{{.*}} : tensor<?x16xbf16>, tensor<?x2xi64>
// CHECK: moecomm.unsort_chunks %{{.*}}, %{{.*}} : tensor<?x16xbf16>, tensor<4x2xi64>
// CHECK: moecomm.unpermute_tokens %{{.*}}, %{{.*}} weights(%{{.*}} : tensor<?x4xf32>) : tensor<?x16xbf16>, tensor<?x4xi64>
// CHECK: moecomm.unpermute_tokens %{{.*}}, %{{.*}} : tensor<?x8xf32>, tensor<3x2xi64>
func.func @framework(%x: tensor<?x16xbf16>, %idx: tensor<?x4xi32>, %w: tensor<?x4xf32>, %c: tensor<?x2xi64>, %c4: tensor<4x2xi64>, %x2: tensor<3x8xf32>, %idx2: tensor<3x2xi64>) -> (tensor<?x16xbf16>, tensor<2xi64>, tensor<3x8xf32>) {
  %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xbf16>, tensor<?x4xi32>
  %rows2, %sizes2, %slots2 = moecomm.permute_tokens %x2, %idx2 experts(2) : tensor<3x8xf32>, tensor<3x2xi64>
  %wrows, %wsizes, %wslots = moecomm.permute_tokens %x, %idx weights(%w : tensor<?x4xf32>) experts(8) : tensor<?x16xbf16>, tensor<?x4xi32>
  %em, %tpe = moecomm.sort_chunks %rows, %c : tensor<?x16xbf16>, tensor<?x2xi64>
  %sm = moecomm.unsort_chunks %em, %c4 : tensor<?x16xbf16>, tensor<4x2xi64>
  %out = moecomm.unpermute_tokens %sm, %slots weights(%w : tensor<?x4xf32>) : tensor<?x16xbf16>, tensor<?x4xi64>
  %out2 = moecomm.unpermute_tokens %rows2, %slots2 : tensor<?x8xf32>, tensor<3x2xi64>
  return %out, %tpe, %out2 : tensor<?x16xbf16>, tensor<2xi64>, tensor<3x8xf32>
}
