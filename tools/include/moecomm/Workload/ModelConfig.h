//===- ModelConfig.h - MoE configurations of real models --------*- C++ -*-===//
//
// Reads examples/configs/<name>.json (`moecomm-model-config-v1`): the MoE
// numbers of a real model (hidden size, routed experts, top-k, expert groups)
// that `moecomm-run --config NAME` uses for generated routing.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_WORKLOAD_MODELCONFIG_H
#define MOECOMM_WORKLOAD_MODELCONFIG_H

#include "moecomm/Model/Limits.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace moecomm::workload {

/// The bounds of a config's numbers, the same as moecomm-run's flags
/// (--experts, --topk, --hidden): far above any real model, and low enough
/// that no size computed from them (E rounded up to a multiple of the ranks,
/// per-expert arrays, tokens x K) can overflow. Top-k's is the whole
/// project's (moecomm/Model/Limits.h).
constexpr int64_t kMaxExperts = int64_t(1) << 24;
using ::moecomm::kMaxTopk;
constexpr int64_t kMaxHidden = int64_t(1) << 24;

struct ModelConfig {
  std::string name;       ///< file stem, e.g. "deepseek-v3"
  std::string model;      ///< display name, e.g. "DeepSeek-V3"
  int64_t hidden = 0;     ///< H (the model's hidden_size)
  int64_t numExperts = 0; ///< E, routed experts per MoE layer
  int topk = 0;           ///< K, routed experts per token
  /// Expert groups for group-limited routing (DeepSeek's n_group); 1 = none.
  int numGroups = 1;
  /// Groups a token may use (DeepSeek's topk_group); equals numGroups when
  /// routing is not group-limited.
  int topkGroups = 1;
  int sharedExperts = 0; ///< always-on experts (not dispatched)
  std::string path;      ///< the file it was read from
};

/// Loads a config by name (looked up as <dir>/<name>.json in each of
/// `searchDirs`, first hit wins) or by path (when `nameOrPath` ends in
/// ".json"). Errors (invalid_argument, one line): unknown name (listing the
/// names found), unreadable file, malformed JSON, wrong "format", missing
/// moe.hidden / moe.num_experts / moe.topk or one outside [1, kMax...],
/// groups outside [1, E] or that do not divide the experts.
llvm::Expected<ModelConfig>
loadModelConfig(llvm::StringRef nameOrPath,
                const std::vector<std::string> &searchDirs);

/// The config names (file stems) available in `searchDirs`, sorted.
std::vector<std::string>
listModelConfigs(const std::vector<std::string> &searchDirs);

} // namespace moecomm::workload

#endif // MOECOMM_WORKLOAD_MODELCONFIG_H
