// RUN: moecomm-opt %s -split-input-file -verify-diagnostics --moecomm-split-hierarchical=strategy=auto
// RUN: not moecomm-opt %s -split-input-file --moecomm-split-hierarchical=strategy=fastest 2>&1 | FileCheck %s --check-prefix=STRATEGY
// RUN: not moecomm-opt %s -split-input-file --moecomm-split-hierarchical=ranks=32 2>&1 | FileCheck %s --check-prefix=RANKS
// RUN: not moecomm-opt %s -split-input-file --moecomm-split-hierarchical=ranks-per-node=3 2>&1 | FileCheck %s --check-prefix=PERNODE
// RUN: not moecomm-opt %s -split-input-file --moecomm-split-hierarchical="ranks=2097152 ranks-per-node=1" 2>&1 | FileCheck %s --check-prefix=LIMIT
// RUN: not moecomm-opt %s -split-input-file --moecomm-split-hierarchical=wire-dtype=fp16 2>&1 | FileCheck %s --check-prefix=WIRE

// STRATEGY: moecomm-opt: for the --strategy option: Cannot find option named 'fastest'!
// WIRE: moecomm-opt: for the --wire-dtype option: Cannot find option named 'fp16'!
// RANKS: error: cannot retarget 8 ranks x 4 per node to 32 ranks x 4 per node: experts (16) must be divisible by ranks (32) so every rank hosts the same number of experts
// PERNODE: error: cannot retarget 8 ranks x 4 per node to 8 ranks x 3 per node: ranks (8) must be a multiple of ranks_per_node (3)
// LIMIT: error: cannot retarget 8 ranks x 4 per node to 2097152 ranks x 1 per node: ranks must be in [1, 1048576], got 2097152

func.func @backward(%dy: tensor<?x64xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) -> tensor<?x64xbf16> {
  // expected-error @+1 {{cannot tell which strategy this handle was planned with (it does not come from a dispatch in this module); set strategy= or the handle type's strategy}}
  %dx = moecomm.combine %dy, %h : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xbf16>
  return %dx : tensor<?x64xbf16>
}
func.func @forward(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x64xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  return %recv : tensor<?x64xbf16>
}

// -----

// With strategy=auto the cost model picks flat for one token per rank and
// hierarchical for 100000; both layouts cannot share one backward function.
// expected-error @+1 {{this handle receives layouts planned with different strategies (flat and hierarchical); give the dispatches the same strategy<...>}}
func.func @backward(%dy: tensor<?x64xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) -> tensor<?x64xbf16> {
  %dx = moecomm.combine %dy, %h : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xbf16>
  return %dx : tensor<?x64xbf16>
}
func.func @two(%x1: tensor<1x64xbf16>, %i1: tensor<1x2xi32>, %w1: tensor<1x2xf32>, %x2: tensor<100000x64xbf16>, %i2: tensor<100000x2xi32>, %w2: tensor<100000x2xf32>, %dy: tensor<?x64xbf16>) {
  %r1, %rw1, %tpe1, %h1 = moecomm.dispatch %x1, %i1, %w1 topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<1x64xbf16>, tensor<1x2xi32>, tensor<1x2xf32>
  %r2, %rw2, %tpe2, %h2 = moecomm.dispatch %x2, %i2, %w2 topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<100000x64xbf16>, tensor<100000x2xi32>, tensor<100000x2xf32>
  %d1 = call @backward(%dy, %h1) : (tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) -> tensor<?x64xbf16>
  %d2 = call @backward(%dy, %h2) : (tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @through_cast(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x64xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  // expected-error @+1 {{cannot carry a moecomm handle through 'builtin.unrealized_conversion_cast'; pass it directly between dispatch, combine, func.call and func.return}}
  %c = builtin.unrealized_conversion_cast %h : !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> to i64
  return %recv : tensor<?x64xbf16>
}

// -----

// An external function's signature cannot record the strategy.
func.func private @ext(!moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>)
func.func @to_external(%x: tensor<1x64xbf16>, %idx: tensor<1x2xi32>, %w: tensor<1x2xf32>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<1x64xbf16>, tensor<1x2xi32>, tensor<1x2xf32>
  // expected-error @+1 {{cannot record this handle's strategy in the signature of the external function @ext; define it in this module, or declare its argument #0 with strategy = flat and give the dispatch strategy<flat>}}
  call @ext(%h) : (!moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) -> ()
  return
}

// -----

// @backward takes the strategy of @forward's dispatch, which @other's handle
// does not have.
func.func @backward(%dy: tensor<?x64xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) -> tensor<?x64xbf16> {
  %dx = moecomm.combine %dy, %h : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xbf16>
  return %dx : tensor<?x64xbf16>
}
func.func @forward(%x: tensor<1x64xbf16>, %idx: tensor<1x2xi32>, %w: tensor<1x2xf32>, %dy: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<1x64xbf16>, tensor<1x2xi32>, tensor<1x2xf32>
  %dx = call @backward(%dy, %h) : (tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) -> tensor<?x64xbf16>
  return %dx : tensor<?x64xbf16>
}
func.func @other(%dy: tensor<?x64xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) -> tensor<?x64xbf16> {
  // expected-error @+1 {{cannot retype this func.call: operand #1 is '!moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>' but another call made @backward take '!moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat>'}}
  %dx = call @backward(%dy, %h) : (tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) -> tensor<?x64xbf16>
  return %dx : tensor<?x64xbf16>
}
