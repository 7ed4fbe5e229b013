//===- LinkLimit.cpp - the link-limited time of a cell --------------------===//

#include "LinkLimit.h"

#include "moecomm/Runtime/Plan.h"
#include "moecomm/Workload/ToolIO.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace llvm;

namespace moecomm::bench {

Expected<double> parseLinkRate(StringRef text) {
  const std::string lower = text.lower();
  StringRef s(lower);
  double unit = 0;
  for (auto [suffix, scale] : {std::pair<StringRef, double>{"gbit", 1e9},
                               {"mbit", 1e6},
                               {"kbit", 1e3},
                               {"bit", 1}})
    if (s.consume_back(suffix)) {
      unit = scale;
      break;
    }
  double value = 0;
  // getAsDouble accepts "inf" and "nan"; the digits-only check refuses them.
  const bool digits =
      !s.empty() && s.find_first_not_of("0123456789.") == StringRef::npos;
  if (unit == 0 || !digits || s.getAsDouble(value) || !(value > 0) ||
      value * unit > 1e15)
    return workload::inputError(
        formatv("--link-rate '{0}' is not a rate like 250mbit, 1gbit or "
                "2.5gbit (kbit/mbit/gbit = 1e3/1e6/1e9 bits/s, > 0)",
                text));
  return value * unit;
}

int64_t interNodeMetadataBytes(const RoutingSummary &summary, int rank,
                               moecommStrategy_t requested) {
  const Topology &topo = summary.topo;
  const int W = topo.ranks, G = topo.ranksPerNode, N = topo.nodes();
  const int64_t remoteRanks = W - G;
  int64_t bytes = remoteRanks * 8 * W;
  if (requested == moecommAuto)
    bytes += remoteRanks * 8 * (W + N);
  for (int d = 0; d < W; ++d)
    if (topo.node(d) != topo.node(rank))
      bytes += summary.pairs[static_cast<size_t>(rank) * W + d] *
               static_cast<int64_t>(sizeof(PairRecord));
  return bytes;
}

std::vector<int64_t> nodeInterBytes(const RoutingSummary &summary,
                                    const StrategyTraffic &traffic,
                                    bool withLayout,
                                    moecommStrategy_t requested) {
  const Topology &topo = summary.topo;
  std::vector<int64_t> perNode(topo.nodes(), 0);
  for (const std::vector<StageTraffic> *dir :
       {&traffic.dispatch, &traffic.combine})
    for (const StageTraffic &st : *dir)
      for (int r = 0; r < topo.ranks; ++r)
        perNode[topo.node(r)] += st.ranks[r].bytesSent[moecommLinkInterNode];
  if (withLayout)
    for (int r = 0; r < topo.ranks; ++r)
      perNode[topo.node(r)] += interNodeMetadataBytes(summary, r, requested);
  return perNode;
}

int64_t maxNodeBytes(const std::vector<int64_t> &nodeBytes) {
  return nodeBytes.empty()
             ? 0
             : *std::max_element(nodeBytes.begin(), nodeBytes.end());
}

double linkLimitedSec(const std::vector<int64_t> &nodeBytes,
                      double rateBitsPerSec) {
  return static_cast<double>(maxNodeBytes(nodeBytes)) / (rateBitsPerSec / 8);
}

} // namespace moecomm::bench
