// The names moecomm_rt_* belong to the runtime's compiled-code ABI
// (moecomm_compiled.h): a module that declares one with other types, or uses
// the name for something else, gets an error, not a crash or a call the
// runtime cannot serve.
// RUN: moecomm-opt %s -split-input-file --convert-moecomm-to-runtime -verify-diagnostics

func.func private @moecomm_rt_rows(i32)
func.func @declared_otherwise(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x64xbf16> {
  // expected-error @below {{'@moecomm_rt_rows' is reserved for the runtime ABI, which calls it as '(!llvm.ptr, i32, i64, i32) -> i64', but the module declares it as '(i32) -> ()'}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  return %recv : tensor<?x64xbf16>
}

// -----

memref.global "private" @moecomm_rt_rows : memref<i64>
func.func @named_otherwise(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x64xbf16> {
  // expected-error @below {{'@moecomm_rt_rows' is reserved for the runtime ABI, which calls it as '(!llvm.ptr, i32, i64, i32) -> i64', but the module defines that name as something else}}
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  return %recv : tensor<?x64xbf16>
}
