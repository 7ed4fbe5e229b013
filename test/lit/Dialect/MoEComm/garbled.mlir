// Garbled input gives a diagnostic with a location and a non-zero exit, never
// a crash.
// RUN: not moecomm-opt %s -split-input-file 2>&1 | FileCheck %s

// CHECK: garbled.mlir:[[@LINE+1]]:{{[0-9]+}}: error: expected ')'
func.func @truncated(%x: tensor<?x8xbf16>, %i: tensor<?x2xi32>

// -----

// CHECK: garbled.mlir:[[@LINE+1]]:{{[0-9]+}}: error: duplicate or unknown struct parameter name: bogus
func.func @f() attributes {t = #moecomm.topology<ranks = 4, bogus = 2>} { return }

// -----

// CHECK: garbled.mlir:[[@LINE+1]]:{{[0-9]+}}: error: expected ::mlir::moecomm::WireDtype to be one of: f32, bf16, fp8_e4m3
func.func @f() attributes {w = #moecomm.wire<fp16>} { return }

// -----

// CHECK: garbled.mlir:[[@LINE+1]]:{{[0-9]+}}: error: expected ::mlir::moecomm::Strategy to be one of: per_expert, flat, hierarchical, auto
func.func @f() attributes {s = #moecomm.strategy<fastest>} { return }

// -----

// CHECK: garbled.mlir:[[@LINE+1]]:{{[0-9]+}}: error: unknown attribute `nonsense` in dialect `moecomm`
func.func @f() attributes {t = #moecomm.nonsense<1>} { return }

// -----

// CHECK: garbled.mlir:[[@LINE+1]]:{{[0-9]+}}: error: unknown  type `bogus` in dialect `moecomm`
func.func @f(%h: !moecomm.bogus) { return }

// -----

func.func @f(%x: tensor<?x8xbf16>, %h: !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>) {
  // CHECK: garbled.mlir:[[@LINE+1]]:{{[0-9]+}}: error: use of value '%h' expects different type than prior uses: '!moecomm.handle<ranks = 4, ranks_per_node = 1, experts = 4>' vs '!moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>'
  %0 = moecomm.combine %x, %h : tensor<?x8xbf16>, !moecomm.handle<ranks = 4, ranks_per_node = 1, experts = 4> -> tensor<?x8xbf16>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>) {
  // CHECK: garbled.mlir:[[@LINE+1]]:{{[0-9]+}}: error: custom op 'moecomm.dispatch' expected 'topology'
  %0:4 = moecomm.dispatch %x, %i, %w : tensor<?x8xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %h: !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>) {
  // CHECK: garbled.mlir:[[@LINE+1]]:{{[0-9]+}}: error: custom op 'moecomm.permute' expected `dispatch` or `combine`, got `sideways`
  %0 = moecomm.permute %x, %h sideways output : tensor<?x8xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>) {
  // CHECK: garbled.mlir:[[@LINE+1]]:{{[0-9]+}}: error: 'moecomm.dispatch' op requires attribute 'topology'
  %0:4 = "moecomm.dispatch"(%x, %i, %w) : (tensor<?x8xbf16>, tensor<?x2xi32>, tensor<?x2xf32>) -> (tensor<?x8xbf16>, tensor<?xf32>, tensor<2xi64>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>)
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>) {
  // CHECK: garbled.mlir:[[@LINE+1]]:{{[0-9]+}}: error: 'moecomm.dispatch' op expected 3 operands, but found 2
  %0:4 = "moecomm.dispatch"(%x, %i) {topology = #moecomm.topology<ranks = 2, ranks_per_node = 1, experts = 4>} : (tensor<?x8xbf16>, tensor<?x2xi32>) -> (tensor<?x8xbf16>, tensor<?xf32>, tensor<2xi64>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>)
  return
}

// -----

// A file that ends in the middle of an op.
// CHECK: garbled.mlir:[[@LINE+2]]:{{[0-9]+}}: error: expected '='
func.func @f(%x: tensor<?x8xbf16>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>) {
  %0:4 = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per
