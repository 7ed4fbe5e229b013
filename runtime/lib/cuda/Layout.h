//===- Layout.h - Routing layout on the GPU ---------------------*- C++ -*-===//
//
// The device side of a layout: from one rank's topk_idx [T][K] (-1 =
// masked) it computes, without a host synchronization,
//  - cleaned ids (an id outside [-1, E) or repeated in its row is masked
//    and flagged: the device cannot return an error message),
//  - per-expert pair counts (CUB DeviceHistogram),
//  - per-(destination rank, token) pair counts and their exclusive prefix
//    sums over the flattened [rank][token] order (CUB DeviceScan): the
//    per-rank counts and the prefix over ranks fall out of it,
//  - tokens per destination rank and per destination node,
//  - each pair's position in (destination rank, token, expert id) order:
//    the send order of the per_expert strategy's stage 0 (Plan.cpp).
// CPU references: pairCountsOfRank, summarizeRank (Traffic.h) and the
// per_expert plan; the GPU tests compare them.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_CUDA_LAYOUT_H
#define MOECOMM_LIB_CUDA_LAYOUT_H

#include "Status.h"
#include "moecomm/moecomm.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace moecomm {
namespace cuda {

/// Inputs (device) and caller-allocated device outputs of one rank's layout.
struct RoutingLayoutArgs {
  const void *topkIdx = nullptr; ///< [T][K] int32 or int64
  moecommDataType_t idxType = moecommInt64;
  const float *topkWeights = nullptr; ///< [T][K] or nullptr (all 1.0)
  int64_t numTokens = 0;              ///< T >= 0
  int topk = 1;                       ///< K >= 1
  int64_t numExperts = 1;             ///< E, E % W == 0
  int ranks = 1;                      ///< W
  int ranksPerNode = 1;               ///< G

  int32_t *cleanIdx = nullptr; ///< [T*K] ids, bad / repeated -> -1
  float *weights = nullptr;    ///< [T*K] weights (1.0 when none); or null
  int32_t *tokenRankCounts = nullptr;  ///< [W*T + 1]: [d*T + t] pairs of t on d
  int32_t *tokenRankOffsets = nullptr; ///< [W*T + 1] exclusive prefix sums:
                                       ///< [d*T] = pairs on ranks < d
  int32_t *expertCounts = nullptr;     ///< [E] pairs per expert
  int64_t *rankTokens = nullptr;       ///< [W] tokens with a pair on rank d
  int64_t *nodeTokens = nullptr;       ///< [W/G] tokens with a pair on node n
  int64_t *pairPos = nullptr;          ///< [T*K] position in (rank, token,
                                       ///< expert) order, -1 for masked slots
  int32_t *flags = nullptr;            ///< [1] |= MOECOMM_CAPACITY_BAD_EXPERT,
                                       ///< MOECOMM_CAPACITY_DUPLICATE
  void *temp = nullptr;                ///< CUB scratch
  size_t tempBytes = 0;
};

/// InvalidArgument unless T*K and W*T + 1 fit in 31 bits and E + 1 in an
/// int (the CUB calls take int sizes).
Status checkRoutingLayoutSizes(int64_t numTokens, int topk, int64_t numExperts,
                               int ranks);

/// CUB scratch bytes computeRoutingLayout needs for these sizes.
Status routingLayoutTempBytes(int64_t numTokens, int topk, int64_t numExperts,
                              int ranks, size_t &bytes);

/// Enqueues the layout of `a` on `stream` (zeroes what it accumulates;
/// does not reset flags).
Status computeRoutingLayout(const RoutingLayoutArgs &a, cudaStream_t stream);

} // namespace cuda
} // namespace moecomm

#endif // MOECOMM_LIB_CUDA_LAYOUT_H
