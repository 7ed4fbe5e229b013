// moecomm-configure-collectives on collective-level IR: the retarget and the
// wire/capacity/align overrides, nothing else (no strategy is chosen, nothing is
// split).
// RUN: moecomm-opt %s -split-input-file --moecomm-configure-collectives="ranks=4 ranks-per-node=2" | FileCheck %s --check-prefix=RANKS
// RUN: moecomm-opt %s -split-input-file --moecomm-configure-collectives="wire-dtype=fp8 capacity=64" | FileCheck %s --check-prefix=WIRE
// RUN: moecomm-opt %s -split-input-file --moecomm-configure-collectives="wire-dtype=f32" | FileCheck %s --check-prefix=F32
// RUN: moecomm-opt %s -split-input-file --moecomm-configure-collectives="align=16" | FileCheck %s --check-prefix=ALIGN
// RUN: moecomm-opt %s -split-input-file --moecomm-configure-collectives | FileCheck %s --check-prefix=KEEP
// RUN: moecomm-opt %s -split-input-file --moecomm-configure-collectives="experts=32" | FileCheck %s --check-prefix=EXPERTS
// RUN: moecomm-opt %s -split-input-file --moecomm-configure-collectives="ranks=4 experts=8" | FileCheck %s --check-prefix=BOTH
// RUN: not moecomm-opt %s -split-input-file --moecomm-configure-collectives=ranks-per-node=3 2>&1 | FileCheck %s --check-prefix=PERNODE
// RUN: not moecomm-opt %s -split-input-file --moecomm-configure-collectives=experts=12 2>&1 | FileCheck %s --check-prefix=EXPERTS12
// RUN: not moecomm-opt %s -split-input-file --moecomm-configure-collectives=experts=-1 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// moecomm-split-hierarchical and moecomm-pipeline pass experts= on.
// RUN: not moecomm-opt %s --moecomm-split-hierarchical=experts=12 2>&1 | FileCheck %s --check-prefix=EXPERTS12
// RUN: not moecomm-opt %s --moecomm-pipeline=experts=12 2>&1 | FileCheck %s --check-prefix=EXPERTS12
// RUN: not moecomm-opt %s --moecomm-pipeline=experts=-2 2>&1 | FileCheck %s --check-prefix=PIPENEG
// RUN: not moecomm-opt %s -split-input-file --moecomm-configure-collectives=wire-dtype=fp16 2>&1 | FileCheck %s --check-prefix=BADWIRE

// The ranks-dependent types (tokens_per_expert: [E/W]) follow the retarget
// into the callee's signature; the handle type keeps no strategy.
// RANKS-LABEL: func.func @expert_counts
// RANKS-SAME: (%arg0: tensor<4xi64>) -> tensor<4xi64>
// RANKS-LABEL: func.func @layer
// RANKS-SAME: !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 16>
// RANKS: moecomm.dispatch {{.*}} topology<ranks = 4, ranks_per_node = 2, experts = 16> :
// RANKS-NOT: strategy
// RANKS: call @expert_counts(%{{.*}}) : (tensor<4xi64>) -> tensor<4xi64>
// RANKS: moecomm.combine
// RANKS-NOT: moecomm.layout
//
// An FP8 wire applies to every dispatch; capacity too.
// WIRE-LABEL: func.func @layer
// WIRE: moecomm.dispatch {{.*}} topology<ranks = 8, ranks_per_node = 4, experts = 16> wire<fp8_e4m3> capacity(64) :
//
// An f32 wire applies to f32 dispatches only: this one is bf16.
// F32-LABEL: func.func @layer
// F32: moecomm.dispatch {{.*}} topology<ranks = 8, ranks_per_node = 4, experts = 16> :
// F32-NOT: wire<
//
// align applies to every dispatch.
// ALIGN-LABEL: func.func @layer
// ALIGN: moecomm.dispatch {{.*}} topology<ranks = 8, ranks_per_node = 4, experts = 16> align(16) :
//
// Without options the IR is left as it is.
// KEEP-LABEL: func.func @layer
// KEEP: moecomm.dispatch {{.*}} topology<ranks = 8, ranks_per_node = 4, experts = 16> :
// KEEP: call @expert_counts(%{{.*}}) : (tensor<2xi64>) -> tensor<2xi64>
//
// experts= scales the model: E/W (tokens_per_expert's size) follows it, as
// it follows ranks=, here from 16/8 to 32/8 and to 8/4.
// EXPERTS-LABEL: func.func @expert_counts
// EXPERTS-SAME: (%arg0: tensor<4xi64>) -> tensor<4xi64>
// EXPERTS-LABEL: func.func @layer
// EXPERTS-SAME: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 32>
// EXPERTS: moecomm.dispatch {{.*}} topology<ranks = 8, ranks_per_node = 4, experts = 32> :
// EXPERTS: call @expert_counts(%{{.*}}) : (tensor<4xi64>) -> tensor<4xi64>
// BOTH-LABEL: func.func @expert_counts
// BOTH-SAME: (%arg0: tensor<2xi64>) -> tensor<2xi64>
// BOTH-LABEL: func.func @layer
// BOTH: moecomm.dispatch {{.*}} topology<ranks = 4, ranks_per_node = 4, experts = 8> :
//
// PERNODE: error: cannot retarget 8 ranks x 4 per node to 8 ranks x 3 per node: ranks (8) must be a multiple of ranks_per_node (3)
// EXPERTS12: error: cannot retarget 8 ranks x 4 per node (16 experts) to 8 ranks x 4 per node (12 experts): experts (12) must be divisible by ranks (8) so every rank hosts the same number of experts
// NEGATIVE: error: moecomm-configure-collectives: experts must be >= 0 (0: keep the IR's), got -1
// PIPENEG: moecomm-pipeline: experts must be >= 0 (0: keep the IR's), got -2
// BADWIRE: moecomm-opt: for the --wire-dtype option: Cannot find option named 'fp16'!
func.func @expert_counts(%tpe: tensor<2xi64>) -> tensor<2xi64> {
  return %tpe : tensor<2xi64>
}
func.func @layer(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> (tensor<?x64xbf16>, tensor<2xi64>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %counts = call @expert_counts(%tpe) : (tensor<2xi64>) -> tensor<2xi64>
  %out = moecomm.combine %recv, %h : tensor<?x64xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x64xbf16>
  return %out, %counts, %h : tensor<?x64xbf16>, tensor<2xi64>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>
}
