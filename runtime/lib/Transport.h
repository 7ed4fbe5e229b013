//===- Transport.h - The one transport interface of all backends -*- C++
//-*-===//
//
// A transport moves bytes between the W ranks of a communicator. It knows the
// topology (W ranks, G per node) and offers two operations:
//  - allGather: every rank contributes a block of the same size and receives
//    all W blocks (collective over all ranks; blocking, or started and
//    completed later);
//  - a ragged byte exchange inside a scope group (start/wait): block i of the
//    send buffer goes to group member i, one block is received from each
//    member; both sides know every size in advance (from the layout), and a
//    size that does not match is an error, not a hang (a pipelined exchange,
//    PipelinedOp.cpp, cuts blocks by their sizes, so there the layout's
//    agreement is what prevents a mismatch).
// Every collective operation carries a sequence number that is the same on
// every rank (the communicator hands them out in call order), so several
// exchanges may be outstanding at once. Backends: threads
// (ThreadsTransport.cpp), mpi (MpiTransport.cpp), nccl
// (cuda/NcclTransport.cpp: device-memory exchanges over NCCL, host-memory
// ones and allGather over a host channel; it also supplies a DeviceEngine).
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_TRANSPORT_H
#define MOECOMM_LIB_TRANSPORT_H

#include "Status.h"
#include "moecomm/Model/Traffic.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace moecomm {

class DeviceEngine;

/// One buffer pair of an exchange, made of rows of `rowBytes` bytes. All
/// arrays are indexed by group member; offsets and sizes are in bytes
/// (int64, multiples of rowBytes).
struct ExchangePart {
  int64_t rowBytes = 0;
  const uint8_t *send = nullptr;
  std::vector<int64_t> sendOffsets, sendBytes;
  /// Optional (shared-memory transports only): the send "buffer" is not
  /// contiguous; its k-th row is row sendRowIndex[k] of `send`, so a sender
  /// need not pack a gather (zero copy).
  const int64_t *sendRowIndex = nullptr;
  uint8_t *recv = nullptr;
  std::vector<int64_t> recvOffsets, recvBytes;

  /// Address of the k-th row of the block for member m.
  const uint8_t *sendRow(int m, int64_t k) const {
    int64_t i = sendOffsets[m] / rowBytes + k;
    return send + (sendRowIndex ? sendRowIndex[i] : i) * rowBytes;
  }
};

/// A ragged exchange inside the group of `scope` (member order as in
/// moecomm::scopeGroup). Several parts move together (e.g. FP8 rows and
/// their scales); each part is matched part by part.
struct Exchange {
  uint64_t seq = 0;
  moecommScope_t scope = moecommScopeGlobal;
  std::vector<ExchangePart> parts;
  /// The buffers are device memory (device backends only); otherwise host
  /// memory, which every transport accepts.
  bool deviceMemory = false;
};

/// A posted exchange; completed by Transport::waitExchange.
class PendingExchange {
public:
  virtual ~PendingExchange() = default;
};

/// A started allGather (Transport::allGatherStart); `done` with `status`
/// once complete.
class PendingGather {
public:
  virtual ~PendingGather() = default;
  bool done = false;
  Status status;
};

class Transport {
public:
  Transport(int rank, int size, int ranksPerNode)
      : rank_(rank), size_(size), ranksPerNode_(ranksPerNode) {}
  virtual ~Transport() = default;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int ranksPerNode() const { return ranksPerNode_; }
  /// Ranks of `scope`'s group containing this rank, in member order.
  std::vector<int> group(moecommScope_t scope) const;
  /// This rank's member index in `scope`'s group.
  int memberIndex(moecommScope_t scope) const;

  virtual moecommBackend_t backend() const = 0;

  /// Sequence numbers after which this transport's message tags repeat:
  /// Comm::reserveSeqs completes an outstanding request before its tags
  /// could be reused. In-memory transports key exchanges by the whole
  /// number (no repeat).
  virtual uint64_t tagSpace() const { return UINT64_MAX; }

  /// The device side of a device backend (nullptr: rows are host memory).
  virtual DeviceEngine *deviceEngine() { return nullptr; }

  /// Collective over all ranks: all[r * bytes, (r + 1) * bytes) receives
  /// rank r's block. Blocking.
  virtual Status allGather(uint64_t seq, const void *mine, int64_t bytes,
                           void *all) = 0;
  /// allGather started in call order and completed by testGather /
  /// waitGather; `mine` and `all` stay valid until it completes. This
  /// default runs the blocking allGather now (in-memory transports, where
  /// it costs little); MPI posts MPI_Iallgather, so that a start call does
  /// not wait for its agreement's bytes (queued behind earlier payload on a
  /// slow link).
  virtual std::unique_ptr<PendingGather>
  allGatherStart(uint64_t seq, const void *mine, int64_t bytes, void *all);
  /// Whether the gather completed (never blocks); its status is then kept
  /// for waitGather.
  virtual bool testGather(PendingGather &pending);
  /// Completes the gather (blocking) and returns its status.
  virtual Status waitGather(PendingGather &pending);

  /// Posts `ex`; buffers must stay valid until waitExchange returns.
  virtual Status startExchange(Exchange ex,
                               std::unique_ptr<PendingExchange> &pending) = 0;
  /// Completes a posted exchange: every block has arrived and (for the
  /// threads backend) every receiver has copied this rank's blocks. With
  /// `consumed`, this rank has already read its blocks in place through
  /// peers() and nothing is copied into its receive buffers.
  virtual Status waitExchange(std::unique_ptr<PendingExchange> pending,
                              bool consumed) = 0;

  /// Never blocks: does what waitExchange(pending, consumed) can do now
  /// without waiting for another rank (threads: copies the blocks of the
  /// members that have posted, or with `consumed` releases their rows; mpi:
  /// MPI_Testall) and returns true when waitExchange would now return at
  /// once. Failures are kept and reported by waitExchange. Used by the
  /// progress thread (ProgressEngine.h); a transport that cannot tell
  /// returns false (its exchanges complete in waitExchange).
  virtual bool testExchange(PendingExchange &pending, bool consumed) {
    (void)pending;
    (void)consumed;
    return false;
  }

  /// Lets posted exchanges advance while the caller computes between waits
  /// (a transport whose bytes move only inside its own calls, as Open MPI's
  /// TCP path does, would otherwise leave the link idle). Never blocks.
  virtual void progress() {}

  /// True when ranks share memory: sends may be row-indexed
  /// (ExchangePart::sendRowIndex) and receivers may read in place.
  virtual bool supportsDirect() const { return false; }
  /// Shared-memory transports: blocks until every member of the pending
  /// exchange's group has posted and returns their posted exchanges by
  /// member. Their rows stay readable until this rank calls
  /// waitExchange(pending, /*consumed=*/true).
  virtual Status peers(PendingExchange &pending,
                       std::vector<const Exchange *> &out) {
    (void)pending;
    (void)out;
    return internalError("this transport has no shared memory");
  }
  /// Shared-memory transports: whether every member of the pending
  /// exchange's group has posted (peers() then does not block). Never
  /// blocks.
  virtual bool peersPosted(PendingExchange &pending) {
    (void)pending;
    return false;
  }

private:
  int rank_, size_, ranksPerNode_;
};

} // namespace moecomm

#endif // MOECOMM_LIB_TRANSPORT_H
