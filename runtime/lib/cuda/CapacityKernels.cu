//===- CapacityKernels.cu - The capacity mode's device steps --------------===//
#include "CapacityKernels.h"

#include "CudaCheck.h"
#include "KernelUtil.cuh"
#include "moecomm/moecomm_nccl.h"

#include <cub/device/device_radix_sort.cuh>

namespace moecomm {
namespace cuda {

namespace {

constexpr int kThreads = 256;

__global__ void sourceSlotsKernel(SourceSlotsArgs a) {
  const int64_t n = a.T * a.K;
  bool overflow = false;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t pos = a.pairPos[i];
    if (pos < 0) {
      a.slotPos[i] = -1;
      continue;
    }
    const int64_t d = a.cleanIdx[i] / a.L;
    const int64_t slot = sourceSlot(pos, d, a.tokenRankOffsets[d * a.T], a.P);
    if (slot < 0) {
      a.slotPos[i] = -1;
      overflow = true;
      continue;
    }
    const int64_t t = i / a.K;
    a.slotPos[i] = slot;
    a.sendSrc[slot] = t;
    CapacityMeta m;
    m.token = (int32_t)t;
    m.expert = a.cleanIdx[i];
    m.weight = a.weights[i];
    m.slot = (int32_t)(i - t * a.K);
    a.sendMeta[slot] = m;
  }
  if (overflow)
    atomicOr(a.flags, MOECOMM_CAPACITY_OVERFLOW);
}

__global__ void sendCountKernel(const int32_t *tokenRankOffsets, int64_t T,
                                int W, int64_t *sendCount) {
  for (int d = blockIdx.x * blockDim.x + threadIdx.x; d < W;
       d += gridDim.x * blockDim.x)
    sendCount[d] = (int64_t)tokenRankOffsets[(d + 1) * T] -
                   (int64_t)tokenRankOffsets[d * T];
}

/// One thread: W is at most a few thousand and this is a prefix over it.
__global__ void keptKernel(ReceiveKeysArgs a) {
  if (blockIdx.x != 0 || threadIdx.x != 0)
    return;
  int64_t dropped = 0;
  const int64_t R = keepRows(a.recvCount, a.W, a.P, a.C, a.kept, &dropped);
  *a.recvRows = R;
  *a.dropped = dropped;
  if (dropped > 0)
    atomicOr(a.flags, MOECOMM_CAPACITY_OVERFLOW);
}

__global__ void keysKernel(ReceiveKeysArgs a) {
  const int64_t n = (int64_t)a.W * a.P;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const uint32_t key =
        slotKey(i, a.P, a.kept, a.recvMeta, a.firstExpert, a.L);
    a.keys[i] = key;
    a.values[i] = (int32_t)i;
  }
}

__global__ void receiveRowsKernel(ReceiveRowsArgs a) {
  const int64_t R = *a.recvRows;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < a.C;
       i += (int64_t)gridDim.x * blockDim.x) {
    if (i < R) {
      const int64_t slot = a.sortedSlots[i];
      const CapacityMeta m = a.recvMeta[slot];
      a.recvIndex[i] = slot;
      a.inverse[slot] = i;
      a.recvWeights[i] = m.weight;
      a.recvSources[2 * i] = slot / a.P;
      a.recvSources[2 * i + 1] = m.token;
      atomicAdd(reinterpret_cast<unsigned long long *>(a.tokensPerExpert) +
                    a.sortedKeys[i],
                1ull);
    } else {
      a.recvIndex[i] = -1;
      a.recvWeights[i] = 0.0f;
      a.recvSources[2 * i] = -1;
      a.recvSources[2 * i + 1] = -1;
    }
  }
}

__global__ void combineSourcesKernel(const int64_t *slotPos,
                                     const int64_t *keptBack, int64_t P,
                                     int64_t n, int64_t *combSrc) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    combSrc[i] = combineSource(slotPos[i], P, keptBack);
  }
}

} // namespace

Status launchSourceSlots(const SourceSlotsArgs &a, cudaStream_t stream) {
  const int64_t n = a.T * a.K;
  if (n > 0) {
    sourceSlotsKernel<<<itemGrid(n, kThreads), kThreads, 0, stream>>>(a);
    if (Status st = launchStatus("sourceSlotsKernel"); !st.ok())
      return st;
  }
  sendCountKernel<<<itemGrid(a.W, kThreads), kThreads, 0, stream>>>(
      a.tokenRankOffsets, a.T, a.W, a.sendCount);
  return launchStatus("sendCountKernel");
}

Status launchReceiveKeys(const ReceiveKeysArgs &a, cudaStream_t stream) {
  keptKernel<<<1, 1, 0, stream>>>(a);
  if (Status st = launchStatus("keptKernel"); !st.ok())
    return st;
  const int64_t n = (int64_t)a.W * a.P;
  if (n == 0)
    return Status::success();
  keysKernel<<<itemGrid(n, kThreads), kThreads, 0, stream>>>(a);
  return launchStatus("keysKernel");
}

Status sortReceivedSlotsTempBytes(int64_t count, int keyBits, size_t &bytes) {
  bytes = 0;
  if (count == 0)
    return Status::success();
  return cudaStatus(cub::DeviceRadixSort::SortPairs(
                        nullptr, bytes, (const uint32_t *)nullptr,
                        (uint32_t *)nullptr, (const int32_t *)nullptr,
                        (int32_t *)nullptr, (int)count, 0, keyBits),
                    "cub::DeviceRadixSort::SortPairs (size)");
}

Status sortReceivedSlots(const uint32_t *keysIn, uint32_t *keysOut,
                         const int32_t *valuesIn, int32_t *valuesOut,
                         int64_t count, int keyBits, void *temp,
                         size_t tempBytes, cudaStream_t stream) {
  if (count == 0)
    return Status::success();
  size_t bytes = tempBytes;
  return cudaStatus(cub::DeviceRadixSort::SortPairs(
                        temp, bytes, keysIn, keysOut, valuesIn, valuesOut,
                        (int)count, 0, keyBits, stream),
                    "cub::DeviceRadixSort::SortPairs");
}

Status launchReceiveRows(const ReceiveRowsArgs &a, cudaStream_t stream) {
  if (a.C == 0)
    return Status::success();
  receiveRowsKernel<<<itemGrid(a.C, kThreads), kThreads, 0, stream>>>(a);
  return launchStatus("receiveRowsKernel");
}

Status launchCombineSources(const int64_t *slotPos, const int64_t *keptBack,
                            int64_t P, int64_t count, int64_t *combSrc,
                            cudaStream_t stream) {
  if (count == 0)
    return Status::success();
  if (P == 0) // nothing was sent: every slot is dropped
    return cudaStatus(
        cudaMemsetAsync(combSrc, 0xFF, count * sizeof(int64_t), stream),
        "cudaMemsetAsync");
  combineSourcesKernel<<<itemGrid(count, kThreads), kThreads, 0, stream>>>(
      slotPos, keptBack, P, count, combSrc);
  return launchStatus("combineSourcesKernel");
}

} // namespace cuda
} // namespace moecomm
