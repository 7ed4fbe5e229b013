// moecomm-pipeline refuses JAX's ragged all-to-all not imported first, with
// one error at the call, before any pass trips on the unregistered op.
// RUN: moecomm-opt %s -verify-diagnostics --moecomm-pipeline="ranks=4 ranks-per-node=2"
// An imported graph goes through (the call is gone).
// RUN: moecomm-opt %s --moecomm-import-ragged-all-to-all --moecomm-pipeline="ranks=4 ranks-per-node=2" | FileCheck %s
// CHECK: llvm.func @f
// CHECK-NOT: stablehlo

func.func @f(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{stablehlo.custom_call @ragged_all_to_all must be imported first: run --moecomm-import-ragged-all-to-all}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}
