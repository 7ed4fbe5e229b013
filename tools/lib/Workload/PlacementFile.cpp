//===- PlacementFile.cpp - expert placement files -------------------------===//

#include "moecomm/Workload/PlacementFile.h"
#include "moecomm/Workload/ToolIO.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace llvm;

namespace moecomm::workload {

namespace {

/// The document's shape (loadPlacementFile); `name` prefixes messages.
Expected<ExpertPlacement> parsePlacement(StringRef text, StringRef name) {
  Expected<json::Value> parsed = parseUserJson(text);
  if (!parsed)
    return inputError(formatv("{0}: malformed JSON at {1}", name,
                              toString(parsed.takeError())));
  // LLVM's JSON mapper names the failing field and index.
  json::Path::Root root("placement");
  json::ObjectMapper mapper(*parsed, root);
  ExpertPlacement p;
  if (!mapper || !mapper.map("num_logical_experts", p.numLogical) ||
      !mapper.map("slot_experts", p.slotExperts))
    return inputError(formatv("{0}: {1}", name, toString(root.getError())));
  return p;
}

} // namespace

Expected<ExpertPlacement> loadPlacementFile(StringRef path) {
  Expected<std::string> text = readInputFile(path, "placement file");
  if (!text)
    return text.takeError();
  return parsePlacement(*text, path);
}

Error checkPlacedRouting(const ExpertPlacement &placement, StringRef name,
                         int64_t numExperts, int ranks) {
  if (placement.numLogical != numExperts)
    return inputError(formatv("{0}: num_logical_experts is {1}, the routing "
                              "has {2} experts",
                              name, placement.numLogical, numExperts));
  std::string why = checkPlacement(placement, ranks);
  if (!why.empty())
    return inputError(formatv("{0}: {1}", name, why));
  return Error::success();
}

} // namespace moecomm::workload
