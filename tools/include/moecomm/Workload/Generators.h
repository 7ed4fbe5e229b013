//===- Generators.h - seeded routing generators -----------------*- C++ -*-===//
//
// Seeded, reproducible routing generators (`--routing-dist`):
//   uniform               each token's K experts uniformly without replacement;
//   zipf:S                expert popularity ∝ 1/(rank+1)^S over a seeded
//                         permutation of the experts, K drawn without
//                         replacement ∝ popularity;
//   node-limited:M        DeepSeek-V3 group-limited routing: random expert
//                         scores, group score = sum of the group's top-2
//                         scores, keep the M best groups, then the top-K
//                         experts inside them (groups = --groups, the config's
//                         n_group, or the nodes);
//   trace:MODEL:DOMAIN:LAYER
//                         K drawn without replacement ∝ the real per-expert
//                         loads of the shipped trace file (examples/data),
//                         re-binned to E experts (ExpertLoad.h).
// The same options and seed give the same routing on every machine: the
// generator uses its own splitmix64 stream per rank, no std:: distributions.
//
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_WORKLOAD_GENERATORS_H
#define MOECOMM_WORKLOAD_GENERATORS_H

#include "moecomm/Workload/RoutingProblem.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace moecomm::workload {

/// The most tokens one rank may have in a generated routing (--tokens).
constexpr int64_t kMaxTokensPerRank = int64_t(1) << 28;

struct RoutingDist {
  enum Kind { Uniform, Zipf, NodeLimited, Trace } kind = Uniform;
  double zipfExponent = 0.0; ///< S of zipf:S (>= 0)
  int groupLimit = 0;        ///< M of node-limited:M (>= 1)
  std::string traceModel;    ///< MODEL of trace:..., e.g. "mixtral-8x7b"
  std::string traceDomain;   ///< DOMAIN, e.g. "github"
  int traceLayer = 0;        ///< LAYER, e.g. 15 (also accepted as "layer15")
  std::string spec;          ///< the text as given
};

/// Parses a `--routing-dist` value. invalid_argument (one line) on unknown
/// kinds or bad parameters.
llvm::Expected<RoutingDist> parseRoutingDist(llvm::StringRef spec);

struct GenerateOptions {
  RoutingDist dist;
  int ranks = 4;
  int ranksPerNode = 2;
  int64_t numExperts = 16;
  int topk = 2;
  int64_t hidden = 128;
  /// Tokens per rank: one value for every rank, or exactly `ranks` values.
  std::vector<int64_t> tokens{64};
  uint64_t seed = 1;
  /// Expert groups for node-limited:M; 0 = one group per node.
  int groups = 0;
  /// The experts are logical ones of an expert placement, whose slots the
  /// ranks split: E % W is not required (moecomm/Model/Placement.h).
  bool placed = false;
  PayloadType dtype = PayloadType::BF16;
  int64_t capacity = 0;
  /// The expert-load trace file for trace:...
  std::string traceFile;
};

/// Generates a routing problem (weights: the selected scores normalized to sum
/// 1 per token). Checks the options first: W % G, E % W, K <= E, tokens >= 0,
/// M and groups consistent (E % groups == 0, M <= groups, M * E/groups >= K),
/// trace model/domain/layer present, enough experts with non-zero load.
/// Errors are invalid_argument with a one-line message.
llvm::Expected<RoutingProblem> generateRouting(const GenerateOptions &options);

/// The relative per-expert loads [E = options.numExperts] that `options`'
/// distribution draws from, in expert order: uniform and node-limited
/// (symmetric over experts and groups) 1 each; zipf:S 1 / (place + 1)^S
/// over the same seeded permutation as generateRouting; trace the trace's
/// loads re-binned to E (loadTraceLoads). These are the sampling weights:
/// drawing K experts without replacement flattens the realized loads a
/// little. Errors: invalid_argument (one line) for E outside [1,
/// kMaxExperts] and loadTraceLoads's.
llvm::Expected<std::vector<double>>
expertWeights(const GenerateOptions &options);

} // namespace moecomm::workload

#endif // MOECOMM_WORKLOAD_GENERATORS_H
