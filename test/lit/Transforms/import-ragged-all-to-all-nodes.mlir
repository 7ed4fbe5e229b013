// moecomm-import-ragged-all-to-all's ranks-per-node must divide the group's
// size (an error at the call), and be >= 0 (an option error).
// RUN: moecomm-opt %s -verify-diagnostics --moecomm-import-ragged-all-to-all=ranks-per-node=3
// RUN: not moecomm-opt %s --moecomm-import-ragged-all-to-all=ranks-per-node=-1 2>&1 | FileCheck %s --check-prefix=OPTION
// OPTION: error: moecomm-import-ragged-all-to-all: ranks-per-node must be >= 0 (0: the group's size, one node), got -1

func.func @nodes(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: ranks-per-node=3 does not divide the group's 4 ranks}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}
