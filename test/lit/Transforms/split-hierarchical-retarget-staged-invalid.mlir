// Retargeting staged IR (layout/permute/pack/exchange/unpack, already planned
// for a topology) whose plan changes on the new topology fails in the pass
// with its own diagnostic, never with staged ops the verifier then rejects.
// RUN: moecomm-opt %s -split-input-file -verify-diagnostics --moecomm-split-hierarchical="ranks=4 ranks-per-node=1"

// Hierarchical on 8 x 4: two stages; on 4 x 1 only an inter-node one.
func.func @two_to_one(%x: tensor<?x8xbf16>, %idx: tensor<?x1xi32>, %w: tensor<?x1xf32>) -> tensor<?x8xbf16> {
  // expected-error @+1 {{cannot retarget staged IR planned for hierarchical on 8 ranks x 4 per node to 4 ranks x 1 per node: its 2 exchange stage(s) (inter_node, intra_node) would become 1 exchange stage(s) (inter_node); retarget the collective IR (dispatch/combine, before moecomm-split-hierarchical) instead}}
  %h, %rw, %tpe = moecomm.layout %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 8> strategy<hierarchical> : tensor<?x1xi32>, tensor<?x1xf32>
  %p = moecomm.pack %x, %h dispatch stage 0 : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 8, strategy = hierarchical> -> tensor<?x8xbf16>
  %r = moecomm.exchange %p, %h dispatch stage 0 scope<inter_node> : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 8, strategy = hierarchical>
  %p1 = moecomm.pack %r, %h dispatch stage 1 : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 8, strategy = hierarchical> -> tensor<?x8xbf16>
  %r1 = moecomm.exchange %p1, %h dispatch stage 1 scope<intra_node> : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 8, strategy = hierarchical>
  %u = moecomm.unpack %r1, %h dispatch : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 8, strategy = hierarchical> -> tensor<?x8xbf16>
  return %u : tensor<?x8xbf16>
}

// -----

// Hierarchical on one node: one intra-node stage; on 4 x 1 an inter-node one.
func.func @scope_changes(%x: tensor<?x8xbf16>, %idx: tensor<?x1xi32>, %w: tensor<?x1xf32>) -> tensor<?x8xbf16> {
  // expected-error @+1 {{cannot retarget staged IR planned for hierarchical on 8 ranks x 8 per node to 4 ranks x 1 per node: its 1 exchange stage(s) (intra_node) would become 1 exchange stage(s) (inter_node)}}
  %h, %rw, %tpe = moecomm.layout %idx, %w topology<ranks = 8, ranks_per_node = 8, experts = 8> strategy<hierarchical> : tensor<?x1xi32>, tensor<?x1xf32>
  %p = moecomm.pack %x, %h dispatch stage 0 : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 8, experts = 8, strategy = hierarchical> -> tensor<?x8xbf16>
  %r = moecomm.exchange %p, %h dispatch stage 0 scope<intra_node> : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 8, experts = 8, strategy = hierarchical>
  %u = moecomm.unpack %r, %h dispatch : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 8, experts = 8, strategy = hierarchical> -> tensor<?x8xbf16>
  return %u : tensor<?x8xbf16>
}

// -----

// A staged handle in a signature: planned for flat on one rank (no stage).
func.func @bwd(%y: tensor<?x8xbf16>, %h: !moecomm.handle<ranks = 1, ranks_per_node = 1, experts = 4, strategy = flat>) -> tensor<?x8xbf16> {
  // expected-error @+1 {{cannot retarget staged IR planned for flat on 1 ranks x 1 per node to 4 ranks x 1 per node: its no exchange stage would become 1 exchange stage(s) (global)}}
  %u = moecomm.unpack %y, %h combine : tensor<?x8xbf16>, !moecomm.handle<ranks = 1, ranks_per_node = 1, experts = 4, strategy = flat> -> tensor<?x8xbf16>
  return %u : tensor<?x8xbf16>
}
