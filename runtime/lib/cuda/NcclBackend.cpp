//===- NcclBackend.cpp - Creating the nccl transport ----------------------===//
//
// Every step that can fail on one rank ends with an agreement over the host
// channel (an allGather of Signatures, as Comm::agree does), so all ranks
// return the same error instead of some waiting in NCCL for the others:
//   1. pick and check the CUDA device          -> agree
//   2. rank 0: ncclGetUniqueId; allGather       (everyone reads rank 0's)
//   3. ncclCommInitRank                        -> agree
//   4. ncclCommSplit (intra, inter) and stream -> agree
// A rank that fails *inside* ncclCommInitRank / ncclCommSplit while others
// wait there cannot be helped without NCCL's non-blocking mode; NCCL then
// reports the failure on the others too or they time out (docs/gpu.md).
//
//===----------------------------------------------------------------------===//
#include "NcclBackend.h"

#include "Comm.h"
#include "CudaCheck.h"
#include "NcclTransport.h"

#include <cstdio>
#include <cstring>

namespace moecomm {

namespace {

/// W = 1: everything is a copy to self.
class SelfTransport final : public Transport {
public:
  SelfTransport() : Transport(0, 1, 1) {}
  moecommBackend_t backend() const override { return moecommBackendNccl; }
  Status allGather(uint64_t, const void *mine, int64_t bytes,
                   void *all) override {
    if (bytes > 0)
      std::memcpy(all, mine, (size_t)bytes);
    return Status::success();
  }
  Status startExchange(Exchange ex,
                       std::unique_ptr<PendingExchange> &pending) override {
    pending = std::make_unique<PendingExchange>();
    if (ex.deviceMemory)
      return internalError("the host channel moves host memory only");
    for (const ExchangePart &p : ex.parts) {
      if (p.sendBytes.size() != 1 || p.recvBytes.size() != 1 ||
          p.sendBytes[0] != p.recvBytes[0])
        return internalError("a one-rank exchange must send itself what it "
                             "expects");
      if (p.sendRowIndex)
        return internalError("the host channel needs packed sends");
      if (p.sendBytes[0] > 0)
        std::memcpy(p.recv + p.recvOffsets[0], p.send + p.sendOffsets[0],
                    (size_t)p.sendBytes[0]);
    }
    return Status::success();
  }
  Status waitExchange(std::unique_ptr<PendingExchange>,
                      bool consumed) override {
    if (consumed)
      return internalError("the host channel cannot be read in place");
    return Status::success();
  }
};

/// Every rank's verdict on `local`, identically on every rank.
Status agreeOnHost(Transport &host, const Status &local) {
  Signature mine(OpKind::CommInit);
  mine.setError(local);
  std::vector<Signature> all(host.size(), Signature(OpKind::CommInit));
  if (Status st = host.allGather(0, &mine, sizeof(Signature), all.data());
      !st.ok())
    return st;
  return decideAgreement(all, nullptr);
}

/// Step 1: the device this rank drives.
Status pickDevice(const Transport &host, int requested, int &device) {
  const int me = host.rank();
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return Status::error(moecommUnsupported,
                         cat("rank ", me,
                             ": no CUDA device: cudaGetDeviceCount"
                             " failed: ",
                             cudaGetErrorName(err), ": ",
                             cudaGetErrorString(err)));
  }
  if (count < 1)
    return Status::error(moecommUnsupported,
                         cat("rank ", me, ": no CUDA device is visible"));
  if (requested < -1)
    return invalidArgument(
        cat("rank ", me, ": cudaDevice must be >= -1, got ", requested));
  if (requested >= count)
    return invalidArgument(cat("rank ", me, ": CUDA device ", requested,
                               " does not exist (", count, " visible)"));
  if (requested >= 0) {
    device = requested;
  } else if (host.size() == 1) {
    if (Status st = cuda::cudaStatus(cudaGetDevice(&device), "cudaGetDevice");
        !st.ok())
      return st;
  } else {
    device = (me % host.ranksPerNode()) % count;
  }
  return cuda::cudaStatus(cudaSetDevice(device), "cudaSetDevice");
}

struct IdMessage {
  int32_t status = 0;
  ncclUniqueId id{};
  char message[256] = {};
};

} // namespace

std::unique_ptr<Transport> createSelfTransport() {
  return std::make_unique<SelfTransport>();
}

Status createNcclTransport(std::unique_ptr<Transport> host, int cudaDevice,
                           std::unique_ptr<Transport> &out) {
  if (!host)
    return internalError("no host channel");
  const int W = host->size(), me = host->rank(), G = host->ranksPerNode();
  int device = 0;
  Status local = pickDevice(*host, cudaDevice, device);
  if (Status st = agreeOnHost(*host, local); !st.ok())
    return st;
  // pickDevice made `device` current; it stays current (NCCL needs it for
  // ncclCommInitRank, and the caller's allocations belong there).

  // Rank 0's unique id, to every rank over the host channel.
  IdMessage mine;
  if (me == 0) {
    ncclResult_t r = ncclGetUniqueId(&mine.id);
    if (r != ncclSuccess) {
      mine.status = moecommSystemError;
      std::snprintf(mine.message, sizeof(mine.message),
                    "rank 0: ncclGetUniqueId failed: %s",
                    ncclGetErrorString(r));
    }
  }
  std::vector<IdMessage> ids(W);
  if (Status st = host->allGather(0, &mine, sizeof(IdMessage), ids.data());
      !st.ok())
    return st;
  if (ids[0].status != 0) {
    ids[0].message[sizeof(ids[0].message) - 1] = '\0';
    return systemError(ids[0].message);
  }

  cuda::NcclComms comms;
  local = cuda::ncclStatus(ncclCommInitRank(&comms.world, W, ids[0].id, me),
                           "ncclCommInitRank", nullptr);
  local = onRank(me, local);
  if (Status st = agreeOnHost(*host, local); !st.ok()) {
    cuda::destroyComms(comms);
    return st;
  }

  // Scope communicators: reuse the EP communicator when the group is
  // everyone (intra when G == W, inter when G == 1); ncclCommSplit is
  // collective over the EP communicator, and the conditions are the same on
  // every rank.
  comms.intra = comms.inter = comms.world;
  if (G != W)
    local = cuda::ncclStatus(
        ncclCommSplit(comms.world, me / G, me, &comms.intra, nullptr),
        "ncclCommSplit (intra-node)", comms.world);
  if (local.ok() && G != 1)
    local = cuda::ncclStatus(
        ncclCommSplit(comms.world, me % G, me, &comms.inter, nullptr),
        "ncclCommSplit (inter-node)", comms.world);
  cudaStream_t stream = nullptr;
  if (local.ok()) {
    int least = 0, greatest = 0;
    (void)cudaDeviceGetStreamPriorityRange(&least, &greatest);
    local = cuda::cudaStatus(
        cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, greatest),
        "cudaStreamCreateWithPriority");
  }
  local = onRank(me, local);
  if (Status st = agreeOnHost(*host, local); !st.ok()) {
    if (stream)
      (void)cudaStreamDestroy(stream);
    cuda::destroyComms(comms);
    return st;
  }
  out = std::make_unique<cuda::NcclTransport>(me, W, G, device, std::move(host),
                                              comms, stream);
  return Status::success();
}

Status ncclDeviceOf(Transport &transport, int &device) {
  auto *t = dynamic_cast<cuda::NcclTransport *>(&transport);
  if (!t)
    return invalidArgument("the communicator is not of backend nccl");
  device = t->device();
  return Status::success();
}

} // namespace moecomm
