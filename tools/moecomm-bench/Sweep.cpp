//===- Sweep.cpp - what moecomm-bench sweeps ------------------------------===//

#include "Sweep.h"

#include "moecomm/Workload/Generators.h"
#include "moecomm/Workload/RoutingProblem.h"
#include "moecomm/Workload/ToolIO.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace llvm;

namespace moecomm::bench {

Expected<std::vector<std::string>> splitList(StringRef value, StringRef flag) {
  std::vector<std::string> out;
  SmallVector<StringRef, 8> parts;
  value.split(parts, ',');
  for (StringRef part : parts) {
    part = part.trim();
    if (part.empty())
      return workload::inputError(
          formatv("--{0} '{1}' has an empty item", flag, value));
    out.push_back(part.str());
  }
  return out;
}

Expected<std::vector<Cluster>> parseTopologies(StringRef value) {
  Expected<std::vector<std::string>> items = splitList(value, "topologies");
  if (!items)
    return items.takeError();
  std::vector<Cluster> out;
  for (const std::string &item : *items) {
    auto [n, g] = StringRef(item).split('x');
    Cluster t;
    if (n.getAsInteger(10, t.nodes) || g.getAsInteger(10, t.ranksPerNode) ||
        t.nodes < 1 || t.ranksPerNode < 1 ||
        static_cast<int64_t>(t.nodes) * t.ranksPerNode > kMaxClusterRanks)
      return workload::inputError(
          formatv("bad --topologies entry '{0}': expected NODESxRANKS_PER_NODE "
                  "with both >= 1 and at most {1} ranks (e.g. 8x8)",
                  item, kMaxClusterRanks));
    out.push_back(t);
  }
  return out;
}

Expected<std::vector<moecommStrategy_t>> parseStrategies(StringRef value) {
  Expected<std::vector<std::string>> items = splitList(value, "strategies");
  if (!items)
    return items.takeError();
  std::vector<moecommStrategy_t> out;
  for (const std::string &item : *items) {
    std::optional<moecommStrategy_t> s = workload::parseStrategyName(item);
    if (!s)
      return workload::inputError(
          formatv("unknown strategy '{0}' in --strategies (expected "
                  "per_expert, flat, hierarchical or auto)",
                  item));
    if (std::find(out.begin(), out.end(), *s) == out.end())
      out.push_back(*s);
  }
  return out;
}

Expected<std::vector<workload::PayloadType>> parseDtypes(StringRef value) {
  Expected<std::vector<std::string>> items = splitList(value, "dtypes");
  if (!items)
    return items.takeError();
  std::vector<workload::PayloadType> out;
  for (const std::string &item : *items) {
    std::optional<workload::PayloadType> t = workload::parsePayloadType(item);
    if (!t)
      return workload::inputError(formatv(
          "unknown dtype '{0}' in --dtypes (expected bf16, fp8, "
          "fp8_e4m3_ue8m0, mxfp8 or f32)",
          item));
    if (std::find(out.begin(), out.end(), *t) == out.end())
      out.push_back(*t);
  }
  return out;
}

Expected<std::vector<workload::RoutingDist>> parseRoutings(StringRef value) {
  Expected<std::vector<std::string>> items = splitList(value, "routing-dist");
  if (!items)
    return items.takeError();
  std::vector<workload::RoutingDist> out;
  for (const std::string &item : *items) {
    Expected<workload::RoutingDist> d = workload::parseRoutingDist(item);
    if (!d)
      return d.takeError();
    out.push_back(*d);
  }
  return out;
}

std::vector<SweepSpec> defaultPlan(const std::vector<std::string> &configs) {
  std::vector<workload::RoutingDist> routings =
      cantFail(parseRoutings("uniform,node-limited:4,"
                             "trace:olmoe-1b-7b:github:15"));
  std::vector<workload::PayloadType> dtypes = {workload::PayloadType::BF16,
                                               workload::PayloadType::FP8};
  std::vector<moecommStrategy_t> strategies = {
      moecommPerExpert, moecommFlat, moecommHierarchical, moecommAuto};

  SweepSpec measured;
  measured.name = "measured";
  measured.configs = configs;
  measured.topologies = {{2, 4}};
  measured.routings = routings;
  measured.dtypes = dtypes;
  measured.strategies = strategies;
  measured.tokens = 256;

  SweepSpec scaling;
  scaling.name = "scaling";
  for (const char *name : {"deepseek-v3", "kimi-k2"})
    if (std::find(configs.begin(), configs.end(), name) != configs.end())
      scaling.configs.push_back(name);
  for (int nodes = 2; nodes <= 128; nodes *= 2)
    scaling.topologies.push_back({nodes, 8});
  for (int nodes = 1; nodes <= 16; nodes *= 2)
    scaling.topologies.push_back({nodes, 64});
  scaling.routings = routings;
  scaling.dtypes = dtypes;
  scaling.strategies = strategies;
  scaling.tokens = 1024;

  std::vector<SweepSpec> plan{measured};
  if (!scaling.configs.empty())
    plan.push_back(scaling);
  return plan;
}

int64_t cellExperts(int64_t configExperts, int ranks, bool scale) {
  if (configExperts % ranks == 0)
    return configExperts;
  if (!scale)
    return 0;
  // Adds less than `ranks` to E: no intermediate exceeds the result.
  return configExperts + (ranks - configExperts % ranks);
}

workload::RoutingDist effectiveRouting(const workload::RoutingDist &dist,
                                       const Cluster &topo) {
  workload::RoutingDist d = dist;
  if (d.kind == workload::RoutingDist::NodeLimited &&
      d.groupLimit > topo.nodes) {
    d.groupLimit = topo.nodes;
    d.spec = formatv("node-limited:{0}", topo.nodes).str();
  }
  return d;
}

} // namespace moecomm::bench
