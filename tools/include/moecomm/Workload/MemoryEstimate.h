//===- MemoryEstimate.h - will a run fit in memory --------------*- C++ -*-===//
//
// Rough peak memory of a run or a routing, so that a run this machine
// cannot hold is refused before it starts (exit 2) instead of being killed
// by the kernel part way through.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_WORKLOAD_MEMORYESTIMATE_H
#define MOECOMM_WORKLOAD_MEMORYESTIMATE_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <cstdint>

namespace moecomm::workload {

/// Bytes per expert of a run: the arrays of one count per local expert
/// (the reference's, the runtime's layout, each rank's result and its copy
/// in the summaries, the report's), the generators' per-expert weights and
/// keys, and the JSON text of tokens_per_expert.
constexpr double kRunBytesPerExpert = 160;

/// Rough bytes of a routing problem alone (moecomm-bench's counting, which
/// moves no payload): 12 bytes per slot plus kRunBytesPerExpert per expert,
/// in double (no product of the inputs can overflow).
double estimateRoutingBytes(int64_t totalTokens, int64_t topk,
                            int64_t numExperts);

/// Rough peak bytes of one process running `totalTokens` tokens (all ranks
/// together) of hidden size `hidden` with top-k `topk` over `numExperts`
/// experts: the routing (12 bytes per slot) plus x, the received rows, the
/// outputs, the runtime's stage buffers and the reference (about 10 + 18 K
/// bytes per token and hidden element), plus kRunBytesPerExpert per expert.
/// In double, so that no product of the inputs can overflow.
double estimateRunBytes(int64_t totalTokens, int64_t hidden, int64_t topk,
                        int64_t numExperts);

/// invalid_argument when estimateRunBytes exceeds this machine's physical
/// memory: such a run would be killed by the kernel (or end in bad_alloc)
/// part way through.
llvm::Error checkFitsInMemory(int64_t totalTokens, int64_t hidden, int64_t topk,
                              int64_t numExperts);

/// invalid_argument "<what> need(s) about X GiB, more than this machine's Y
/// GiB" when `neededBytes` exceeds this machine's physical memory.
llvm::Error checkMemory(double neededBytes, const llvm::Twine &what);

} // namespace moecomm::workload

#endif // MOECOMM_WORKLOAD_MEMORYESTIMATE_H
