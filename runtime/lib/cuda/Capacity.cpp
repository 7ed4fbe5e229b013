//===- Capacity.cpp - Capacity-mode dispatch and combine ------------------===//
//
// The fixed sequence of kernels, CUB calls and fixed-size NCCL groups of a
// capacity plan (Capacity.h has the steps). Arguments are agreed on over
// the host channel first; nothing waits for the GPU.
//
//===----------------------------------------------------------------------===//
#include "Capacity.h"

#include "Comm.h"
#include "CudaEngine.h"
#include "DeviceRows.h"
#include "Layout.h"
#include "NcclBackend.h"
#include "NcclTransport.h"
#include "RowKernels.h"

#include <initializer_list>

namespace moecomm {

namespace {

using cuda::cudaStatus;

/// A part of a fixed-size exchange: `rows` rows of `rowBytes` to and from
/// every member.
void fixedPart(Exchange &ex, int W, const void *send, void *recv,
               int64_t rowBytes, int64_t rows) {
  ExchangePart p;
  p.rowBytes = rowBytes;
  p.send = static_cast<const uint8_t *>(send);
  p.recv = static_cast<uint8_t *>(recv);
  for (int m = 0; m < W; ++m) {
    p.sendOffsets.push_back(m * rows * rowBytes);
    p.sendBytes.push_back(rows * rowBytes);
    p.recvOffsets.push_back(m * rows * rowBytes);
    p.recvBytes.push_back(rows * rowBytes);
  }
  ex.parts.push_back(std::move(p));
}

/// A fixed-size exchange of a capacity call, over device memory to and from
/// every member: first each member's 8-byte count (`sendCount` to
/// `recvCount`); the caller adds the rest with fixedPart.
Exchange countExchange(const moecommCapacityPlan &p, const void *sendCount,
                       void *recvCount) {
  Exchange ex;
  ex.scope = moecommScopeGlobal;
  ex.deviceMemory = true;
  fixedPart(ex, p.W, sendCount, recvCount, 8, 1);
  return ex;
}

/// Runs `ex` on the plan's transport after the work enqueued on `s` and
/// before what is enqueued on `s` next, counting `payloadBytes` of
/// `direction` and `metadataBytes` sent to every member.
Status runExchange(const moecommCapacityPlan &p, const Exchange &ex,
                   moecommDirection_t direction, int64_t payloadBytes,
                   int64_t metadataBytes, cudaStream_t s) {
  cuda::NcclTransport &t = *p.transport;
  Status st = t.commWaits(s);
  if (!st.ok())
    return st;
  for (int m = 0; m < p.W; ++m) {
    p.comm->countPayload(direction, moecommScopeGlobal, m, payloadBytes);
    p.comm->countMetadata(m, metadataBytes);
  }
  st = t.enqueue(ex);
  return st.ok() ? t.streamWaits(s) : st;
}

const char *const kCallFields[] = {"the capacity plan", "hidden", "weighted"};

/// The agreement both calls start with: every rank's `local` checks, then
/// the plan's id and hidden size and `extra` (the call's own kCallFields
/// after those two) must match on every rank.
Status agreeCall(const moecommCapacityPlan &p, OpKind kind, const Status &local,
                 std::initializer_list<int64_t> extra) {
  Signature sig(kind);
  sig.setError(onRank(p.rank, local));
  sig.add(p.id);
  sig.add(p.H);
  for (int64_t v : extra)
    sig.add(v);
  return p.comm->agree(sig, kCallFields);
}

/// The first checks of both calls: the switch to the plan's device
/// (`guard`) worked, then, host-side, `in` is [inRows][H] and `out`
/// [outRows][H] rows of the plan's data type (`inName`, `outName` name them).
Status checkCallRows(const cuda::DeviceGuard &guard,
                     const moecommCapacityPlan &p, const moecommRows_t *in,
                     const char *inName, int64_t inRows,
                     const moecommRows_t *out, const char *outName,
                     int64_t outRows) {
  if (!guard.status().ok())
    return guard.status();
  const moecommDataType_t data = p.desc.dataType;
  auto check = [&](const moecommRows_t *rows, const char *name,
                   int64_t n) -> Status {
    if (Status st = checkRows(rows, name, n, p.H); !st.ok())
      return st;
    if (rows->type != data)
      return invalidArgument(cat(name, " has type ", (int)rows->type,
                                 ", the plan's data type is ", (int)data));
    return Status::success();
  };
  Status st = check(in, inName, inRows);
  return st.ok() ? check(out, outName, outRows) : st;
}

/// True while `stream` is being captured into a CUDA graph: pointer
/// attribute queries are then skipped (they are not stream work).
bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return status != cudaStreamCaptureStatusNone;
}

} // namespace

