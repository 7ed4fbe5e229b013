//===- Placements.h - the placement axis of moecomm-bench -------*- C++ -*-===//
//
// `--placements none,eplb:R,...`: for every generated group, each placement
// of the E logical experts on the W ranks and each replica choice
// (moecomm/Model/Placement.h) becomes one counted row: the inter-node bytes
// of every fixed strategy (countTraffic over the PHYSICAL routing that
// chooseReplicas gives each rank), the placement's inter-node lower bound and
// the receive-load imbalance (max rows received per rank / mean).
//   none     no replicas (the identity placement): one row, choice "-";
//            its bound is DESIGN.md §7's (RoutingGroup::remoteNodeCopies).
//   eplb:R   DeepSeek EPLB's placement (moecomm/Workload/Eplb.h) over
//            S = E + R slots from the routing's per-expert loads: the
//            generator's (expertWeights: the trace's loads re-binned to E,
//            zipf's and uniform's expected loads) or, for --routing FILE,
//            the file's counted rows per expert; expert groups = the
//            config's n_group when it divides E, else 1. Two rows: choice
//            locality (moecomm's) and load_only (EPLB's baseline); the
//            bound is Σ_tokens minRemoteNodes x the row bytes.
//   eplb-global:R  the same with one expert group, so EPLB's global policy
//            (its hierarchical policy keeps every replica of an expert on
//            the node of its group, where no choice can save inter-node
//            bytes; this entry measures placements that spread replicas).
// Counting only: the measured backends refuse placements until the runtime
// takes them.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TOOLS_BENCH_PLACEMENTS_H
#define MOECOMM_TOOLS_BENCH_PLACEMENTS_H

#include "Count.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace moecomm::bench {

/// One --placements entry.
struct PlacementSpec {
  std::string spec;       ///< as given: "none", "eplb:64"
  int64_t redundant = -1; ///< R of eplb:R; -1 for none
  bool oneGroup = false;  ///< eplb-global:R
  bool isNone() const { return redundant < 0; }
};

/// Parses --placements (comma-separated none | eplb:R | eplb-global:R, R in
/// [0, 2^24]).
/// Errors (invalid_argument, one line): an empty or unknown entry, a bad R,
/// an entry given twice.
llvm::Expected<std::vector<PlacementSpec>>
parsePlacements(llvm::StringRef list);

/// Whether `spec` can place E = `experts` experts on `ranks` ranks: EPLB
/// needs (E + R) % W == 0. The error (invalid_argument, one line) names
/// `where` (e.g. "config deepseek-v3 on 8x8") and the nearest valid R (ties:
/// the larger).
llvm::Error checkPlacementFits(const PlacementSpec &spec, int64_t experts,
                               int ranks, llvm::StringRef where);

/// One row of the placement table: a group, a wire dtype, a placement and a
/// replica choice.
struct PlacementRow {
  std::string sweep, config, routing;
  Cluster cluster;
  int64_t experts = 0, tokens = 0;
  workload::PayloadType dtype = workload::PayloadType::BF16;
  std::string placement; ///< "none", "eplb:64"
  int64_t slots = 0;     ///< S = E + R
  std::string policy;    ///< EPLB's: hierarchical | global; "-" for none
  std::string choice;    ///< locality | load_only; "-" for none
  /// Inter-node payload bytes, dispatch + combine, by moecommStrategy_t.
  std::array<int64_t, 3> interBytes{};
  /// Inter-node lower bound, [dispatch, combine] bytes.
  int64_t lowerBound[2] = {0, 0};
  /// Hierarchical inter-node bytes of the same routing without replicas
  /// (the reference of "vs none").
  int64_t noReplicaHierarchical = 0;
  /// Rows received per rank (max / mean; receiveImbalance).
  double imbalance = 1;
};

/// The per-expert loads [g.experts] EPLB balances for group `g` (see the
/// file comment); `fromRouting` for a routing file. Errors: expertWeights'.
llvm::Expected<std::vector<double>> placementLoads(const RoutingGroup &g,
                                                   const std::string &traceFile,
                                                   bool fromRouting);

/// The rows of one group: for each spec (validated by checkPlacementFits)
/// and each dtype, none's row or eplb's two. Errors: rebalanceExperts'
/// (invalid_argument, one line).
llvm::Expected<std::vector<PlacementRow>>
placementRows(const std::string &sweep, const RoutingGroup &g,
              llvm::ArrayRef<PlacementSpec> specs, llvm::ArrayRef<double> loads,
              llvm::ArrayRef<workload::PayloadType> dtypes);

} // namespace moecomm::bench

#endif // MOECOMM_TOOLS_BENCH_PLACEMENTS_H
