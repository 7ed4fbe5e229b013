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
