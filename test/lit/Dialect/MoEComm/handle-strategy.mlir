// A concrete strategy<S> on a dispatch is part of its handle's type (as the
// dispatch and handle docs say): consumers spell it.
// RUN: moecomm-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @spelled
// CHECK: moecomm.combine %{{.*}}, %{{.*}} weighted : tensor<?x8xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4, strategy = flat>
func.func @spelled(%x: tensor<?x8xbf16>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x8xbf16> {
  %r, %rw, %tpe, %h = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> strategy<flat> : tensor<?x8xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %0 = moecomm.combine %r, %h weighted : tensor<?x8xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4, strategy = flat> -> tensor<?x8xbf16>
  return %0 : tensor<?x8xbf16>
}

// -----

func.func @not_spelled(%x: tensor<?x8xbf16>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>) {
  // expected-note @+1 {{prior use here}}
  %r, %rw, %tpe, %h = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> strategy<flat> : tensor<?x8xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  // expected-error @+1 {{use of value '%h' expects different type than prior uses: '!moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>' vs '!moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4, strategy = flat>'}}
  %0 = moecomm.combine %r, %h weighted : tensor<?x8xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4> -> tensor<?x8xbf16>
  return
}
