//===- Layout.cu - Routing layout on the GPU ------------------------------===//
//
// One thread per token for the per-token work (K is small: the O(K^2)
// duplicate and ordering checks stay in registers and L1), CUB for the
// histogram and the prefix sums.
//
//===----------------------------------------------------------------------===//
#include "Layout.h"

#include "CudaCheck.h"
#include "KernelUtil.cuh"
#include "RoutingLogic.h"
#include "moecomm/Model/Sizes.h"
#include "moecomm/moecomm_nccl.h"

#include <cub/device/device_histogram.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <climits>

namespace moecomm {
namespace cuda {

namespace {

constexpr int kTokenThreads = 256;

/// Cleans the ids of each token, copies the weights, counts its pairs per
/// destination rank and marks the ranks / nodes it reaches.
template <typename IdxT>
__global__ void sanitizeKernel(
    const IdxT *__restrict__ idx, const float *__restrict__ topkWeights,
    int64_t T, int K, int64_t E, int64_t L, int G, int32_t *__restrict__ clean,
    float *__restrict__ weights, int32_t *__restrict__ tokenRankCounts,
    unsigned long long *__restrict__ rankTokens,
    unsigned long long *__restrict__ nodeTokens, int32_t *__restrict__ flags) {
  for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < T;
       t += (int64_t)gridDim.x * blockDim.x) {
    int32_t *row = clean + t * K;
    const int bits = cleanToken(idx + t * K, K, E, row);
    for (int k = 0; k < K; ++k) {
      if (weights)
        weights[t * K + k] = topkWeights ? topkWeights[t * K + k] : 1.0f;
      const int32_t e = row[k];
      if (e < 0)
        continue;
      tokenRankCounts[(e / L) * T + t] += 1; // this thread owns column t
      if (firstOnRank(row, k, L))
        atomicAdd(rankTokens + e / L, 1ull);
      if (firstOnNode(row, k, L, G))
        atomicAdd(nodeTokens + e / L / G, 1ull);
    }
    if (bits)
      atomicOr(flags, bits);
  }
}

/// pairPos of every slot: the token's base on its rank plus the number of
/// the token's pairs on the same rank with a smaller expert id.
__global__ void positionKernel(const int32_t *__restrict__ clean, int64_t T,
                               int K, int64_t L,
                               const int32_t *__restrict__ tokenRankOffsets,
                               int64_t *__restrict__ pairPos) {
  for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < T;
       t += (int64_t)gridDim.x * blockDim.x) {
    const int32_t *row = clean + t * K;
    for (int k = 0; k < K; ++k)
      pairPos[t * K + k] =
          row[k] < 0 ? -1
                     : pairPosition(row, K, k, L,
                                    tokenRankOffsets[(row[k] / L) * T + t]);
  }
}

} // namespace

Status checkRoutingLayoutSizes(int64_t numTokens, int topk, int64_t numExperts,
                               int ranks) {
  if (numTokens < 0 || topk < 1 || numExperts < 1 || ranks < 1 ||
      numExperts % ranks != 0)
    return invalidArgument(cat("bad routing sizes: T ", numTokens, ", K ", topk,
                               ", E ", numExperts, ", W ", ranks));
  // Checked: T comes from the caller, so the products may overflow int64.
  int64_t slots = 0, rankTokens = 0;
  if (!checkedMul(numTokens, topk, slots) || slots > INT_MAX ||
      !checkedMul(numTokens, ranks, rankTokens) || rankTokens >= INT_MAX ||
      numExperts >= INT_MAX)
    return invalidArgument(cat("T*K and W*T + 1 must be below 2^31 and E "
                               "below 2^31 - 1 on the device (T ",
                               numTokens, ", K ", topk, ", W ", ranks, ", E ",
                               numExperts, ")"));
  return Status::success();
}

