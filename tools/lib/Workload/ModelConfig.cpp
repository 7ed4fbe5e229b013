//===- ModelConfig.cpp - MoE configurations of real models ----------------===//

#include "moecomm/Workload/ModelConfig.h"
#include "moecomm/Workload/ToolIO.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#include <algorithm>

using namespace llvm;

namespace moecomm::workload {

std::vector<std::string>
listModelConfigs(const std::vector<std::string> &searchDirs) {
  std::vector<std::string> names;
  for (const std::string &dir : searchDirs) {
    std::error_code ec;
    for (sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
         it.increment(ec)) {
      StringRef path = it->path();
      if (sys::path::extension(path) == ".json")
        names.push_back(sys::path::stem(path).str());
    }
  }
  llvm::sort(names);
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

Expected<ModelConfig>
loadModelConfig(StringRef nameOrPath,
                const std::vector<std::string> &searchDirs) {
  std::string path;
  if (nameOrPath.ends_with(".json")) {
    path = nameOrPath.str();
  } else {
    for (const std::string &dir : searchDirs) {
      SmallString<256> candidate(dir);
      sys::path::append(candidate, nameOrPath + ".json");
      if (sys::fs::exists(candidate)) {
        path = candidate.str().str();
        break;
      }
    }
    if (path.empty()) {
      std::vector<std::string> names = listModelConfigs(searchDirs);
      return inputError(
          formatv("unknown --config '{0}' (known: {1})", nameOrPath,
                  names.empty() ? std::string("none found; use --config-dir")
                                : join(names, ", ")));
    }
  }

  Expected<json::Value> parsed = readUserJsonFile(path, "model config");
  if (!parsed)
    return parsed.takeError();
  const json::Object *root = parsed->getAsObject();
  if (!root || root->getString("format") != "moecomm-model-config-v1")
    return inputError(formatv("{0}: not a model config (expected \"format\": "
                              "\"moecomm-model-config-v1\")",
                              path));
  const json::Object *moe = root->getObject("moe");
  if (!moe)
    return inputError(formatv("{0}: missing object \"moe\"", path));

  ModelConfig c;
  c.path = path;
  c.name = sys::path::stem(path).str();
  c.model = root->getString("model").value_or(c.name).str();
  // Every number is bounded before it is narrowed or multiplied.
  auto getInRange = [&](StringRef key, int64_t lo, int64_t hi,
                        int64_t &out) -> Error {
    std::optional<int64_t> v = moe->getInteger(key);
    if (!v || *v < lo || *v > hi)
      return inputError(formatv("{0}: moe.{1} must be an integer in [{2}, "
                                "{3}]",
                                path, key, lo, hi));
    out = *v;
    return Error::success();
  };
  int64_t topk = 0, groups = 1, topkGroups = 0, shared = 0;
  if (Error e = getInRange("hidden", 1, kMaxHidden, c.hidden))
    return std::move(e);
  if (Error e = getInRange("num_experts", 1, kMaxExperts, c.numExperts))
    return std::move(e);
  if (Error e = getInRange("topk", 1, kMaxTopk, topk))
    return std::move(e);
  if (moe->get("n_group"))
    if (Error e = getInRange("n_group", 1, c.numExperts, groups))
      return std::move(e);
  if (moe->get("topk_group"))
    if (Error e = getInRange("topk_group", 1, c.numExperts, topkGroups))
      return std::move(e);
  if (moe->get("shared_experts"))
    if (Error e = getInRange("shared_experts", 0, kMaxExperts, shared))
      return std::move(e);
  c.topk = static_cast<int>(topk);
  c.numGroups = static_cast<int>(groups);
  c.topkGroups = topkGroups ? static_cast<int>(topkGroups) : c.numGroups;
  c.sharedExperts = static_cast<int>(shared);
  if (c.numExperts % c.numGroups != 0 || c.topkGroups > c.numGroups)
    return inputError(formatv("{0}: moe.n_group ({1}) must divide "
                              "moe.num_experts ({2}) and be >= moe.topk_group "
                              "({3})",
                              path, c.numGroups, c.numExperts, c.topkGroups));
  if (c.topk > c.numExperts)
    return inputError(
        formatv("{0}: moe.topk ({1}) exceeds moe.num_experts ({2})", path,
                c.topk, c.numExperts));
  return c;
}

} // namespace moecomm::workload
