// Retargeting (ranks=) re-types the results whose types depend on the ranks
// and carries the new types through function signatures.
// RUN: moecomm-opt %s -split-input-file --moecomm-split-hierarchical="strategy=flat ranks=8" | FileCheck %s

// tokens_per_expert goes from [8/4] to [8/8], through @layer's result, the
// call in @top and @top's result; a cast to a dynamic shape still takes it.
// CHECK-LABEL: func.func @layer
// CHECK-SAME: -> (tensor<?x64xf32>, tensor<1xi64>, tensor<?xi64>)
// CHECK: %{{.*}}, %{{.*}}, %[[TPE:.*]] = moecomm.layout {{.*}} topology<ranks = 8, ranks_per_node = 2, experts = 8>
// CHECK: %[[DYN:.*]] = tensor.cast %[[TPE]] : tensor<1xi64> to tensor<?xi64>
// CHECK: return %{{.*}}, %[[TPE]], %[[DYN]] : tensor<?x64xf32>, tensor<1xi64>, tensor<?xi64>
// CHECK-LABEL: func.func @top
// CHECK-SAME: -> tensor<1xi64>
// CHECK: %{{.*}}:3 = call @layer({{.*}}) : ({{.*}}) -> (tensor<?x64xf32>, tensor<1xi64>, tensor<?xi64>)
func.func @layer(%x: tensor<?x64xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> (tensor<?x64xf32>, tensor<2xi64>, tensor<?xi64>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 4, ranks_per_node = 2, experts = 8> : tensor<?x64xf32>, tensor<?x2xi64>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x64xf32>, !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> -> tensor<?x64xf32>
  %dyn = tensor.cast %tpe : tensor<2xi64> to tensor<?xi64>
  return %out, %tpe, %dyn : tensor<?x64xf32>, tensor<2xi64>, tensor<?xi64>
}
func.func @top(%x: tensor<?x64xf32>, %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>) -> tensor<2xi64> {
  %out, %tpe, %dyn = call @layer(%x, %idx, %w) : (tensor<?x64xf32>, tensor<?x2xi64>, tensor<?x2xf32>) -> (tensor<?x64xf32>, tensor<2xi64>, tensor<?xi64>)
  return %tpe : tensor<2xi64>
}

// -----

// Dynamic send_counts follow any rank count; recv_counts become [8], also
// as the second all_to_all's send_counts and in the signature.
// CHECK-LABEL: func.func @round_trip
// CHECK-SAME: (%{{.*}}: tensor<?x64xbf16>, %{{.*}}: tensor<?xi64>) -> (tensor<?x64xbf16>, tensor<8xi64>)
// CHECK: %[[RECV:.*]], %[[COUNTS:.*]] = moecomm.all_to_all %{{.*}}, %{{.*}} topology<ranks = 8, ranks_per_node = 2> : tensor<?x64xbf16>, tensor<?xi64>
// CHECK: moecomm.all_to_all %[[RECV]], %[[COUNTS]] topology<ranks = 8, ranks_per_node = 2> : tensor<?x64xbf16>, tensor<8xi64>
func.func @round_trip(%rows: tensor<?x64xbf16>, %counts: tensor<?xi64>) -> (tensor<?x64xbf16>, tensor<4xi64>) {
  %recv, %rc = moecomm.all_to_all %rows, %counts topology<ranks = 4, ranks_per_node = 2> : tensor<?x64xbf16>, tensor<?xi64>
  %back, %rc2 = moecomm.all_to_all %recv, %rc topology<ranks = 4, ranks_per_node = 2> : tensor<?x64xbf16>, tensor<4xi64>
  return %back, %rc2 : tensor<?x64xbf16>, tensor<4xi64>
}
