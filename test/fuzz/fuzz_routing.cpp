//===- fuzz_routing.cpp - libFuzzer target: moecomm-routing-v1 parsing ----===//
//
// Feeds arbitrary bytes to the routing-file parser moecomm-run and
// moecomm-bench use (moecomm/Workload/RoutingFile.h, in moecomm_workload)
// and then to what the tools do next with a routing they accepted: the
// semantic checks, the memory estimate and --save-routing's writer. Beyond
// the sanitizers' findings, a parsed routing that does not survive being
// written and parsed again (as --save-routing + --routing would) aborts.
// Build and run: scripts/fuzz.sh [seconds] fuzz_routing (preset "fuzz").
//
//===----------------------------------------------------------------------===//

#include "moecomm/Workload/MemoryEstimate.h"
#include "moecomm/Workload/RoutingFile.h"
#include "moecomm/Workload/RoutingProblem.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace moecomm::workload;

namespace {

/// Aborts (a libFuzzer crash) with `why` when `ok` is false.
void require(bool ok, const char *why) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_routing: %s\n", why);
    std::abort();
  }
}

/// Every rejection names its problem (the tools print it as one line).
void requireMessage(llvm::Error error) {
  std::string message = llvm::toString(std::move(error));
  require(!message.empty(), "empty error message");
}

bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(),
                                   a.size() * sizeof(float)) == 0);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::Expected<RoutingProblem> parsed = parseRoutingJson(text, "fuzz.json");
  if (!parsed) {
    requireMessage(parsed.takeError());
    return 0;
  }
  RoutingProblem &p = *parsed;
  // The parser's shape invariants (RoutingProblem.h), which everything after it
  // indexes by.
  require(p.ranks >= 1 && p.topk >= 1, "ranks or topk below 1");
  require(p.topkIdx.size() == static_cast<size_t>(p.ranks) &&
              p.topkWeights.size() == static_cast<size_t>(p.ranks) &&
              p.numTokens.size() == static_cast<size_t>(p.ranks),
          "per-rank arrays do not match ranks");
  for (int r = 0; r < p.ranks; ++r)
    require(p.topkIdx[r].size() ==
                    static_cast<size_t>(p.numTokens[r]) * p.topk &&
                p.topkWeights[r].size() == p.topkIdx[r].size(),
            "a rank's arrays do not hold T*K entries");
  // The memory pre-check's estimate (token sum included) stays a size.
  const double bytes =
      estimateRunBytes(p.totalTokens(), p.hidden, p.topk, p.numExperts);
  require(std::isfinite(bytes) && bytes >= 0,
          "the memory estimate is not a finite size");
  if (llvm::Error e = validateRouting(p)) {
    requireMessage(std::move(e));
    return 0;
  }

  // --save-routing then --routing gives back the same problem.
  std::string saved = llvm::formatv("{0:2}", routingToJson(p)).str();
  llvm::Expected<RoutingProblem> again = parseRoutingJson(saved, "saved.json");
  require(static_cast<bool>(again), "a written routing does not parse");
  const RoutingProblem &q = *again;
  require(q.ranks == p.ranks && q.ranksPerNode == p.ranksPerNode &&
              q.numExperts == p.numExperts && q.topk == p.topk &&
              q.hidden == p.hidden && q.dtype == p.dtype &&
              q.capacity == p.capacity && q.numTokens == p.numTokens &&
              q.topkIdx == p.topkIdx,
          "a written routing parses to another problem");
  for (int r = 0; r < p.ranks; ++r)
    require(sameBits(q.topkWeights[r], p.topkWeights[r]),
            "a written routing's weights differ");
  require(!validateRouting(q), "a written valid routing is invalid");
  return 0;
}
