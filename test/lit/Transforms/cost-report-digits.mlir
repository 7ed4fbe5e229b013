// Every digit of a huge modelled size is printed (formatv's own double
// formatting cut values of 10^27 and more to 31 characters, which made the
// combine's bytes look smaller than the dispatch's).
// RUN: moecomm-opt %s --moecomm-cost-report -o /dev/null 2>&1 | FileCheck %s

// CHECK: per_expert   dispatch  0     global       43864482008625396855409758699520.000
// CHECK: per_expert   combine   0     global       170141021121964326918200120836096.000
func.func @huge(%x: tensor<4611686018427387903x2147483647xf32>, %idx: tensor<4611686018427387903x4096xi32>, %w: tensor<4611686018427387903x4096xf32>) -> tensor<?x2147483647xf32> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 1048576, ranks_per_node = 1, experts = 1048576> wire<fp8_e4m3> : tensor<4611686018427387903x2147483647xf32>, tensor<4611686018427387903x4096xi32>, tensor<4611686018427387903x4096xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x2147483647xf32>, !moecomm.handle<ranks = 1048576, ranks_per_node = 1, experts = 1048576> -> tensor<4611686018427387903x2147483647xf32>
  return %recv : tensor<?x2147483647xf32>
}
