// moecomm-select-strategy's errors: where a handle's strategy cannot be recorded.
// RUN: moecomm-opt %s -split-input-file -verify-diagnostics --moecomm-select-strategy=strategy=flat

// A handle cannot reach an external function, whose signature is not this
// module's to change.
func.func private @keep(!moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>)
func.func @leak(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  // expected-error @+1 {{cannot record this handle's strategy in the signature of the external function @keep; define it in this module, or declare its argument #0 with strategy = flat and give the dispatch strategy<flat>}}
  call @keep(%h) : (!moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) -> ()
  return
}
