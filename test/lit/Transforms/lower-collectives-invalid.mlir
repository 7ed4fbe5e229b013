// moecomm-lower-collectives needs every strategy: a dispatch's (chosen by
// moecomm-select-strategy) and a handle's (its type's, or strategy=).
// RUN: moecomm-opt %s -split-input-file -verify-diagnostics --moecomm-lower-collectives

func.func @not_selected(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x64xbf16> {
  // expected-error @+1 {{this dispatch has no strategy yet; run moecomm-select-strategy first (or moecomm-split-hierarchical, which does)}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  return %recv : tensor<?x64xbf16>
}

// -----

func.func @unknown_handle(%dy: tensor<?x64xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) -> tensor<?x64xbf16> {
  // expected-error @+1 {{cannot tell which strategy this handle was planned with (it does not come from a dispatch in this module); set strategy= or the handle type's strategy}}
  %dx = moecomm.combine %dy, %h : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xbf16>
  return %dx : tensor<?x64xbf16>
}

// -----

// The staged level's FP8 rows carry fp8_e4m3's f32 1x128 scales: E8M0 wires
// are the runtime's only.
func.func @e8m0_wire(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x64xbf16> {
  // expected-error @+1 {{wire<mxfp8> has no staged form (the staged FP8 ops carry f32 1x128 scales); use wire<fp8_e4m3> here, or the runtime (moecommDispatch, moecomm-run --direct) for E8M0 scales}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> wire<mxfp8> strategy<flat> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  return %recv : tensor<?x64xbf16>
}

// -----

func.func @e8m0_cached(%x: tensor<?x64xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat>) -> tensor<?x64xbf16> {
  // expected-error @+1 {{wire<fp8_e4m3_ue8m0> has no staged form}}
  %recv = moecomm.cached_dispatch %x, %h wire<fp8_e4m3_ue8m0> : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat>
  return %recv : tensor<?x64xbf16>
}
