//===- NcclTransport.h - The nccl backend's transport -----------*- C++ -*-===//
//
// Implements Transport for one GPU per rank:
//  - device-memory exchanges are grouped ncclSend / ncclRecv (one
//    ncclGroupStart/End per exchange, every part and member in it; sizes
//    are bytes) on the communicator's communication stream, over the NCCL
//    communicator of the exchange's scope: the EP communicator (global), or
//    the intra-node (color node, key rank) and inter-node (color local rank,
//    key rank) communicators made by ncclCommSplit, whose NCCL ranks are
//    exactly the member indices of moecomm::scopeGroup;
//  - host-memory exchanges (the layout's routing records) and allGather (the
//    agreements) go over the host channel: an MPI transport, or a local one
//    when W = 1. They involve no GPU work;
//  - it owns the DeviceEngine (CudaEngine) that runs the kernels.
// The communication stream is joined to callers' streams with CUDA events
// (commWaits / streamWaits), so nothing here blocks the host except the
// generic waitExchange of a device exchange.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_CUDA_NCCLTRANSPORT_H
#define MOECOMM_LIB_CUDA_NCCLTRANSPORT_H

#include "Transport.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>

namespace moecomm {
namespace cuda {

/// The NCCL communicators of one rank. intra / inter may be `world` itself
/// when their group is every rank.
struct NcclComms {
  ncclComm_t world = nullptr, intra = nullptr, inter = nullptr;
};

/// Destroys each distinct communicator of `c` once (intra / inter that alias
/// `world` are not destroyed twice) and resets `c` to empty.
void destroyComms(NcclComms &c);

class NcclTransport final : public Transport {
public:
  /// Takes ownership of `host`, the communicators and `stream` (a
  /// non-blocking stream of `device`).
  NcclTransport(int rank, int size, int ranksPerNode, int device,
                std::unique_ptr<Transport> host, NcclComms comms,
                cudaStream_t stream);
  ~NcclTransport() override;

  moecommBackend_t backend() const override { return moecommBackendNccl; }
  DeviceEngine *deviceEngine() override { return engine_.get(); }

  Status allGather(uint64_t seq, const void *mine, int64_t bytes,
                   void *all) override;
  /// Host memory: over the host channel. Device memory: enqueue() plus an
  /// event that waitExchange synchronizes on.
  Status startExchange(Exchange ex,
                       std::unique_ptr<PendingExchange> &pending) override;
  Status waitExchange(std::unique_ptr<PendingExchange> pending,
                      bool consumed) override;

  int device() const { return device_; }
  cudaStream_t commStream() const { return stream_; }
  /// The communicator's own stream-ordered memory pool (per-operation
  /// scratch; it keeps its memory between operations, and leaves the
  /// device's default pool alone). nullptr if it could not be made.
  cudaMemPool_t memPool() const { return pool_; }

  /// Enqueues `ex` (device memory, no row index) on the communication
  /// stream as one NCCL group. Block m of each part goes to / comes from
  /// member m of ex.scope's group.
  Status enqueue(const Exchange &ex);
  /// The communication stream waits for the work enqueued on `stream` so
  /// far.
  Status commWaits(cudaStream_t stream);
  /// `stream` waits for the communication stream's work so far (via the
  /// reusable event), or for `event` when it is given.
  Status streamWaits(cudaStream_t stream, cudaEvent_t event = nullptr);
  /// An asynchronous NCCL error of any of the communicators, if one
  /// happened.
  Status asyncError();

private:
  ncclComm_t commOf(moecommScope_t scope) const;

  int device_;
  std::unique_ptr<Transport> host_;
  NcclComms comms_;
  cudaStream_t stream_;
  cudaEvent_t toComm_ = nullptr, toCaller_ = nullptr;
  cudaMemPool_t pool_ = nullptr;
  std::unique_ptr<DeviceEngine> engine_; // last: destroyed first
};

} // namespace cuda
} // namespace moecomm

#endif // MOECOMM_LIB_CUDA_NCCLTRANSPORT_H
