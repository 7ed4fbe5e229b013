// moecomm-select-strategy on collective-level IR: every dispatch gets a
// concrete strategy, recorded in its handle type and carried into the
// functions the handle reaches; nothing is split.
// RUN: moecomm-opt %s --moecomm-select-strategy=strategy=flat | FileCheck %s --check-prefix=FLAT
// RUN: moecomm-opt %s --moecomm-select-strategy | FileCheck %s --check-prefix=AUTO
// RUN: not moecomm-opt %s --moecomm-select-strategy=preset=dgx 2>&1 | FileCheck %s --check-prefix=PRESET

// FLAT-LABEL: func.func @backward
// FLAT-SAME: !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256, strategy = flat>
// FLAT-LABEL: func.func @forward
// FLAT: moecomm.dispatch {{.*}} strategy<flat> :
// FLAT: call @backward(%{{.*}}, %{{.*}}) : (tensor<?x7168xbf16>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256, strategy = flat>)
// FLAT-NOT: moecomm.layout
// FLAT-LABEL: func.func @own
// FLAT: moecomm.dispatch {{.*}} strategy<per_expert> :
//
// DeepSeek-V3 shapes on two 8-GPU nodes: the static model picks
// hierarchical for 4096 tokens per rank (moecomm-cost-report prints why),
// and flat when all 16 ranks share one NVLink domain, where hierarchical
// degenerates to one intra-node stage of the same cost (ties go to the
// earlier).
// AUTO-LABEL: func.func @forward
// AUTO: moecomm.dispatch {{.*}} strategy<hierarchical> :
// AUTO-LABEL: func.func @one_domain
// AUTO: moecomm.dispatch {{.*}} strategy<flat> :
//
// PRESET: <unknown>:0: error: moecomm-select-strategy: unknown preset 'dgx'; expected h100-dgx, h200-dgx or gb200-nvl72
func.func @backward(%dy: tensor<?x7168xbf16>, %h: !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256>) -> tensor<?x7168xbf16> {
  %dx = moecomm.combine %dy, %h : tensor<?x7168xbf16>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256> -> tensor<?x7168xbf16>
  return %dx : tensor<?x7168xbf16>
}
func.func @forward(%x: tensor<?x7168xbf16>, %idx: tensor<?x8xi32>, %w: tensor<?x8xf32>) -> tensor<?x7168xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 16, ranks_per_node = 8, experts = 256> : tensor<?x7168xbf16>, tensor<?x8xi32>, tensor<?x8xf32>
  %dx = call @backward(%recv, %h) : (tensor<?x7168xbf16>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256>) -> tensor<?x7168xbf16>
  return %dx : tensor<?x7168xbf16>
}
// A dispatch's own strategy wins over the option.
func.func @own(%x: tensor<?x7168xbf16>, %idx: tensor<?x8xi32>, %w: tensor<?x8xf32>) -> tensor<?x7168xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 16, ranks_per_node = 8, experts = 256> strategy<per_expert> : tensor<?x7168xbf16>, tensor<?x8xi32>, tensor<?x8xf32>
  return %recv : tensor<?x7168xbf16>
}
func.func @one_domain(%x: tensor<?x7168xbf16>, %idx: tensor<?x8xi32>, %w: tensor<?x8xf32>) -> tensor<?x7168xbf16> {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 16, ranks_per_node = 16, experts = 256> : tensor<?x7168xbf16>, tensor<?x8xi32>, tensor<?x8xf32>
  return %recv : tensor<?x7168xbf16>
}
