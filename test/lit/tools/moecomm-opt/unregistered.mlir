// moecomm-opt parses unregistered operations only for JAX's
// stablehlo.custom_call @ragged_all_to_all (moecomm-import-ragged-all-to-all
// converts it): any other, and an attribute or type of an unregistered
// dialect, is one error before any pass; --allow-unregistered-dialect
// accepts everything, as in mlir-opt.
// RUN: moecomm-opt %s -split-input-file -verify-diagnostics
// RUN: moecomm-opt %s -split-input-file --allow-unregistered-dialect | FileCheck %s
// CHECK: "stablehlo.custom_call"({{.*}}call_target_name = "ragged_all_to_all"
// CHECK: "stablehlo.custom_call"({{.*}}call_target_name = "other"
// CHECK: "foo.bar"
// CHECK: !foo.token

func.func @ragged(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>) -> tensor<6x16xbf16> {
  %r = "stablehlo.custom_call"(%x, %o, %a, %a, %a, %a) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}

// -----

func.func @other_target(%x: tensor<8x16xbf16>) -> tensor<8x16xbf16> {
  // expected-error @+1 {{unregistered operation 'stablehlo.custom_call': moecomm-opt accepts only JAX's "stablehlo.custom_call" with call_target_name = "ragged_all_to_all" (see --moecomm-import-ragged-all-to-all), or any with --allow-unregistered-dialect}}
  %r = "stablehlo.custom_call"(%x) {call_target_name = "other", api_version = 4 : i32} : (tensor<8x16xbf16>) -> tensor<8x16xbf16>
  return %r : tensor<8x16xbf16>
}

// -----

func.func @other_op(%x: tensor<8x16xbf16>) -> tensor<8x16xbf16> {
  // expected-error @+1 {{unregistered operation 'foo.bar'}}
  %r = "foo.bar"(%x) : (tensor<8x16xbf16>) -> tensor<8x16xbf16>
  return %r : tensor<8x16xbf16>
}

// -----

// expected-error @+1 {{an attribute or type of an unregistered dialect: moecomm-opt accepts only JAX's ragged all-to-all unregistered, or any with --allow-unregistered-dialect}}
func.func @opaque_type(%t: !foo.token) {
  return
}
