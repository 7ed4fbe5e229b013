//===- Capacity.h - Capacity-mode plans (fixed buffers) --------*- C++ -*-===//
//
// moecommCapacityPlan: every size fixed at creation, every buffer allocated
// once, so dispatch and combine are a fixed sequence of kernels, CUB calls
// and fixed-size NCCL groups with no host synchronization (CUDA-graph
// capturable). The semantics are in moecomm_nccl.h; the steps:
//
// dispatch (stream U; C = the communication stream)
//   U: reset flags; routing layout (Layout.h); source slots; pack x into
//      W*P send slots (quantizing for FP8)                     -> C waits U
//   C: one NCCL group: per peer the pair count (8 B), P metadata records,
//      P rows (+ P scale rows)                                 -> U waits C
//   U: kept per source and sort keys; stable radix sort of the W*P slots by
//      local expert; recv index / inverse / weights / sources / tokens per
//      expert; unpack the kept slots into recv (dequantizing)
// combine
//   U: gather y into the W*P slots each source sent (inverse)  -> C waits U
//   C: per peer the kept count (8 B) and P rows                -> U waits C
//   U: which of this rank's slots came back; f32 sum per token in slot order
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_CUDA_CAPACITY_H
#define MOECOMM_LIB_CUDA_CAPACITY_H

#include "CapacityKernels.h"
#include "DeviceBuffer.h"
#include "moecomm/moecomm_nccl.h"

namespace moecomm {
class Comm;
namespace cuda {
class NcclTransport;
} // namespace cuda
} // namespace moecomm

struct moecommCapacityPlan {
  moecomm::Comm *comm = nullptr;
  moecomm::cuda::NcclTransport *transport = nullptr;
  int64_t id = 0;               ///< the same on every rank (creation order)
  moecommCapacityDesc_t desc{}; ///< pairCapacity resolved
  int W = 1, G = 1, rank = 0;
  int64_t T = 0, K = 1, E = 1, L = 1, C = 1, P = 0, H = 1;
  int keyBits = 1;

  moecomm::cuda::DeviceBuffer memory; ///< every array below
  // Routing layout (Layout.h).
  int32_t *cleanIdx = nullptr;
  float *weights = nullptr;
  int32_t *tokenRankCounts = nullptr, *tokenRankOffsets = nullptr;
  int32_t *expertCounts = nullptr;
  int64_t *rankTokens = nullptr, *nodeTokens = nullptr, *pairPos = nullptr;
  // Source side.
  int64_t *slotPos = nullptr, *sendSrc = nullptr, *sendCount = nullptr;
  moecomm::cuda::CapacityMeta *sendMeta = nullptr;
  moecommRows_t sendRows{}; ///< [W*P] wire type
  // Destination side.
  int64_t *recvCount = nullptr, *kept = nullptr;
  moecomm::cuda::CapacityMeta *recvMeta = nullptr;
  moecommRows_t recvSlots{}; ///< [W*P] wire type
  uint32_t *keysIn = nullptr, *keysOut = nullptr;
  int32_t *valuesIn = nullptr, *valuesOut = nullptr;
  int64_t *recvIndex = nullptr, *inverse = nullptr;
  // Outputs (moecommCapacityOutputs_t).
  int64_t *recvRows = nullptr, *dropped = nullptr, *tokensPerExpert = nullptr;
  int32_t *flags = nullptr;
  float *recvWeights = nullptr;
  int64_t *recvSources = nullptr;
  // Combine.
  moecommRows_t combSend{}, combRecv{}; ///< [W*P] data type
  int64_t *keptBack = nullptr, *combSrc = nullptr, *combOffsets = nullptr;
  // CUB scratch.
  void *temp = nullptr;
  size_t tempBytes = 0;
};

#endif // MOECOMM_LIB_CUDA_CAPACITY_H
