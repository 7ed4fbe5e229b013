// moecomm-opt's check for attributes of an unregistered dialect covers
// locations too (a fused location's metadata is an attribute), on ops and
// on block arguments; --allow-unregistered-dialect accepts them, as in
// mlir-opt.
// RUN: moecomm-opt %s -split-input-file -verify-diagnostics
// RUN: moecomm-opt %s -split-input-file --allow-unregistered-dialect --mlir-print-debuginfo | FileCheck %s
// CHECK-DAG: loc(fused<#foo.bar>[
// CHECK-DAG: loc(fused<#foo.baz>[

func.func @op_location(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>) -> tensor<6x16xbf16> {
  // The error is at the op's location, which has no file position.
  // expected-error @unknown {{an attribute or type of an unregistered dialect: moecomm-opt accepts only JAX's ragged all-to-all unregistered, or any with --allow-unregistered-dialect}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %a, %a, %a) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16> loc(fused<#foo.bar>["a"])
  return %r : tensor<6x16xbf16>
}

// -----

// expected-error @+1 {{an attribute or type of an unregistered dialect}}
func.func @argument_location(%x: tensor<8x16xbf16> loc(fused<#foo.baz>["b"])) -> tensor<8x16xbf16> {
  return %x : tensor<8x16xbf16>
}
