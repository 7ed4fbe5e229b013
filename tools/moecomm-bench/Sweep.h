//===- Sweep.h - what moecomm-bench sweeps ----------------------*- C++ -*-===//
//
// A sweep is the cross product of model configs x topologies (nodes x ranks
// per node) x routing distributions x wire dtypes x strategies at one token
// count per rank. A plan is a list of sweeps; without sweep flags
// moecomm-bench runs the default plan (defaultPlan()). Cells that share
// (config, topology, routing) share one generated routing: a "group".
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TOOLS_BENCH_SWEEP_H
#define MOECOMM_TOOLS_BENCH_SWEEP_H

#include "moecomm/Workload/Generators.h"
#include "moecomm/Workload/RoutingProblem.h"

#include "moecomm/moecomm.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace moecomm::bench {

/// N nodes of G ranks each (written "NxG", e.g. "8x8" = 64 ranks).
struct Cluster {
  int nodes = 1;
  int ranksPerNode = 1;
  int ranks() const { return nodes * ranksPerNode; }
};

/// One cross product of the sweep axes (see the file comment).
struct SweepSpec {
  std::string name; ///< "measured", "scaling" or "custom" (for the report)
  std::vector<std::string> configs;
  std::vector<Cluster> topologies;
  std::vector<workload::RoutingDist> routings;
  std::vector<workload::PayloadType> dtypes;
  std::vector<moecommStrategy_t> strategies;
  int64_t tokens = 1024; ///< tokens per rank
};

/// The default plan (docs/BENCHMARKS.md): "measured" = every config in
/// `configs` on 2 nodes x 4 ranks at 256 tokens per rank (small enough to
/// move the payload here); "scaling" = deepseek-v3 and kimi-k2 (those of
/// them present in `configs`) on 2..128 nodes of 8 ranks and 1..16 nodes of
/// 64 ranks at 1024 tokens per rank. Both: uniform, node-limited:4 and
/// trace:olmoe-1b-7b:github:15 routing, bf16 and fp8 wire, all four
/// strategies.
std::vector<SweepSpec> defaultPlan(const std::vector<std::string> &configs);

/// Splits a comma-separated flag value; empty items are an error naming
/// `flag`.
llvm::Expected<std::vector<std::string>> splitList(llvm::StringRef value,
                                                   llvm::StringRef flag);
/// The largest cluster a sweep takes: counting holds W x E routing counts
/// and every rank's tokens in one process (measured 2.7 GB and 31 s for one
/// DeepSeek-V3 cell at 8192 ranks, 4 tokens per rank).
constexpr int64_t kMaxClusterRanks = 8192;

/// Parses "NxG[,NxG...]" (N nodes >= 1, G ranks per node >= 1,
/// N*G <= kMaxClusterRanks).
llvm::Expected<std::vector<Cluster>> parseTopologies(llvm::StringRef value);
/// Parses a list of strategies (per_expert, flat, hierarchical, auto).
llvm::Expected<std::vector<moecommStrategy_t>>
parseStrategies(llvm::StringRef value);
/// Parses a list of wire dtypes (bf16, fp8, f32).
llvm::Expected<std::vector<workload::PayloadType>>
parseDtypes(llvm::StringRef value);
/// Parses a list of routing distributions (RoutingGen.h syntax).
llvm::Expected<std::vector<workload::RoutingDist>>
parseRoutings(llvm::StringRef value);

/// The expert count a cell uses: the config's E when W divides it; else, with
/// `scale`, the smallest multiple of W that is >= E (finer experts, same H
/// and K: how DeepSeek-V3 / Kimi-K2 shapes reach 512 and 1024 ranks); else 0
/// (the cell is skipped). `configExperts` is at most workload::kMaxExperts
/// (loadModelConfig's bound), so the rounding cannot overflow.
int64_t cellExperts(int64_t configExperts, int ranks, bool scale);

/// The routing actually generated for `dist` on `topo`: node-limited:M is
/// "at most M nodes per token" (groups = nodes) with M capped at the node
/// count.
workload::RoutingDist effectiveRouting(const workload::RoutingDist &dist,
                                       const Cluster &topo);

} // namespace moecomm::bench

#endif // MOECOMM_TOOLS_BENCH_SWEEP_H