Status routingLayoutTempBytes(int64_t numTokens, int topk, int64_t numExperts,
                              int ranks, size_t &bytes) {
  if (Status st = checkRoutingLayoutSizes(numTokens, topk, numExperts, ranks);
      !st.ok())
    return st;
  size_t hist = 0, scan = 0;
  if (Status st = cudaStatus(cub::DeviceHistogram::HistogramEven(
                                 nullptr, hist, (const int32_t *)nullptr,
                                 (int32_t *)nullptr, (int)numExperts + 1, 0,
                                 (int)numExperts,
                                 (int)std::max<int64_t>(1, numTokens * topk)),
                             "cub::DeviceHistogram::HistogramEven (size)");
      !st.ok())
    return st;
  if (Status st =
          cudaStatus(cub::DeviceScan::ExclusiveSum(
                         nullptr, scan, (const int32_t *)nullptr,
                         (int32_t *)nullptr, (int)(numTokens * ranks + 1)),
                     "cub::DeviceScan::ExclusiveSum (size)");
      !st.ok())
    return st;
  bytes = std::max(hist, scan);
  return Status::success();
}

Status computeRoutingLayout(const RoutingLayoutArgs &a, cudaStream_t stream) {
  if (Status st =
          checkRoutingLayoutSizes(a.numTokens, a.topk, a.numExperts, a.ranks);
      !st.ok())
    return st;
  if (a.ranksPerNode < 1 || a.ranks % a.ranksPerNode != 0)
    return invalidArgument("ranks_per_node must divide the ranks");
  if (a.idxType != moecommInt32 && a.idxType != moecommInt64)
    return invalidArgument("topk_idx must be int32 or int64");
  const int64_t T = a.numTokens, W = a.ranks, E = a.numExperts;
  const int64_t L = E / W, N = W / a.ranksPerNode, TK = T * a.topk;
  if (Status st =
          cudaStatus(cudaMemsetAsync(a.tokenRankCounts, 0,
                                     (W * T + 1) * sizeof(int32_t), stream),
                     "cudaMemsetAsync");
      !st.ok())
    return st;
  if (Status st = cudaStatus(
          cudaMemsetAsync(a.expertCounts, 0, E * sizeof(int32_t), stream),
          "cudaMemsetAsync");
      !st.ok())
    return st;
  if (Status st = cudaStatus(
          cudaMemsetAsync(a.rankTokens, 0, W * sizeof(int64_t), stream),
          "cudaMemsetAsync");
      !st.ok())
    return st;
  if (Status st = cudaStatus(
          cudaMemsetAsync(a.nodeTokens, 0, N * sizeof(int64_t), stream),
          "cudaMemsetAsync");
      !st.ok())
    return st;
  const int grid = itemGrid(T, kTokenThreads);
  if (T > 0) {
    auto *rt = reinterpret_cast<unsigned long long *>(a.rankTokens);
    auto *nt = reinterpret_cast<unsigned long long *>(a.nodeTokens);
    if (a.idxType == moecommInt32)
      sanitizeKernel<int32_t><<<grid, kTokenThreads, 0, stream>>>(
          static_cast<const int32_t *>(a.topkIdx), a.topkWeights, T, a.topk, E,
          L, a.ranksPerNode, a.cleanIdx, a.weights, a.tokenRankCounts, rt, nt,
          a.flags);
    else
      sanitizeKernel<int64_t><<<grid, kTokenThreads, 0, stream>>>(
          static_cast<const int64_t *>(a.topkIdx), a.topkWeights, T, a.topk, E,
          L, a.ranksPerNode, a.cleanIdx, a.weights, a.tokenRankCounts, rt, nt,
          a.flags);
    if (Status st = launchStatus("sanitizeKernel"); !st.ok())
      return st;
    size_t bytes = a.tempBytes;
    if (Status st = cudaStatus(cub::DeviceHistogram::HistogramEven(
                                   a.temp, bytes, a.cleanIdx, a.expertCounts,
                                   (int)E + 1, 0, (int)E, (int)TK, stream),
                               "cub::DeviceHistogram::HistogramEven");
        !st.ok())
      return st;
  }
  size_t bytes = a.tempBytes;
  if (Status st = cudaStatus(cub::DeviceScan::ExclusiveSum(
                                 a.temp, bytes, a.tokenRankCounts,
                                 a.tokenRankOffsets, (int)(W * T + 1), stream),
                             "cub::DeviceScan::ExclusiveSum");
      !st.ok())
    return st;
  if (T > 0) {
    positionKernel<<<grid, kTokenThreads, 0, stream>>>(
        a.cleanIdx, T, a.topk, L, a.tokenRankOffsets, a.pairPos);
    if (Status st = launchStatus("positionKernel"); !st.ok())
      return st;
  }
  return Status::success();
}

} // namespace cuda
} // namespace moecomm
