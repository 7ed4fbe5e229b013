//===- DeviceOps.cpp - Dispatch, combine and exchanges on the GPU ---------===//
#include "DeviceOps.h"

#include "Comm.h"
#include "CudaEngine.h"
#include "Fp8.h"
#include "NcclTransport.h"
#include "RowExchange.h"
#include "RowKernels.h"

namespace moecomm {
namespace cuda {

//===--- Helpers ----------------------------------------------------------===//

Status DeviceRowBuffer::allocate(int64_t n, int64_t hidden,
                                 moecommDataType_t type, cudaStream_t stream,
                                 const char *what, cudaMemPool_t pool) {
  const bool fp8 = isFp8(type);
  const int64_t dataBytes = n * hidden * elementSize(type);
  const int64_t padded = (dataBytes + 255) / 256 * 256;
  const int64_t scaleBytes = n * fp8ScaleRowBytes(type, hidden);
  if (Status st = memory.allocate(padded + scaleBytes, stream, what, pool);
      !st.ok())
    return st;
  uint8_t *base = memory.as<uint8_t>();
  rows.data = base;
  rows.scales = fp8 && base ? base + padded : nullptr;
  rows.rows = n;
  rows.hidden = hidden;
  rows.type = type;
  return Status::success();
}

namespace {

/// The exchange of device rows `send` -> `recv` (RowExchange.h), with
/// its payload counted on `comm`.
Exchange deviceRowExchange(Comm &comm, moecommDirection_t direction,
                           moecommScope_t scope, const std::vector<int> &group,
                           const moecommRows_t &send,
                           const std::vector<int64_t> &sendCounts,
                           const moecommRows_t &recv,
                           const std::vector<int64_t> &recvCounts) {
  countRowPayload(comm, direction, scope, group, sendCounts, send.type,
                  send.hidden);
  Exchange ex = rowExchange(scope, send, nullptr, sendCounts, recv, recvCounts);
  ex.deviceMemory = true;
  return ex;
}

} // namespace

//===--- DeviceStagedOp ---------------------------------------------------===//

DeviceStagedOp::DeviceStagedOp(Comm &comm, NcclTransport &transport,
                               const DevicePlan &plan, const RankPlan &hostPlan,
                               moecommDirection_t direction,
                               const moecommRows_t &in,
                               const moecommRows_t &out,
                               moecommDataType_t stageType, bool weighted,
                               cudaStream_t stream)
    : comm_(comm), transport_(transport), plan_(plan.direction(direction)),
      hostPlan_(direction == moecommDirectionDispatch ? hostPlan.dispatch
                                                      : hostPlan.combine),
      dir_(direction), in_(in), out_(out), stageType_(stageType),
      weighted_(weighted), stream_(stream) {}

DeviceStagedOp::~DeviceStagedOp() {
  DeviceGuard guard(transport_.device());
  // Posted but never finished (an abandoned request): the communication
  // stream may still use the buffers.
  releaseAll(/*sync=*/posted_);
  if (done_)
    (void)cudaEventDestroy(done_);
}

void DeviceStagedOp::releaseAll(bool sync) {
  if (sync) {
    (void)cudaStreamSynchronize(transport_.commStream());
    (void)cudaStreamSynchronize(stream_);
    (void)cudaGetLastError();
  }
  for (DeviceRowBuffer &b : send_)
    b.memory.release(stream_);
  for (DeviceRowBuffer &b : recv_)
    b.memory.release(stream_);
  quantized_.memory.release(stream_);
  send_.clear();
  recv_.clear();
}

Status DeviceStagedOp::prepare() {
  DeviceGuard guard(transport_.device());
  if (!guard.status().ok())
    return guard.status();
  const int device = transport_.device();
  const bool dispatch = dir_ == moecommDirectionDispatch;
  if (Status st = checkDeviceRows(in_, dispatch ? "x" : "y", device); !st.ok())
    return st;
  if (Status st = checkDeviceRows(out_, dispatch ? "recv" : "out", device);
      !st.ok())
    return st;
  const size_t S = hostPlan_.stages.size();
  if (plan_.packs.size() != S)
    return internalError("the device plan does not match the layout");
  const int64_t H = in_.hidden;
  send_.resize(S);
  recv_.resize(S);
  for (size_t s = 0; s < S; ++s) {
    const StagePlan &sp = hostPlan_.stages[s];
    if (Status st =
            send_[s].allocate(sp.sendRows(), H, stageType_, stream_,
                              "a stage's send rows", transport_.memPool());
        !st.ok())
      return st;
    if (Status st =
            recv_[s].allocate(sp.recvRows(), H, stageType_, stream_,
                              "a stage's receive rows", transport_.memPool());
        !st.ok())
      return st;
  }
  if (S == 0 && dispatch && isFp8(stageType_) && !isFp8(in_.type))
    if (Status st =
            quantized_.allocate(in_.rows, H, stageType_, stream_,
                                "the quantized rows", transport_.memPool());
        !st.ok())
      return st;
  return cudaStatus(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming),
                    "cudaEventCreateWithFlags");
}

Status DeviceStagedOp::packStage(const DeviceMap &map,
                                 moecommDirection_t direction, bool weighted,
                                 moecommDataType_t stageType,
                                 const moecommRows_t &in,
                                 const moecommRows_t &out,
                                 cudaStream_t stream) {
  // The CPU's rule (mapGathers), with the device map's plain-gather test.
  const bool gather =
      mapGathers(direction, in.type, stageType,
                 map.plainGather(weighted) && map.gather);
  if (gather) {
    if (!map.gather)
      return internalError("a dispatch map has a row with several terms");
    return gatherRowsDevice(in, out, GatherIndex{map.gather, false}, stream);
  }
  return reduceRowsDevice(in, out, map.reduceMap(weighted), stream);
}

Status DeviceStagedOp::unpackStage(const DeviceMap &map,
                                   moecommDirection_t direction, bool weighted,
                                   const moecommRows_t &in,
                                   const moecommRows_t &out,
                                   cudaStream_t stream) {
  if (direction == moecommDirectionCombine)
    return reduceRowsDevice(in, out, map.reduceMap(weighted), stream);
  if (!map.gather)
    return internalError("the dispatch unpack has a row with several terms");
  return gatherRowsDevice(in, out, GatherIndex{map.gather, false}, stream);
}

Status DeviceStagedOp::postStage(size_t s) {
  const StagePlan &sp = hostPlan_.stages[s];
  return transport_.enqueue(deviceRowExchange(comm_, dir_, sp.scope, sp.group,
                                              send_[s].rows, sp.sendCounts,
                                              recv_[s].rows, sp.recvCounts));
}

Status DeviceStagedOp::post() {
  posted_ = true;
  DeviceGuard guard(transport_.device());
  Status st = guard.status();
  const size_t S = hostPlan_.stages.size();
  comm_.reserveSeqs(S);
  if (st.ok() && S > 0) {
    st = packStage(plan_.packs[0], dir_, weighted_, stageType_, in_,
                   send_[0].rows, stream_);
    if (st.ok())
      st = transport_.commWaits(stream_);
    for (size_t s = 0; st.ok() && s < S; ++s) {
      st = postStage(s);
      if (st.ok() && s + 1 < S)
        st = packStage(plan_.packs[s + 1], dir_, weighted_, stageType_,
                       recv_[s].rows, send_[s + 1].rows,
                       transport_.commStream());
    }
    if (st.ok())
      st = cudaStatus(cudaEventRecord(done_, transport_.commStream()),
                      "cudaEventRecord");
  }
  err_ = st;
  return st;
}

Status DeviceStagedOp::unpack(const moecommRows_t &in) {
  moecommRows_t src = in;
  if (dir_ == moecommDirectionDispatch && isFp8(quantized_.rows.type)) {
    // No exchange (W == 1): still quantize once, so the result does not
    // depend on the topology (as StagedOp.cpp does).
    if (Status st =
            gatherRowsDevice(in, quantized_.rows, GatherIndex{}, stream_);
        !st.ok())
      return st;
    src = quantized_.rows;
  }
  return unpackStage(plan_.unpack, dir_, weighted_, src, out_, stream_);
}

Status DeviceStagedOp::finish() {
  DeviceGuard guard(transport_.device());
  Status st = err_;
  if (!posted_)
    st = internalError("a device operation was finished before it was posted");
  if (st.ok())
    st = guard.status();
  const size_t S = hostPlan_.stages.size();
  if (st.ok() && S > 0)
    st = transport_.streamWaits(stream_, done_);
  if (st.ok())
    st = unpack(S > 0 ? recv_[S - 1].rows : in_);
  if (st.ok())
    st = transport_.asyncError();
  releaseAll(/*sync=*/!st.ok());
  posted_ = false; // finished: nothing left in flight that we own
  return st;
}

//===--- DeviceExchangeOp -------------------------------------------------===//

DeviceExchangeOp::DeviceExchangeOp(
    Comm &comm, NcclTransport &transport, moecommDirection_t direction,
    moecommScope_t scope, const moecommRows_t &send,
    std::vector<int64_t> sendCounts, const moecommRows_t &recv,
    std::vector<int64_t> recvCounts, cudaStream_t stream)
    : comm_(comm), transport_(transport), dir_(direction), scope_(scope),
      send_(send), recv_(recv), sendCounts_(std::move(sendCounts)),
      recvCounts_(std::move(recvCounts)), stream_(stream) {}

DeviceExchangeOp::~DeviceExchangeOp() {
  DeviceGuard guard(transport_.device());
  if (posted_) // abandoned: let the exchange finish with the buffers
    (void)cudaStreamSynchronize(transport_.commStream());
  if (done_)
    (void)cudaEventDestroy(done_);
  (void)cudaGetLastError();
}

Status DeviceExchangeOp::prepare() {
  DeviceGuard guard(transport_.device());
  if (!guard.status().ok())
    return guard.status();
  if (Status st = checkDeviceRows(send_, "send", transport_.device()); !st.ok())
    return st;
  if (Status st = checkDeviceRows(recv_, "recv", transport_.device()); !st.ok())
    return st;
  return cudaStatus(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming),
                    "cudaEventCreateWithFlags");
}

Status DeviceExchangeOp::post() {
  posted_ = true;
  DeviceGuard guard(transport_.device());
  Status st = guard.status();
  comm_.reserveSeqs(1);
  if (st.ok())
    st = transport_.commWaits(stream_);
  if (st.ok())
    st = transport_.enqueue(deviceRowExchange(comm_, dir_, scope_,
                                              transport_.group(scope_), send_,
                                              sendCounts_, recv_, recvCounts_));
  if (st.ok())
    st = cudaStatus(cudaEventRecord(done_, transport_.commStream()),
                    "cudaEventRecord");
  err_ = st;
  return st;
}

Status DeviceExchangeOp::finish() {
  DeviceGuard guard(transport_.device());
  Status st = err_;
  if (!posted_)
    st = internalError("a device operation was finished before it was posted");
  if (st.ok())
    st = transport_.streamWaits(stream_, done_);
  if (st.ok())
    st = transport_.asyncError();
  posted_ = false;
  return st;
}

} // namespace cuda
} // namespace moecomm
