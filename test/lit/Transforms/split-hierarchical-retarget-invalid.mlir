// Retargeting (ranks=) fails with a diagnostic, never partially or with IR
// that no longer verifies.
// RUN: moecomm-opt %s -split-input-file -verify-diagnostics --moecomm-split-hierarchical="strategy=flat ranks=8"

// A handle in a signature must retarget like a dispatch's topology.
// expected-error @+1 {{cannot retarget 4 ranks x 2 per node to 8 ranks x 2 per node: experts (4) must be divisible by ranks (8) so every rank hosts the same number of experts}}
func.func @bwd(%y: tensor<?x64xbf16>, %h: !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 4, strategy = flat>) -> tensor<?x64xbf16> {
  %out = moecomm.combine %y, %h : tensor<?x64xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 4, strategy = flat> -> tensor<?x64xbf16>
  return %out : tensor<?x64xbf16>
}

// -----

// tokens_per_expert shrinks from [2] to [1]; arith.addi is typed [2].
func.func @add(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<2xi64> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  // expected-error @+1 {{cannot retarget to 8 ranks: operand #1 becomes 'tensor<1xi64>' (was 'tensor<2xi64>'), which 'arith.addi' does not accept; tensor.cast it to 'tensor<?xi64>' before this use}}
  %sum = arith.addi %tpe, %tpe : tensor<2xi64>
  return %sum : tensor<2xi64>
}

// -----

// The loop carries tensor<2xi64>: yielding tensor<1xi64> would break it.
func.func @loop(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>, %init: tensor<2xi64>) -> tensor<2xi64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %c1 step %c1 iter_args(%acc = %init) -> tensor<2xi64> {
    %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
    // expected-error @+1 {{cannot retarget to 8 ranks: operand #0 becomes 'tensor<1xi64>' (was 'tensor<2xi64>'), which 'scf.yield' does not accept; tensor.cast it to 'tensor<?xi64>' before this use}}
    scf.yield %tpe : tensor<2xi64>
  }
  return %r : tensor<2xi64>
}

// -----

func.func private @ext(tensor<2xi64>)
func.func @to_external(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  // expected-error @+1 {{cannot retarget to 8 ranks: operand #0 becomes 'tensor<1xi64>' (was 'tensor<2xi64>'), which the external function @ext does not take; tensor.cast it to 'tensor<?xi64>' before this use}}
  call @ext(%tpe) : (tensor<2xi64>) -> ()
  return
}

// -----

// 8 experts over 4 ranks and 32 over 16 both give tensor<2xi64>; over 8
// ranks they differ.
// expected-error @+1 {{this value would be both 'tensor<1xi64>' and 'tensor<4xi64>' once retargeted to 8 ranks; tensor.cast the values reaching it to 'tensor<?xi64>'}}
func.func @sink(%t: tensor<2xi64>) {
  return
}
func.func @two(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) {
  %r1, %rw1, %tpe1, %h1 = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %r2, %rw2, %tpe2, %h2 = moecomm.dispatch %x, %idx, %w topology<ranks = 16, ranks_per_node = 2, experts = 32> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  call @sink(%tpe1) : (tensor<2xi64>) -> ()
  call @sink(%tpe2) : (tensor<2xi64>) -> ()
  return
}

// -----

// 16 experts over 8 ranks keep tensor<2xi64>, which @sink no longer takes.
func.func @sink(%t: tensor<2xi64>) {
  return
}
func.func @mixed(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) {
  %r1, %rw1, %tpe1, %h1 = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %r2, %rw2, %tpe2, %h2 = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 2, experts = 16> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  call @sink(%tpe1) : (tensor<2xi64>) -> ()
  // expected-error @+1 {{cannot retype this func.call: operand #0 is 'tensor<2xi64>' but another call made @sink take 'tensor<1xi64>'}}
  call @sink(%tpe2) : (tensor<2xi64>) -> ()
  return
}

// -----

func.func @a2a(%rows: tensor<?x64xbf16>, %counts: tensor<4xi64>) -> tensor<?x64xbf16> {
  // expected-error @+1 {{cannot retarget this all_to_all from 4 to 8 ranks: its send_counts have the static shape 'tensor<4xi64>'; give them a dynamic shape ('tensor<?xi64>', checked against the ranks at run time)}}
  %recv, %rc = moecomm.all_to_all %rows, %counts topology<ranks = 4, ranks_per_node = 2> : tensor<?x64xbf16>, tensor<4xi64>
  return %recv : tensor<?x64xbf16>
}

// -----

// A constant index written for [2] still verifies on [1] but reads past it.
func.func @extract(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> i64 {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{cannot retarget to 8 ranks: operand #0 becomes 'tensor<1xi64>' (was 'tensor<2xi64>'), which 'tensor.extract' indexes into with positions written for the old shape; tensor.cast it to 'tensor<?xi64>' before this use}}
  %e = tensor.extract %tpe[%c1] : tensor<2xi64>
  return %e : i64
}

// -----

// A function taken by value (func.constant) keeps its old type.
func.func @layer(%x: tensor<?x64xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<2xi64> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x64xf32>, tensor<?x2xi64>, tensor<?x2xf32>
  return %tpe : tensor<2xi64>
}
func.func @top(%x: tensor<?x64xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{cannot retype @layer taken by value here: it becomes '(tensor<?x64xf32>, tensor<?x2xi64>, tensor<?x2xf32>) -> tensor<1xi64>'; call it directly with func.call}}
  %f = func.constant @layer : (tensor<?x64xf32>, tensor<?x2xi64>, tensor<?x2xf32>) -> tensor<2xi64>
  %t = func.call_indirect %f(%x, %idx, %w) : (tensor<?x64xf32>, tensor<?x2xi64>, tensor<?x2xf32>) -> tensor<2xi64>
  return %t : tensor<2xi64>
}
