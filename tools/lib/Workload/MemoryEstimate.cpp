//===- MemoryEstimate.cpp - will a run fit in memory ----------------------===//

#include "moecomm/Workload/MemoryEstimate.h"
#include "moecomm/Workload/ToolIO.h"

#include "llvm/Support/FormatVariadic.h"

#include <unistd.h>

using namespace llvm;

namespace moecomm::workload {

double estimateRoutingBytes(int64_t totalTokens, int64_t topk,
                            int64_t numExperts) {
  return static_cast<double>(totalTokens) * static_cast<double>(topk) * 12.0 +
         static_cast<double>(numExperts) * kRunBytesPerExpert;
}

double estimateRunBytes(int64_t totalTokens, int64_t hidden, int64_t topk,
                        int64_t numExperts) {
  const double tokens = static_cast<double>(totalTokens);
  return estimateRoutingBytes(totalTokens, topk, numExperts) +
         tokens * static_cast<double>(hidden) *
             (10.0 + 18.0 * static_cast<double>(topk));
}

Error checkMemory(double neededBytes, const Twine &what) {
  const double available = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) *
                           static_cast<double>(::sysconf(_SC_PAGE_SIZE));
  if (available <= 0 || neededBytes <= available)
    return Error::success();
  constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
  return inputError(formatv("{0} need about {1:F1} GiB, more than this "
                            "machine's {2:F1} GiB",
                            what.str(), neededBytes / GiB, available / GiB));
}

Error checkFitsInMemory(int64_t totalTokens, int64_t hidden, int64_t topk,
                        int64_t numExperts) {
  return checkMemory(
      estimateRunBytes(totalTokens, hidden, topk, numExperts),
      formatv("{0} tokens x hidden {1} x top-{2} over {3} experts", totalTokens,
              hidden, topk, numExperts));
}

} // namespace moecomm::workload
