// Pipeline-level options applied by the split: retargeting ranks per node,
// overriding the wire dtype and capacity, and the static cost model's choice.
// RUN: moecomm-opt %s --moecomm-split-hierarchical="strategy=hierarchical ranks-per-node=2 wire-dtype=fp8_e4m3 capacity=128" | FileCheck %s --check-prefix=OPTS
// RUN: moecomm-opt %s --moecomm-split-hierarchical="strategy=flat ranks=4 ranks-per-node=4" | FileCheck %s --check-prefix=RANKS
// RUN: moecomm-opt %s --moecomm-split-hierarchical="strategy=auto tokens-per-rank=4096" | FileCheck %s --check-prefix=AUTO
// RUN: moecomm-opt %s --moecomm-split-hierarchical="strategy=auto preset=gb200-nvl72 ranks-per-node=16" | FileCheck %s --check-prefix=NVL72

// Retargeting the rank count re-infers tokens_per_expert ([E/W]).
// RANKS-LABEL: func.func @layer
// RANKS-SAME: %arg3: !moecomm.handle<ranks = 4, ranks_per_node = 4, experts = 256>)
// RANKS: %{{.*}}, %{{.*}}, %[[TPE:.*]] = moecomm.layout {{.*}} topology<ranks = 4, ranks_per_node = 4, experts = 256> strategy<flat>
// RANKS: tensor.cast %[[TPE]] : tensor<64xi64> to tensor<?xi64>

// OPTS-LABEL: func.func @layer
// OPTS-SAME: %arg3: !moecomm.handle<ranks = 16, ranks_per_node = 2, experts = 256>)
// OPTS: moecomm.layout {{.*}} topology<ranks = 16, ranks_per_node = 2, experts = 256> strategy<hierarchical> capacity(128)
// OPTS: moecomm.quantize
// OPTS: moecomm.exchange {{.*}} scope<inter_node> : tensor<?x7168xf8E4M3FN>
//
// DeepSeek-V3 shapes on two 8-GPU nodes: the model prefers sending a token
// across the slow link once per node.
// AUTO-LABEL: func.func @layer
// AUTO: moecomm.layout {{.*}} strategy<hierarchical>
//
// In one NVL72 domain all 16 ranks share NVLink: hierarchical degenerates to
// one intra-node stage that costs the same as flat, and ties go to the
// earlier strategy.
// NVL72-LABEL: func.func @layer
// NVL72: moecomm.layout {{.*}} topology<ranks = 16, ranks_per_node = 16, experts = 256> strategy<flat>
func.func @layer(%x: tensor<?x7168xbf16>, %idx: tensor<?x8xi32>, %w: tensor<?x8xf32>, %h: !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256>) -> (tensor<?x7168xbf16>, tensor<?xi64>) {
  %recv, %rw, %tpe, %h2 = moecomm.dispatch %x, %idx, %w topology<ranks = 16, ranks_per_node = 8, experts = 256> : tensor<?x7168xbf16>, tensor<?x8xi32>, tensor<?x8xf32>
  %counts = tensor.cast %tpe : tensor<16xi64> to tensor<?xi64>
  return %recv, %counts : tensor<?x7168xbf16>, tensor<?xi64>
}
