// Retargeting the experts (experts=) fails like ranks=: with a diagnostic
// naming the use that cannot follow E/W, never with IR that no longer
// verifies.
// RUN: moecomm-opt %s -split-input-file -verify-diagnostics --moecomm-configure-collectives="experts=4"
// RUN: not moecomm-opt %s --moecomm-configure-collectives="ranks=2 experts=16" 2>&1 | FileCheck %s --check-prefix=BOTH
// BOTH: error: cannot retarget to 2 ranks and 16 experts: operand #1 becomes 'tensor<8xi64>' (was 'tensor<2xi64>')

// tokens_per_expert shrinks from [2] to [1]; arith.addi is typed [2].
func.func @add(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<2xi64> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  // expected-error @+1 {{cannot retarget to 4 experts: operand #1 becomes 'tensor<1xi64>' (was 'tensor<2xi64>'), which 'arith.addi' does not accept; tensor.cast it to 'tensor<?xi64>' before this use}}
  %sum = arith.addi %tpe, %tpe : tensor<2xi64>
  return %sum : tensor<2xi64>
}

// -----

// expert_offsets shrinks from [3] to [2]; tensor.extract indexes it as [3].
func.func @offsets_extract(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> i64 {
  %c2 = arith.constant 2 : index
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> align(16) : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %offs = moecomm.expert_offsets %h : !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8>
  // expected-error @+1 {{cannot retarget to 4 experts: operand #0 becomes 'tensor<2xi64>' (was 'tensor<3xi64>'), which 'tensor.extract' indexes into with positions written for the old shape; tensor.cast it to 'tensor<?xi64>' before this use}}
  %end = tensor.extract %offs[%c2] : tensor<3xi64>
  return %end : i64
}
