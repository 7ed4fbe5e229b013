//===- Comm.cpp - The communicator behind moecommComm_t -------------------===//
#include "Comm.h"

#include "ApiBoundary.h"
#include "Fp8.h"
#include "ProgressEngine.h"
#include "Request.h"
#include "RowKernels.h"
#include "ThreadsTransport.h"
#include "moecomm/Model/CostModel.h"

#include <algorithm>
#include <atomic>
#include <cstring>

namespace moecomm {

const char *opName(OpKind op) {
  switch (op) {
  case OpKind::LayoutCreate:
    return "moecommLayoutCreate";
  case OpKind::LayoutFinish:
    return "moecommLayoutCreate (finish)";
  case OpKind::Dispatch:
    return "moecommDispatch";
  case OpKind::Combine:
    return "moecommCombine";
  case OpKind::AllToAll:
    return "moecommAllToAll";
  case OpKind::AllToAllCounts:
    return "moecommAllToAllCounts";
  case OpKind::Exchange:
    return "moecommExchange";
  case OpKind::AllReduceSum:
    return "moecommAllReduceSum";
  case OpKind::Barrier:
    return "moecommBarrier";
  case OpKind::GetTraffic:
    return "moecommCommGetTraffic";
  case OpKind::CommInit:
    return "moecommCommInitNccl";
  case OpKind::CapacityCreate:
    return "moecommCapacityPlanCreate";
  case OpKind::CapacityDispatch:
    return "moecommCapacityDispatch";
  case OpKind::CapacityCombine:
    return "moecommCapacityCombine";
  }
  return "an unknown collective";
}

void Signature::setError(const Status &st) {
  if (st.ok() || status != 0)
    return;
  status = (int32_t)st.code;
  size_t n = std::min(st.message.size(), sizeof(message) - 1);
  std::memcpy(message, st.message.data(), n);
  message[n] = '\0';
}

Comm::Comm(std::unique_ptr<Transport> transport, ThreadsShared *threads)
    : linkModel(defaultLinkModel()), transport_(std::move(transport)),
      threads_(threads) {
  static std::atomic<uint64_t> nextUid{1};
  uid_ = nextUid++;
  std::memset(&traffic_, 0, sizeof(traffic_));
  if (!transport_->deviceEngine())
    progress_ = std::make_unique<ProgressEngine>(*this);
}

Comm::~Comm() {
  progress_.reset();
  transport_.reset();
  if (threads_)
    threads_->leave();
}

moecommResult_t Comm::finish(const Status &st) {
  if (st.ok())
    return moecommSuccess;
  lastError_ = st.message.empty() ? moecommGetErrorString(st.code) : st.message;
  threadLastFailure() = Status::error(st.code, lastError_);
  if ((st.code == moecommSystemError || st.code == moecommInternalError) &&
      sticky_.ok())
    sticky_ = st;
  return st.code;
}

Status Comm::usable() const {
  if (sticky_.ok())
    return Status::success();
  return Status::error(
      sticky_.code,
      cat("the communicator is unusable after an earlier failure: ",
          sticky_.message));
}

uint64_t Comm::reserveSeqs(uint64_t n) {
  const uint64_t first = nextSeq_, last = first + n - 1;
  // A request whose numbers start at or below last - space may share a tag
  // with [first, last]; while its messages are in flight, a receive posted
  // for the new numbers could match one of them (the requests of a pipeline
  // post later pieces later, so the older message need not match first).
  const uint64_t space = transport_->tagSpace();
  while (!outstanding_.empty() && last >= space &&
         outstanding_.front()->firstSeq <= last - space)
    completeOldest(*this);
  nextSeq_ += n;
  return first;
}

Status Comm::allGather(const void *mine, int64_t bytes, void *all) {
  if (Status st = usable(); !st.ok())
    return st;
  Status st = transport_->allGather(reserveSeqs(1), mine, bytes, all);
  if (!st.ok())
    finish(st);
  return st;
}

std::unique_ptr<PendingGather>
Comm::startAgreement(const Signature &mine, Signature *all, uint64_t &opSeq0) {
  const uint64_t seq = reserveSeqs(kSeqsPerCollective);
  opSeq0 = seq + 1;
  return transport_->allGatherStart(seq, &mine, sizeof(Signature), all);
}

Status Comm::agree(const Signature &mine, const char *const *fieldNames,
                   uint64_t *opSeq0) {
  if (Status st = usable(); !st.ok())
    return st;
  std::vector<Signature> all(size(), Signature(OpKind::Barrier));
  // Started and waited for: every agreement, blocking here or left in
  // flight by a start call (AgreedOp.h), must be the same collective of the
  // transport (MPI_Iallgather; MPI does not match a blocking collective with
  // a nonblocking one), so that ranks calling different collectives meet in
  // one agreement and get Mismatch instead of a hang.
  uint64_t seq0 = 0;
  std::unique_ptr<PendingGather> pending =
      startAgreement(mine, all.data(), seq0);
  if (opSeq0)
    *opSeq0 = seq0;
  if (Status st = transport_->waitGather(*pending); !st.ok()) {
    finish(st);
    return st;
  }
  return decideAgreement(all, fieldNames);
}

Status decideAgreement(std::vector<Signature> &all,
                       const char *const *fieldNames) {
  const int W = (int)all.size();
  for (int r = 1; r < W; ++r)
    if (all[r].op != all[0].op)
      return mismatch(cat("ranks disagree on the collective: rank 0 calls ",
                          opName((OpKind)all[0].op), ", rank ", r, " calls ",
                          opName((OpKind)all[r].op)));
  for (int r = 0; r < W; ++r)
    if (all[r].status != moecommSuccess) {
      all[r].message[sizeof(all[r].message) - 1] = '\0';
      return Status::error((moecommResult_t)all[r].status, all[r].message);
    }
  for (int i = 0; i < all[0].numFields; ++i)
    for (int r = 1; r < W; ++r)
      if (all[r].numFields != all[0].numFields ||
          all[r].fields[i] != all[0].fields[i])
        return mismatch(cat("ranks disagree on ", fieldNames[i],
                            ": rank 0 has ", all[0].fields[i], ", rank ", r,
                            " has ", all[r].fields[i]));
  return Status::success();
}

void Comm::countPayload(moecommDirection_t dir, moecommScope_t scope, int peer,
                        int64_t bytes) {
  if (peer == rank() || bytes <= 0)
    return;
  int G = ranksPerNode();
  int link =
      peer / G == rank() / G ? moecommLinkIntraNode : moecommLinkInterNode;
  traffic_.bytes[dir][scope][link] += (uint64_t)bytes;
  traffic_.messages[dir][scope][link] += 1;
}

void Comm::countMetadata(int peer, int64_t bytes) {
  if (peer == rank() || bytes <= 0)
    return;
  int G = ranksPerNode();
  int link =
      peer / G == rank() / G ? moecommLinkIntraNode : moecommLinkInterNode;
  traffic_.metadataBytes[link] += (uint64_t)bytes;
  traffic_.metadataMessages[link] += 1;
}

PooledBuffer Comm::acquire(int64_t bytes) {
  bytes = std::max<int64_t>(bytes, 64);
  size_t best = pool_.size();
  for (size_t i = 0; i < pool_.size(); ++i)
    if (pool_[i].capacity >= bytes &&
        (best == pool_.size() || pool_[i].capacity < pool_[best].capacity))
      best = i;
  if (best < pool_.size()) {
    Free f = std::move(pool_[best]);
    pool_.erase(pool_.begin() + best);
    return PooledBuffer(this, std::move(f.mem), f.capacity);
  }
  return PooledBuffer(this, std::unique_ptr<uint8_t[]>(new uint8_t[bytes]),
                      bytes);
}

void Comm::release(std::unique_ptr<uint8_t[]> mem, int64_t capacity) {
  pool_.push_back({std::move(mem), capacity});
  // Keep a bounded number of buffers: drop the smallest.
  if (pool_.size() > 12) {
    auto it = std::min_element(
        pool_.begin(), pool_.end(),
        [](const Free &a, const Free &b) { return a.capacity < b.capacity; });
    pool_.erase(it);
  }
}

RowBuffer RowBuffer::make(Comm &comm, int64_t n, int64_t hidden,
                          moecommDataType_t type) {
  RowBuffer b;
  // Fits in int64: dispatch and combine agree on Sizes.h's blockFits for
  // every stage's rows before they start (checkStageBlocks in Collective.cpp).
  int64_t dataBytes = n * hidden * elementSize(type);
  int64_t padded = (dataBytes + 63) / 64 * 64;
  int64_t scaleBytes = n * fp8ScaleRowBytes(type, hidden);
  b.mem = comm.acquire(padded + scaleBytes);
  b.rows.data = b.mem.data();
  b.rows.scales = isFp8(type) ? b.mem.data() + padded : nullptr;
  b.rows.rows = n;
  b.rows.hidden = hidden;
  b.rows.type = type;
  return b;
}

} // namespace moecomm
