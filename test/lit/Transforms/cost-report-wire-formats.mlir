// The cost report sizes dispatch rows by wire format (WireFormat.h): at
// H = 40 a row is 40 + 4 * ceil(40/128) = 44 bytes (fp8_e4m3), 40 + 1 = 41
// (fp8_e4m3_ue8m0), 40 + ceil(40/32) = 42 (mxfp8): dispatch bytes in the
// ratio 44 : 41 : 42; combine rows are bf16 (80 bytes) for all three.
// RUN: moecomm-opt %s --moecomm-cost-report="preset=h200-dgx" -o /dev/null 2>&1 | FileCheck %s

// CHECK: hidden=40 wire=fp8_e4m3 tokens/rank=4096
// CHECK-NEXT: strategy
// CHECK-NEXT: per_expert   dispatch  0     global 11.534 10.093
// CHECK-NEXT: per_expert   combine   0     global 20.972 18.350
func.func @fp8_e4m3(%x: tensor<4096x40xbf16>, %idx: tensor<4096x8xi32>, %w: tensor<4096x8xf32>) -> tensor<?x40xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 16, ranks_per_node = 8, experts = 256> wire<fp8_e4m3> : tensor<4096x40xbf16>, tensor<4096x8xi32>, tensor<4096x8xf32>
  return %recv : tensor<?x40xbf16>
}

// CHECK: hidden=40 wire=fp8_e4m3_ue8m0 tokens/rank=4096
// CHECK-NEXT: strategy
// CHECK-NEXT: per_expert   dispatch  0     global 10.748 9.404
// CHECK-NEXT: per_expert   combine   0     global 20.972 18.350
func.func @fp8_e4m3_ue8m0(%x: tensor<4096x40xbf16>, %idx: tensor<4096x8xi32>, %w: tensor<4096x8xf32>) -> tensor<?x40xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 16, ranks_per_node = 8, experts = 256> wire<fp8_e4m3_ue8m0> : tensor<4096x40xbf16>, tensor<4096x8xi32>, tensor<4096x8xf32>
  return %recv : tensor<?x40xbf16>
}

// CHECK: hidden=40 wire=mxfp8 tokens/rank=4096
// CHECK-NEXT: strategy
// CHECK-NEXT: per_expert   dispatch  0     global 11.010 9.634
// CHECK-NEXT: per_expert   combine   0     global 20.972 18.350
func.func @mxfp8(%x: tensor<4096x40xbf16>, %idx: tensor<4096x8xi32>, %w: tensor<4096x8xf32>) -> tensor<?x40xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 16, ranks_per_node = 8, experts = 256> wire<mxfp8> : tensor<4096x40xbf16>, tensor<4096x8xi32>, tensor<4096x8xf32>
  return %recv : tensor<?x40xbf16>
}

