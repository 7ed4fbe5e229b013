// Values wider than their column still leave a space between the columns.
// RUN: moecomm-opt %s --moecomm-cost-report=tokens-per-rank=9223372036854775807 -o /dev/null 2>&1 | FileCheck %s --strict-whitespace

// CHECK: tokens/rank=9223372036854775807 (assumed)
// CHECK: {{^}}  per_expert   dispatch  0     global       4722366482869645.000 2361183241434822.500 23611832414348236.0{{$}}
// CHECK: {{^}}  per_expert   total {{ +}} 47223664828696472.0{{$}}
// CHECK: {{^}}  hierarchical dispatch  1     intra_node             0.000 4385054591236099.500 2436141439575612.5{{$}}
func.func @layer(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x64xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x64xbf16>
  return %out : tensor<?x64xbf16>
}
