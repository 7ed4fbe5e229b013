// The staged-level passes leave collective-level ops alone; they say so, once
// per run (per function for moecomm-schedule-overlap), instead of silently
// doing nothing. (After the split they have nothing to say:
// schedule-overlap-remarks.mlir expects no other remark.)
// RUN: moecomm-opt %s --moecomm-fuse-quant -split-input-file -verify-diagnostics
// RUN: moecomm-opt %s --moecomm-fuse-permute -split-input-file -verify-diagnostics
// RUN: moecomm-opt %s --moecomm-schedule-overlap=chunks=2 -split-input-file -verify-diagnostics

func.func @fp8_layer(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x64xbf16> {
  // expected-remark @+1 {{left 2 collective-level op(s) as they are (not staged yet: run moecomm-split-hierarchical first)}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> wire<fp8_e4m3> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xbf16>
  return %out : tensor<?x64xbf16>
}

// -----

// A backward function holding only a combine and a cached dispatch.
func.func @backward(%g: tensor<?x64xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat>) -> tensor<?x64xbf16> {
  // expected-remark @+1 {{left 2 collective-level op(s) as they are (not staged yet: run moecomm-split-hierarchical first)}}
  %grad_recv = moecomm.cached_dispatch %g, %h : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat>
  %grad_x = moecomm.combine %grad_recv, %h : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat> -> tensor<?x64xbf16>
  return %grad_x : tensor<?x64xbf16>
}

// -----

// A plain all_to_all is never staged: nothing to say.
func.func @all_to_all(%s: tensor<?x64xbf16>, %c: tensor<8xi64>) -> tensor<?x64xbf16> {
  %r, %rc = moecomm.all_to_all %s, %c topology<ranks = 8, ranks_per_node = 4> : tensor<?x64xbf16>, tensor<8xi64>
  return %r : tensor<?x64xbf16>
}
