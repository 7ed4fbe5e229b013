// Graphs that break moecomm-run's graph contract (docs/moecomm-run.md), or
// keep it in odd ways, for invalid-graph.test.

func.func @two_args(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>) -> tensor<?x16xbf16> {
  return %x : tensor<?x16xbf16>
}

func.func @wrong_result(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %c = tensor.cast %e : tensor<4x8xf32> to tensor<?x8xf32>
  return %c : tensor<?x8xf32>
}

func.func @static_tokens(%x: tensor<8x16xbf16>, %idx: tensor<8x2xi32>, %w: tensor<8x2xf32>) -> tensor<8x16xbf16> {
  return %x : tensor<8x16xbf16>
}

func.func @other_experts(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x16xbf16> {
  %out = call @layer8(%x, %idx, %w) : (tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>) -> tensor<?x16xbf16>
  return %out : tensor<?x16xbf16>
}
func.func private @layer8(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x16xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 2, ranks_per_node = 1, experts = 8> : tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x16xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 8> -> tensor<?x16xbf16>
  return %out : tensor<?x16xbf16>
}

// Keeps the contract but returns its input (no combine happened) and the
// same buffer twice: verification fails, nothing is freed twice.
func.func @aliased_results(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> (tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?xf32>, tensor<?xi64>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %c = tensor.cast %tpe : tensor<2xi64> to tensor<?xi64>
  return %x, %recv, %rw, %c : tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?xf32>, tensor<?xi64>
}
func.func @same_twice(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> (tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?xf32>, tensor<?xi64>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %c = tensor.cast %tpe : tensor<2xi64> to tensor<?xi64>
  return %recv, %recv, %rw, %c : tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?xf32>, tensor<?xi64>
}

// A static token count in another argument or in a result than x.
func.func @static_idx(%x: tensor<?x16xbf16>, %idx: tensor<8x2xi32>, %w: tensor<8x2xf32>) -> tensor<?x16xbf16> {
  return %x : tensor<?x16xbf16>
}
func.func @static_out(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<8x16xbf16> {
  %out = tensor.cast %x : tensor<?x16xbf16> to tensor<8x16xbf16>
  return %out : tensor<8x16xbf16>
}

// Expert weights of the wrong shape (invalid-ffn-weights.test): w_down
// transposed ([E/W, I, H] instead of nn.Linear's [E/W, H, I]), w_gate in
// the math's [E/W, H, I] instead of nn.Linear's [E/W, I, H], an I that is
// not static or is 0, and a static expert count other than the run's E/W.
func.func @ffn_down_transposed(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>,
                               %wg: tensor<?x8x16xf32>, %wu: tensor<?x8x16xf32>, %wd: tensor<?x8x16xf32>) -> tensor<?x16xbf16> {
  return %x : tensor<?x16xbf16>
}
func.func @ffn_gate_not_transposed(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>,
                                   %wg: tensor<?x16x8xf32>, %wu: tensor<?x16x8xf32>, %wd: tensor<?x8x16xf32>) -> tensor<?x16xbf16> {
  return %x : tensor<?x16xbf16>
}
func.func @ffn_dynamic_intermediate(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>,
                                    %wg: tensor<?x?x16xf32>, %wu: tensor<?x?x16xf32>, %wd: tensor<?x16x?xf32>) -> tensor<?x16xbf16> {
  return %x : tensor<?x16xbf16>
}
func.func @ffn_empty_intermediate(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>,
                                  %wg: tensor<?x0x16xf32>, %wu: tensor<?x0x16xf32>, %wd: tensor<?x16x0xf32>) -> tensor<?x16xbf16> {
  return %x : tensor<?x16xbf16>
}
func.func @ffn_local_experts(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>,
                             %wg: tensor<4x8x16xf32>, %wu: tensor<4x8x16xf32>, %wd: tensor<4x16x8xf32>) -> tensor<?x16xbf16> {
  return %x : tensor<?x16xbf16>
}
// Weights no machine holds: 2^30 x 16 f32 per matrix and expert.
func.func @ffn_huge(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>,
                    %wg: tensor<?x1073741824x16xf32>, %wu: tensor<?x1073741824x16xf32>, %wd: tensor<?x16x1073741824xf32>) -> tensor<?x16xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x16xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4> -> tensor<?x16xbf16>
  return %out : tensor<?x16xbf16>
}
// A training step whose backward computes a layout of its own: the oracle
// counts one layout per step.
func.func @training_two_layouts(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>, %g: tensor<?x16xbf16>)
    -> (tensor<?x16xbf16>, tensor<?x16xbf16>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x16xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4> -> tensor<?x16xbf16>
  %grecv, %grw, %gtpe, %gh = moecomm.dispatch %g, %idx, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %gx = moecomm.combine %grecv, %gh : tensor<?x16xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4> -> tensor<?x16xbf16>
  return %out, %gx : tensor<?x16xbf16>, tensor<?x16xbf16>
}
// Rows moved by a dispatch and by an all_to_all (e.g. a per-expert chain
// left unraised next to a raised one).
func.func @dispatch_and_all_to_all(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x16xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x16xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x16xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4> -> tensor<?x16xbf16>
  %none = arith.constant dense<0> : tensor<2xi64>
  %r, %rc = moecomm.all_to_all %out, %none topology<ranks = 2, ranks_per_node = 1> : tensor<?x16xbf16>, tensor<2xi64>
  return %out : tensor<?x16xbf16>
}
