//===- LinkLimit.h - the link-limited time of a cell ------------*- C++ -*-===//
//
// On an emulated cluster (docs/emulated-cluster.md) every node's egress is
// shaped to one rate; the link-limited time of a run is the time the slowest
// node's link needs for the inter-node bytes that node's ranks send
// (DESIGN.md §7). The bytes are exact: the payload from countTraffic and,
// because moecomm-bench's timed region creates the layout, the layout
// metadata the runtime sends (counted here from the routing summary the way
// LayoutCreate.cpp sends it, and checked against the runtime's counters
// whenever a cell is measured).
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TOOLS_BENCH_LINKLIMIT_H
#define MOECOMM_TOOLS_BENCH_LINKLIMIT_H

#include "moecomm/Model/Traffic.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace moecomm::bench {

/// Parses a rate in tc's syntax: a positive decimal number followed by bit,
/// kbit, mbit or gbit (1, 1e3, 1e6, 1e9 bits/s; case-insensitive), e.g.
/// "250mbit", "2.5gbit". Returns bits/s. invalid_argument (one line naming
/// --link-rate) for anything else, zero or a rate above 1e15 bits/s.
llvm::Expected<double> parseLinkRate(llvm::StringRef text);

/// Inter-node layout-metadata bytes rank `rank` sends while creating one
/// layout with `requested` (auto adds the routing-summary all-gather), as
/// LayoutCreate.cpp counts them (moecommTraffic_t::metadataBytes): the pair
/// counts all-gather (8 W bytes to every rank of another node), for auto the
/// summary all-gather (8 (W + N) bytes to each of them), and one 24-byte
/// PairRecord per kept (token, expert) pair whose expert lives on another
/// node (every strategy sends it across once: to the expert's rank, or to
/// the relay of the expert's node). `summary.pairs` holds the kept pairs.
int64_t interNodeMetadataBytes(const RoutingSummary &summary, int rank,
                               moecommStrategy_t requested);

/// Per node ([N]), the inter-node bytes its ranks send in one iteration of
/// `traffic` (dispatch + combine payload) plus, when `withLayout`, the
/// layout metadata of interNodeMetadataBytes(summary, r, requested).
std::vector<int64_t> nodeInterBytes(const RoutingSummary &summary,
                                    const StrategyTraffic &traffic,
                                    bool withLayout,
                                    moecommStrategy_t requested);

/// The slowest node's bytes: max(nodeBytes), 0 for none.
int64_t maxNodeBytes(const std::vector<int64_t> &nodeBytes);

/// maxNodeBytes / (rateBitsPerSec / 8), seconds; 0 when no byte crosses.
double linkLimitedSec(const std::vector<int64_t> &nodeBytes,
                      double rateBitsPerSec);

} // namespace moecomm::bench

#endif // MOECOMM_TOOLS_BENCH_LINKLIMIT_H