Status capacityDispatch(moecommCapacityPlan *plan, const void *topkIdx,
                        const float *topkWeights, const moecommRows_t *x,
                        const moecommRows_t *recv, moecommStream_t stream) {
  moecommCapacityPlan &p = *plan;
  cuda::NcclTransport &t = *p.transport;
  const int dev = t.device();
  cuda::DeviceGuard guard(dev);
  Status local = checkCallRows(guard, p, x, "x", p.T, recv, "recv", p.C);
  if (local.ok() && p.T > 0 && !topkIdx)
    local = invalidArgument("topk_idx is NULL");
  const bool check = !capturing(static_cast<cudaStream_t>(stream));
  if (check && local.ok() && p.T > 0)
    local = cuda::checkDevicePointer(topkIdx, "topk_idx", dev);
  if (check && local.ok() && p.T > 0)
    local = cuda::checkDevicePointer(topkWeights, "topk_weights", dev);
  if (check && local.ok())
    local = cuda::checkDeviceRows(*x, "x", dev);
  if (check && local.ok())
    local = cuda::checkDeviceRows(*recv, "recv", dev);
  if (Status st = agreeCall(p, OpKind::CapacityDispatch, local, {}); !st.ok())
    return st;

  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const int64_t WP = (int64_t)p.W * p.P;
  // Source side.
  Status st = cudaStatus(cudaMemsetAsync(p.flags, 0, 4, s), "cudaMemsetAsync");
  if (st.ok()) {
    cuda::RoutingLayoutArgs la;
    la.topkIdx = topkIdx;
    la.idxType = p.desc.idxType;
    la.topkWeights = topkWeights;
    la.numTokens = p.T;
    la.topk = (int)p.K;
    la.numExperts = p.E;
    la.ranks = p.W;
    la.ranksPerNode = p.G;
    la.cleanIdx = p.cleanIdx;
    la.weights = p.weights;
    la.tokenRankCounts = p.tokenRankCounts;
    la.tokenRankOffsets = p.tokenRankOffsets;
    la.expertCounts = p.expertCounts;
    la.rankTokens = p.rankTokens;
    la.nodeTokens = p.nodeTokens;
    la.pairPos = p.pairPos;
    la.flags = p.flags;
    la.temp = p.temp;
    la.tempBytes = p.tempBytes;
    st = cuda::computeRoutingLayout(la, s);
  }
  if (st.ok() && WP > 0)
    st = cudaStatus(cudaMemsetAsync(p.sendSrc, 0xFF, WP * 8, s),
                    "cudaMemsetAsync");
  if (st.ok()) {
    cuda::SourceSlotsArgs sa{
        p.cleanIdx,  p.weights, p.pairPos, p.tokenRankOffsets,
        p.T,         p.L,       p.P,       (int)p.K,
        p.W,         p.slotPos, p.sendSrc, p.sendMeta,
        p.sendCount, p.flags};
    st = cuda::launchSourceSlots(sa, s);
  }
  if (st.ok())
    st = cuda::gatherRowsDevice(*x, p.sendRows,
                                cuda::GatherIndex{p.sendSrc, true}, s);
  // The exchange.
  if (st.ok()) {
    Exchange ex = countExchange(p, p.sendCount, p.recvCount);
    fixedPart(ex, p.W, p.sendMeta, p.recvMeta, sizeof(cuda::CapacityMeta), p.P);
    fixedPart(ex, p.W, p.sendRows.data, p.recvSlots.data,
              p.H * elementSize(p.desc.wireType), p.P);
    if (isFp8(p.desc.wireType))
      fixedPart(ex, p.W, p.sendRows.scales, p.recvSlots.scales,
                fp8ScaleRowBytes(p.desc.wireType, p.H), p.P);
    st = runExchange(p, ex, moecommDirectionDispatch,
                     p.P * wireRowBytes(p.desc.wireType, p.H),
                     8 + p.P * (int64_t)sizeof(cuda::CapacityMeta), s);
  }
  // Destination side.
  if (st.ok()) {
    cuda::ReceiveKeysArgs ka{p.recvCount, p.recvMeta, p.P,
                             p.C,         p.L,        (int64_t)p.rank * p.L,
                             p.W,         p.kept,     p.recvRows,
                             p.dropped,   p.flags,    p.keysIn,
                             p.valuesIn};
    st = cuda::launchReceiveKeys(ka, s);
  }
  if (st.ok())
    st = cuda::sortReceivedSlots(p.keysIn, p.keysOut, p.valuesIn, p.valuesOut,
                                 WP, p.keyBits, p.temp, p.tempBytes, s);
  if (st.ok() && WP > 0)
    st = cudaStatus(cudaMemsetAsync(p.inverse, 0xFF, WP * 8, s),
                    "cudaMemsetAsync");
  if (st.ok())
    st = cudaStatus(cudaMemsetAsync(p.tokensPerExpert, 0, p.L * 8, s),
                    "cudaMemsetAsync");
  if (st.ok()) {
    cuda::ReceiveRowsArgs ra{
        p.recvRows,    p.keysOut,     p.valuesOut,      p.recvMeta,
        p.C,           p.P,           p.recvIndex,      p.inverse,
        p.recvWeights, p.recvSources, p.tokensPerExpert};
    st = cuda::launchReceiveRows(ra, s);
  }
  if (st.ok())
    st = cuda::gatherRowsDevice(p.recvSlots, *recv,
                                cuda::GatherIndex{p.recvIndex, false}, s);
  if (st.ok())
    st = t.asyncError();
  return onRank(p.rank, st);
}

