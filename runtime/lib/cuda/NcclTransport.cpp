//===- NcclTransport.cpp - The nccl backend's transport -------------------===//
#include "NcclTransport.h"

#include "CudaCheck.h"
#include "CudaEngine.h"

#include <cstdint>

namespace moecomm {
namespace cuda {

namespace {

/// A posted exchange: over the host channel, or an event after the NCCL
/// group on the communication stream.
class NcclPending : public PendingExchange {
public:
  std::unique_ptr<PendingExchange> host;
  cudaEvent_t done = nullptr;
  ~NcclPending() override {
    if (done)
      (void)cudaEventDestroy(done);
  }
};

} // namespace

void destroyComms(NcclComms &c) {
  if (c.inter && c.inter != c.world)
    (void)ncclCommDestroy(c.inter);
  if (c.intra && c.intra != c.world)
    (void)ncclCommDestroy(c.intra);
  if (c.world)
    (void)ncclCommDestroy(c.world);
  c = NcclComms();
}

NcclTransport::NcclTransport(int rank, int size, int ranksPerNode, int device,
                             std::unique_ptr<Transport> host, NcclComms comms,
                             cudaStream_t stream)
    : Transport(rank, size, ranksPerNode), device_(device),
      host_(std::move(host)), comms_(comms), stream_(stream) {
  DeviceGuard guard(device_);
  if (cudaEventCreateWithFlags(&toComm_, cudaEventDisableTiming) !=
          cudaSuccess ||
      cudaEventCreateWithFlags(&toCaller_, cudaEventDisableTiming) !=
          cudaSuccess)
    (void)cudaGetLastError(); // reported by commWaits / streamWaits
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device_;
  if (cudaMemPoolCreate(&pool_, &props) == cudaSuccess) {
    // Keep freed scratch for the next operation instead of returning it to
    // the driver at every synchronization.
    uint64_t keep = UINT64_MAX;
    (void)cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold,
                                  &keep);
  } else {
    pool_ = nullptr; // fall back to the default pool
    (void)cudaGetLastError();
  }
  engine_ = std::make_unique<CudaEngine>(*this);
}

NcclTransport::~NcclTransport() {
  engine_.reset();
  DeviceGuard guard(device_);
  (void)cudaStreamSynchronize(stream_);
  destroyComms(comms_);
  if (toComm_)
    (void)cudaEventDestroy(toComm_);
  if (toCaller_)
    (void)cudaEventDestroy(toCaller_);
  if (pool_) // released once its last (asynchronously freed) block is
    (void)cudaMemPoolDestroy(pool_);
  (void)cudaStreamDestroy(stream_);
  (void)cudaGetLastError();
}

ncclComm_t NcclTransport::commOf(moecommScope_t scope) const {
  switch (scope) {
  case moecommScopeIntraNode:
    return comms_.intra;
  case moecommScopeInterNode:
    return comms_.inter;
  default:
    return comms_.world;
  }
}

Status NcclTransport::allGather(uint64_t seq, const void *mine, int64_t bytes,
                                void *all) {
  return host_->allGather(seq, mine, bytes, all);
}

Status NcclTransport::enqueue(const Exchange &ex) {
  const ncclComm_t comm = commOf(ex.scope);
  const int n = (int)group(ex.scope).size();
  const int me = memberIndex(ex.scope);
  for (const ExchangePart &p : ex.parts) {
    if (p.sendRowIndex)
      return internalError("the nccl transport needs packed sends");
    if ((int)p.sendBytes.size() != n || (int)p.recvBytes.size() != n ||
        (int)p.sendOffsets.size() != n || (int)p.recvOffsets.size() != n)
      return internalError(cat("exchange parts must have ", n, " members"));
    if (p.sendBytes[me] != p.recvBytes[me])
      return internalError(cat("rank ", rank(), " sends itself ",
                               p.sendBytes[me], " bytes but expects ",
                               p.recvBytes[me]));
  }
  DeviceGuard guard(device_);
  if (!guard.status().ok())
    return guard.status();
  Status st = ncclStatus(ncclGroupStart(), "ncclGroupStart", comm);
  if (!st.ok())
    return st;
  // Every block of every part in one group: NCCL progresses them together,
  // so the order of the calls cannot deadlock.
  for (const ExchangePart &p : ex.parts)
    for (int m = 0; m < n && st.ok(); ++m) {
      if (p.sendBytes[m] > 0)
        st = ncclStatus(ncclSend(p.send + p.sendOffsets[m],
                                 (size_t)p.sendBytes[m], ncclUint8, m, comm,
                                 stream_),
                        "ncclSend", comm);
      if (st.ok() && p.recvBytes[m] > 0)
        st = ncclStatus(ncclRecv(p.recv + p.recvOffsets[m],
                                 (size_t)p.recvBytes[m], ncclUint8, m, comm,
                                 stream_),
                        "ncclRecv", comm);
    }
  Status end = ncclStatus(ncclGroupEnd(), "ncclGroupEnd", comm);
  return st.ok() ? end : st;
}

Status NcclTransport::commWaits(cudaStream_t stream) {
  if (!toComm_)
    return systemError("the nccl transport has no CUDA events");
  if (Status st =
          cudaStatus(cudaEventRecord(toComm_, stream), "cudaEventRecord");
      !st.ok())
    return st;
  return cudaStatus(cudaStreamWaitEvent(stream_, toComm_, 0),
                    "cudaStreamWaitEvent");
}

Status NcclTransport::streamWaits(cudaStream_t stream, cudaEvent_t event) {
  if (!event) {
    if (!toCaller_)
      return systemError("the nccl transport has no CUDA events");
    event = toCaller_;
    if (Status st =
            cudaStatus(cudaEventRecord(event, stream_), "cudaEventRecord");
        !st.ok())
      return st;
  }
  return cudaStatus(cudaStreamWaitEvent(stream, event, 0),
                    "cudaStreamWaitEvent");
}

Status NcclTransport::asyncError() {
  for (ncclComm_t c : {comms_.world, comms_.intra, comms_.inter}) {
    if (!c)
      continue;
    ncclResult_t async = ncclSuccess;
    if (Status st = ncclStatus(ncclCommGetAsyncError(c, &async),
                               "ncclCommGetAsyncError", c);
        !st.ok())
      return st;
    if (async != ncclSuccess && async != ncclInProgress)
      return ncclStatus(async, "an NCCL operation", c);
  }
  return Status::success();
}

Status NcclTransport::startExchange(Exchange ex,
                                    std::unique_ptr<PendingExchange> &pending) {
  auto p = std::make_unique<NcclPending>();
  Status st;
  if (!ex.deviceMemory) {
    st = host_->startExchange(std::move(ex), p->host);
  } else {
    DeviceGuard guard(device_);
    st = enqueue(ex);
    if (st.ok())
      st =
          cudaStatus(cudaEventCreateWithFlags(&p->done, cudaEventDisableTiming),
                     "cudaEventCreateWithFlags");
    if (st.ok())
      st = cudaStatus(cudaEventRecord(p->done, stream_), "cudaEventRecord");
  }
  pending = std::move(p);
  return st;
}

Status NcclTransport::waitExchange(std::unique_ptr<PendingExchange> pending,
                                   bool consumed) {
  if (consumed)
    return internalError("the nccl transport cannot be read in place");
  auto *p = static_cast<NcclPending *>(pending.get());
  if (p->host)
    return host_->waitExchange(std::move(p->host), false);
  if (!p->done)
    return Status::success();
  DeviceGuard guard(device_);
  Status st = cudaStatus(cudaEventSynchronize(p->done), "cudaEventSynchronize");
  if (st.ok())
    st = asyncError();
  return st;
}

} // namespace cuda
} // namespace moecomm
