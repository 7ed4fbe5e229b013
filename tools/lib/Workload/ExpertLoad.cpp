//===- ExpertLoad.cpp - expert-load traces of real models -----------------===//

#include "moecomm/Workload/ExpertLoad.h"
#include "moecomm/Workload/ToolIO.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cmath>

using namespace llvm;

namespace moecomm::workload {

Expected<std::vector<double>> readTraceLoads(StringRef traceFile,
                                             StringRef model, StringRef domain,
                                             int layer) {
  Expected<json::Value> parsed =
      readUserJsonFile(traceFile, "expert-load trace");
  if (!parsed)
    return parsed.takeError();
  auto keysOf = [](const json::Object *o) {
    std::vector<std::string> keys;
    if (o)
      for (const auto &kv : *o)
        keys.push_back(kv.first.str());
    llvm::sort(keys);
    return join(keys, ", ");
  };
  const json::Object *root = parsed->getAsObject();
  const json::Object *models = root ? root->getObject("models") : nullptr;
  if (!models)
    return inputError(formatv("{0}: no \"models\" object", traceFile));
  // A key that is present but of the wrong kind is named as such, not as
  // unknown next to a list of known keys that holds it.
  const json::Value *mv = models->get(model);
  if (!mv)
    return inputError(formatv("unknown trace model '{0}' (known: {1})", model,
                              keysOf(models)));
  const json::Object *m = mv->getAsObject();
  if (!m)
    return inputError(
        formatv("{0}: trace model {1} is not an object", traceFile, model));
  const json::Object *domains = m->getObject("domains");
  if (!domains)
    return inputError(formatv("{0}: trace model {1} has no \"domains\" object",
                              traceFile, model));
  const json::Value *dv = domains->get(domain);
  if (!dv)
    return inputError(formatv("unknown trace domain '{0}' for {1} (known: {2})",
                              domain, model, keysOf(domains)));
  const json::Object *dom = dv->getAsObject();
  if (!dom)
    return inputError(
        formatv("{0}: {1}/{2} is not an object", traceFile, model, domain));
  std::string layerKey = ("layer" + Twine(layer)).str();
  const json::Value *lv = dom->get(layerKey);
  if (!lv)
    return inputError(
        formatv("unknown trace layer {0} for {1}/{2} (known: {3})", layer,
                model, domain, keysOf(dom)));
  const json::Array *loads = lv->getAsArray();
  if (!loads)
    return inputError(formatv("{0}: {1}/{2}/{3} is not an array of loads",
                              traceFile, model, domain, layerKey));
  if (loads->empty())
    return inputError(formatv("{0}: {1}/{2}/{3} is empty", traceFile, model,
                              domain, layerKey));
  const int64_t Et = static_cast<int64_t>(loads->size());
  // A trace lists one load per expert of its model: a count that disagrees
  // is a truncated or mislabelled trace, which rebinning would hide.
  if (std::optional<int64_t> declared = m->getInteger("num_experts");
      declared && *declared != Et)
    return inputError(formatv("{0}: {1}/{2}/{3} lists {4} loads but {1} has "
                              "num_experts {5}",
                              traceFile, model, domain, layerKey, Et,
                              *declared));
  std::vector<double> src(Et);
  for (int64_t t = 0; t < Et; ++t) {
    std::optional<double> v = (*loads)[t].getAsNumber();
    if (!v || *v < 0 || !std::isfinite(*v))
      return inputError(formatv("{0}: {1}/{2}/{3}[{4}] is not a load >= 0",
                                traceFile, model, domain, layerKey, t));
    src[t] = *v;
  }
  // Relative loads: over the largest, so that the sums below cannot overflow
  // (1e308 + 1e308 is inf, and experts of infinite load all tie).
  const double maxLoad = *std::max_element(src.begin(), src.end());
  if (maxLoad == 0)
    return inputError(formatv("{0}: {1}/{2}/{3} has no load > 0", traceFile,
                              model, domain, layerKey));
  for (int64_t t = 0; t < Et; ++t) {
    const double load = src[t];
    src[t] /= maxLoad;
    // A load that vanishes next to the largest would silently become 0.
    if (load > 0 && src[t] == 0)
      return inputError(formatv("{0}: {1}/{2}/{3}[{4}]: load {5:e} is too "
                                "small next to the largest ({6:e}) to keep "
                                "apart from 0",
                                traceFile, model, domain, layerKey, t, load,
                                maxLoad));
  }
  return src;
}

std::vector<double> rebinLoads(ArrayRef<double> src, int64_t numExperts) {
  const int64_t Et = static_cast<int64_t>(src.size());
  // Re-bin: in units of 1 / (E * Et), expert e covers [e*Et, (e+1)*Et) and
  // trace expert t covers [t*E, (t+1)*E); e receives load[t] * overlap / E.
  const int64_t E = numExperts;
  std::vector<double> out(E, 0.0);
  for (int64_t e = 0; e < E; ++e) {
    const int64_t lo = e * Et, hi = (e + 1) * Et;
    for (int64_t t = lo / E; t < Et && t * E < hi; ++t) {
      const int64_t overlap = std::min(hi, (t + 1) * E) - std::max(lo, t * E);
      if (overlap > 0)
        out[e] +=
            src[t] * static_cast<double>(overlap) / static_cast<double>(E);
    }
  }
  return out;
}

Expected<std::vector<double>> loadTraceLoads(StringRef traceFile,
                                             StringRef model, StringRef domain,
                                             int layer, int64_t numExperts,
                                             int64_t *traceExperts) {
  Expected<std::vector<double>> loads =
      readTraceLoads(traceFile, model, domain, layer);
  if (!loads)
    return loads.takeError();
  if (traceExperts)
    *traceExperts = static_cast<int64_t>(loads->size());
  return rebinLoads(*loads, numExperts);
}

} // namespace moecomm::workload