Status capacityCombine(moecommCapacityPlan *plan, const moecommRows_t *y,
                       int weighted, const moecommRows_t *out,
                       moecommStream_t stream) {
  moecommCapacityPlan &p = *plan;
  cuda::NcclTransport &t = *p.transport;
  const int dev = t.device();
  cuda::DeviceGuard guard(dev);
  Status local = checkCallRows(guard, p, y, "y", p.C, out, "out", p.T);
  const bool check = !capturing(static_cast<cudaStream_t>(stream));
  if (check && local.ok())
    local = cuda::checkDeviceRows(*y, "y", dev);
  if (check && local.ok())
    local = cuda::checkDeviceRows(*out, "out", dev);
  if (Status st =
          agreeCall(p, OpKind::CapacityCombine, local, {weighted ? 1 : 0});
      !st.ok())
    return st;

  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const moecommDataType_t data = p.desc.dataType;
  // Each source's slots back, in the order it sent them.
  Status st = cuda::gatherRowsDevice(*y, p.combSend,
                                     cuda::GatherIndex{p.inverse, true}, s);
  if (st.ok()) {
    Exchange ex = countExchange(p, p.kept, p.keptBack);
    fixedPart(ex, p.W, p.combSend.data, p.combRecv.data,
              p.H * elementSize(data), p.P);
    st = runExchange(p, ex, moecommDirectionCombine,
                     p.P * wireRowBytes(data, p.H), 8, s);
  }
  if (st.ok())
    st = cuda::launchCombineSources(p.slotPos, p.keptBack, p.P, p.T * p.K,
                                    p.combSrc, s);
  if (st.ok()) {
    cuda::DeviceCsr m;
    m.offsets = p.combOffsets;
    m.src = p.combSrc;
    m.coefs = weighted ? p.weights : nullptr;
    st = cuda::reduceRowsDevice(p.combRecv, *out, m, s);
  }
  if (st.ok())
    st = t.asyncError();
  return onRank(p.rank, st);
}

} // namespace moecomm
