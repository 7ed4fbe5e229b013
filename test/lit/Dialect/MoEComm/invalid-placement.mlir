// One case per verifier message of a topology's expert placement and of a
// handle's slots. The placement's own rules are checkPlacement's
// (moecomm/Model/Placement.h), reported with its message.
// RUN: moecomm-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{slots = 6 needs its expert placement (placement = array<i64: ...>, the logical expert of each slot)}}
func.func @f() attributes {t = #moecomm.topology<ranks = 2, ranks_per_node = 1, experts = 4, slots = 6>} { return }

// -----

// expected-error @+1 {{an expert placement needs its slot count (slots = 4)}}
func.func @f() attributes {t = #moecomm.topology<ranks = 2, ranks_per_node = 1, experts = 4, placement = array<i64: 0, 1, 2, 3>>} { return }

// -----

// expected-error @+1 {{replica_choice = load_only needs an expert placement to choose among}}
func.func @f() attributes {t = #moecomm.topology<ranks = 2, ranks_per_node = 1, experts = 4, replica_choice = load_only>} { return }

// -----

// expected-error @+1 {{slots (6) must equal the placement's length (4)}}
func.func @f() attributes {t = #moecomm.topology<ranks = 2, ranks_per_node = 1, experts = 4, slots = 6, placement = array<i64: 0, 1, 2, 3>>} { return }

// -----

// expected-error @+1 {{slots must be in [1, 2147483647], got -2}}
func.func @f() attributes {t = #moecomm.topology<ranks = 2, ranks_per_node = 1, experts = 4, slots = -2, placement = array<i64: 0, 1, 2, 3>>} { return }

// -----

// expected-error @+1 {{placement: logical expert 3 has no slot}}
func.func @f() attributes {t = #moecomm.topology<ranks = 2, ranks_per_node = 1, experts = 4, slots = 4, placement = array<i64: 0, 1, 2, 2>>} { return }

// -----

// expected-error @+1 {{placement: slot 1 holds expert 4, out of range [0, 4)}}
func.func @f() attributes {t = #moecomm.topology<ranks = 2, ranks_per_node = 1, experts = 4, slots = 6, placement = array<i64: 0, 4, 2, 3, 0, 1>>} { return }

// -----

// expected-error @+1 {{placement: 6 slots are not divisible by 4 ranks}}
func.func @f() attributes {t = #moecomm.topology<ranks = 4, ranks_per_node = 2, experts = 4, slots = 6, placement = array<i64: 0, 1, 2, 3, 0, 1>>} { return }

// -----

// expected-error @+1 {{placement: 4 slots for 6 logical experts (need at least one each)}}
func.func @f() attributes {t = #moecomm.topology<ranks = 2, ranks_per_node = 1, experts = 6, slots = 4, placement = array<i64: 0, 1, 2, 3>>} { return }

// -----

// A placement names logical experts: it needs `experts`.
// expected-error @+1 {{placement: num_logical_experts must be >= 1, got 0}}
func.func @f() attributes {t = #moecomm.topology<ranks = 2, ranks_per_node = 1, slots = 2, placement = array<i64: 0, 0>>} { return }

// -----

// expected-error @+2 {{expected the placement as array<i64: ...>, got [0, 1]}}
// expected-error @+1 {{failed to parse MoEComm_TopologyAttr parameter 'placement'}}
func.func @f() attributes {t = #moecomm.topology<ranks = 2, ranks_per_node = 1, experts = 2, slots = 2, placement = [0, 1]>} { return }

// -----

// expected-error @+2 {{expected one of [locality, load_only] for how the layout picks one replica of a replicated expert, got: nearest}}
// expected-error @+1 {{failed to parse MoEComm_TopologyAttr parameter 'replica_choice'}}
func.func @f() attributes {t = #moecomm.topology<ranks = 2, ranks_per_node = 1, experts = 2, slots = 2, placement = array<i64: 0, 1>, replica_choice = nearest>} { return }

// -----

// expected-error @+1 {{slots (6) must be a multiple of ranks (4) and at least experts (4), as the placement's it was computed with}}
func.func @f(%h: !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 4, slots = 6>) { return }
