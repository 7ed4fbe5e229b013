//===- CapacityKernels.h - The capacity mode's device steps -----*- C++ -*-===//
//
// The kernels between the routing layout (Layout.h), the row kernels
// (DeviceRows.h) and the fixed-size NCCL exchanges of a capacity plan
// (Capacity.cpp). Send buffers hold P slots per destination: slot d*P + p
// carries the p-th pair (in (token, expert) order) that this rank sends to
// rank d. Every size is fixed by the plan; counts live on the device.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_CUDA_CAPACITYKERNELS_H
#define MOECOMM_LIB_CUDA_CAPACITYKERNELS_H

#include "RoutingLogic.h"
#include "Status.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace moecomm {
namespace cuda {

/// Source side, after the layout: for each kept pair with rank-relative
/// position p < P, slot d*P + p gets the pair (slotPos, sendSrc, sendMeta);
/// pairs with p >= P are dropped (slotPos -1, OVERFLOW flag). sendCount[d]
/// = all pairs for rank d. sendSrc must be -1 beforehand.
struct SourceSlotsArgs {
  const int32_t *cleanIdx;         ///< [T*K]
  const float *weights;            ///< [T*K]
  const int64_t *pairPos;          ///< [T*K]
  const int32_t *tokenRankOffsets; ///< [W*T + 1]
  int64_t T, L, P;
  int K, W;
  int64_t *slotPos;       ///< [T*K] out: d*P + p, or -1
  int64_t *sendSrc;       ///< [W*P] out: source token of each slot
  CapacityMeta *sendMeta; ///< [W*P] out
  int64_t *sendCount;     ///< [W] out
  int32_t *flags;         ///< [1]
};
Status launchSourceSlots(const SourceSlotsArgs &a, cudaStream_t stream);

/// Destination side, after the exchange: kept[s] = min(max(C - before, 0),
/// min(recvCount[s], P)) with `before` the rows that arrived from ranks < s;
/// R = sum kept, dropped = sum recvCount - R (OVERFLOW flag if > 0). Then
/// the sort keys of the W*P received slots: the local expert of kept slots,
/// L for the others; values: the slot index.
struct ReceiveKeysArgs {
  const int64_t *recvCount;     ///< [W]
  const CapacityMeta *recvMeta; ///< [W*P]
  int64_t P, C, L, firstExpert;
  int W;
  int64_t *kept;     ///< [W] out
  int64_t *recvRows; ///< [1] out: R
  int64_t *dropped;  ///< [1] out
  int32_t *flags;    ///< [1]
  uint32_t *keys;    ///< [W*P] out
  int32_t *values;   ///< [W*P] out
};
Status launchReceiveKeys(const ReceiveKeysArgs &a, cudaStream_t stream);

/// CUB radix sort (stable) of the W*P (key, slot) pairs by key, bits
/// [0, keyBits): kept slots expert-major, each expert's in (source, token)
/// order.
Status sortReceivedSlots(const uint32_t *keysIn, uint32_t *keysOut,
                         const int32_t *valuesIn, int32_t *valuesOut,
                         int64_t count, int keyBits, void *temp,
                         size_t tempBytes, cudaStream_t stream);
Status sortReceivedSlotsTempBytes(int64_t count, int keyBits, size_t &bytes);

/// After the sort: for i < R, recv row i is slot sorted[i]: recvIndex,
/// inverse (slot -> row), weights, sources and tokens per expert; rows
/// [R, C) are padding (index -1, weight 0, sources -1). inverse must be -1
/// and tokensPerExpert 0 beforehand.
struct ReceiveRowsArgs {
  const int64_t *recvRows;      ///< [1] R
  const uint32_t *sortedKeys;   ///< [W*P]
  const int32_t *sortedSlots;   ///< [W*P]
  const CapacityMeta *recvMeta; ///< [W*P]
  int64_t C, P;
  int64_t *recvIndex;       ///< [C] out
  int64_t *inverse;         ///< [W*P] out
  float *recvWeights;       ///< [C] out
  int64_t *recvSources;     ///< [C][2] out
  int64_t *tokensPerExpert; ///< [L] out
};
Status launchReceiveRows(const ReceiveRowsArgs &a, cudaStream_t stream);

/// Combine, source side: combSrc[t*K + k] = slotPos if the destination kept
/// the slot (p < keptBack[d]), else -1.
Status launchCombineSources(const int64_t *slotPos, const int64_t *keptBack,
                            int64_t P, int64_t count, int64_t *combSrc,
                            cudaStream_t stream);

} // namespace cuda
} // namespace moecomm

#endif // MOECOMM_LIB_CUDA_CAPACITYKERNELS_H
