// Handles and requests are retyped in function signatures, calls and returns
// only: one that another op carries (here an scf.for iter_arg) is an error,
// not a crash or a cast left for mlir-translate to reject.
// RUN: moecomm-opt %s --convert-moecomm-to-runtime -verify-diagnostics

!h = !moecomm.handle<ranks = 2, ranks_per_node = 2, experts = 2, strategy = flat>
// expected-error @below {{a moecomm handle or request is still used by an op the runtime lowering does not know}}
func.func @carried(%x: tensor<?x8xf32>, %h: !h, %n: index) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x, %carried = %h) -> (tensor<?x8xf32>, !h) {
    %p = moecomm.permute %acc, %carried dispatch output : tensor<?x8xf32>, !h
    scf.yield %p, %carried : tensor<?x8xf32>, !h
  }
  return %r#0 : tensor<?x8xf32>
}
