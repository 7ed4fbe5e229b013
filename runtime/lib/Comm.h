//===- Comm.h - The communicator behind moecommComm_t -----------*- C++ -*-===//
//
// A communicator owns its transport, the sticky error state (a transport
// failure makes it unusable; input errors do not), the last-error message,
// the traffic counters, the link model of moecommAuto, a pool of scratch
// buffers, the sequence numbers of its collectives and its outstanding
// requests and its trace, and on the CPU backends the progress thread that
// drives those requests (ProgressEngine.h). Every runtime call on it and
// every sweep of its progress thread hold its mutex.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_COMM_H
#define MOECOMM_LIB_COMM_H

#include "Status.h"
#include "Trace.h"
#include "Transport.h"
#include "moecomm/moecomm.h"

#include <deque>
#include <memory>
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

struct moecommRequest;

namespace moecomm {

class ProgressEngine;
class ThreadsShared;

/// Collective kinds, compared across ranks before anything moves.
enum class OpKind : int32_t {
  LayoutCreate = 1,
  LayoutFinish,
  Dispatch,
  Combine,
  AllToAll,
  AllToAllCounts,
  Exchange,
  AllReduceSum,
  Barrier,
  GetTraffic,
  CommInit,         ///< creation of a communicator (nccl backend)
  CapacityCreate,   ///< moecommCapacityPlanCreate (nccl backend)
  CapacityDispatch, ///< moecommCapacityDispatch
  CapacityCombine,  ///< moecommCapacityCombine
};
const char *opName(OpKind op);

/// Messages a host operation sends per stage at most (PipelinedOp's chunks
/// of a block; one sequence number each).
constexpr uint64_t kMaxChunksPerStage = 32;
/// Sequence numbers one collective takes: its agreement's, then its
/// operation's (at most 2 stages, numStages in StageRule.h, of
/// kMaxChunksPerStage each). Every agreement reserves all of them whatever
/// it decides and whichever collective each rank called, so that the ranks'
/// numbers stay in step after a disagreement or a rank's local error, also
/// when the operation was created before its agreement completed
/// (AgreedOp.h).
constexpr uint64_t kSeqsPerCollective = 1 + 2 * kMaxChunksPerStage;

/// The fixed-size block every rank contributes when a collective starts: the
/// operation, this rank's local verdict on its arguments and the parameters
/// that must be equal on every rank.
struct Signature {
  static constexpr int kMaxFields = 14;
  int32_t op = 0;
  int32_t status = 0; ///< moecommResult_t of the local checks
  int32_t numFields = 0;
  int32_t pad = 0;
  int64_t fields[kMaxFields] = {};
  char message[416] = {};

  Signature(OpKind op) : op((int32_t)op) {}
  /// Appends a parameter that must agree on all ranks.
  void add(int64_t v) {
    if (numFields < kMaxFields)
      fields[numFields++] = v;
  }
  /// Records this rank's local error (the first one wins).
  void setError(const Status &st);
};

/// The verdict of an agreement from every rank's signature (all[r]),
/// identical on every rank: Mismatch if ranks run different collectives,
/// else the lowest failing rank's local error, else Mismatch naming the
/// first parameter (fieldNames[i]) that differs from rank 0's.
Status decideAgreement(std::vector<Signature> &all,
                       const char *const *fieldNames);

/// A scratch buffer from the communicator's pool; returns itself on
/// destruction.
class PooledBuffer;

class Comm {
public:
  /// Starts the progress thread unless the transport is a device backend's
  /// (its operations are ordered on the device's streams).
  explicit Comm(std::unique_ptr<Transport> transport,
                ThreadsShared *threads = nullptr);
  /// Joins the progress thread first. The caller must not hold mutex().
  ~Comm();

  /// Held by every runtime call on this communicator (ApiBoundary.h) and
  /// by each sweep of its progress thread.
  std::mutex &mutex() { return mutex_; }
  /// How a runtime call takes mutex(): counted while it waits, so the
  /// progress thread lets it in before its next sweep (std::mutex is not
  /// fair: a thread that unlocks and relocks every few microseconds can keep
  /// a woken caller out for seconds, which stalled compiled code's exchange
  /// starts on the emulated cluster).
  std::unique_lock<std::mutex> lockForCall() {
    callsWaiting_.fetch_add(1, std::memory_order_relaxed);
    std::unique_lock<std::mutex> lock(mutex_);
    callsWaiting_.fetch_sub(1, std::memory_order_relaxed);
    return lock;
  }
  /// Whether a runtime call waits for mutex().
  bool callWaiting() const {
    return callsWaiting_.load(std::memory_order_relaxed) > 0;
  }
  /// The progress thread, or nullptr on a device backend.
  ProgressEngine *progressEngine() { return progress_.get(); }

  Transport &transport() { return *transport_; }
  int rank() const { return transport_->rank(); }
  int size() const { return transport_->size(); }
  int ranksPerNode() const { return transport_->ranksPerNode(); }
  ThreadsShared *threadsShared() const { return threads_; }
  /// Unique in the process (never reused, unlike the address).
  uint64_t uid() const { return uid_; }

  //--- errors --------------------------------------------------------------
  /// Records `st` as this call's result: a failure becomes the last-error
  /// message, a transport or internal failure also makes the communicator
  /// unusable. Returns st.code.
  moecommResult_t finish(const Status &st);
  /// The sticky error, or success if the communicator is usable.
  Status usable() const;
  const char *lastError() const { return lastError_.c_str(); }

  //--- collectives ---------------------------------------------------------
  /// Reserves `n` consecutive sequence numbers (the same on every rank, as
  /// collectives are issued in the same order). Where the transport's tags
  /// repeat (Transport::tagSpace), it first completes (blocking) every
  /// outstanding request that could still have a message in flight with a
  /// tag of the new numbers: the oldest ones, in start order.
  uint64_t reserveSeqs(uint64_t n);
  /// The first number reserveSeqs will hand out next.
  uint64_t nextSeq() const { return nextSeq_; }
  /// Agreement: allGathers `mine` and returns, identically on every rank,
  /// Mismatch if ranks run different collectives, else the lowest failing
  /// rank's local error, else Mismatch naming the first parameter
  /// (fieldNames[i]) that differs from rank 0's. Reserves the collective's
  /// kSeqsPerCollective sequence numbers; `opSeq0`, when given, receives
  /// the first of those its operation may use.
  Status agree(const Signature &mine, const char *const *fieldNames,
               uint64_t *opSeq0 = nullptr);
  /// The agreement's all-gather of `mine` into `all` ([W] signatures),
  /// started now with the collective's sequence numbers reserved (the first
  /// its operation may use in `opSeq0`) and completed by the transport's
  /// testGather / waitGather: agree() waits for it, AgreedOp.h leaves it in
  /// flight. Then decideAgreement decides.
  std::unique_ptr<PendingGather>
  startAgreement(const Signature &mine, Signature *all, uint64_t &opSeq0);
  /// allGather of a fixed-size block (all = [W][bytes]).
  Status allGather(const void *mine, int64_t bytes, void *all);

  //--- traffic -------------------------------------------------------------
  void countPayload(moecommDirection_t dir, moecommScope_t scope, int peer,
                    int64_t bytes);
  void countMetadata(int peer, int64_t bytes);
  moecommTraffic_t &traffic() { return traffic_; }
  moecommLinkModel_t linkModel;
  /// moecommCommSetPipelineChunkBytes (PipelinedOp.cpp).
  int64_t pipelineChunkBytes = MOECOMM_DEFAULT_PIPELINE_CHUNK_BYTES;

  //--- trace ---------------------------------------------------------------
  Trace &trace() { return trace_; }

  //--- layouts and requests ------------------------------------------------
  int64_t nextLayoutId() { return ++layoutIds_; }
  /// Requests not completed yet, in start order.
  std::deque<moecommRequest *> &outstanding() { return outstanding_; }
  /// Requests handed out and not yet waited: the communicator may be
  /// destroyed only when this is 0 (a completed request still refers to
  /// it until its wait).
  int64_t &unwaited() { return unwaited_; }

  //--- scratch buffers -----------------------------------------------------
  PooledBuffer acquire(int64_t bytes);
  void release(std::unique_ptr<uint8_t[]> mem, int64_t capacity);

private:
  std::unique_ptr<Transport> transport_;
  ThreadsShared *threads_;
  uint64_t uid_;
  Status sticky_;
  std::string lastError_;
  moecommTraffic_t traffic_;
  uint64_t nextSeq_ = 1;
  int64_t layoutIds_ = 0;
  std::deque<moecommRequest *> outstanding_;
  int64_t unwaited_ = 0;
  Trace trace_;
  struct Free {
    std::unique_ptr<uint8_t[]> mem;
    int64_t capacity;
  };
  std::vector<Free> pool_;
  std::mutex mutex_;
  std::atomic<int> callsWaiting_{0};
  /// Last: started when everything else is built.
  std::unique_ptr<ProgressEngine> progress_;
};

class PooledBuffer {
public:
  PooledBuffer() = default;
  PooledBuffer(Comm *owner, std::unique_ptr<uint8_t[]> mem, int64_t capacity)
      : owner_(owner), mem_(std::move(mem)), capacity_(capacity) {}
  PooledBuffer(PooledBuffer &&o) noexcept { *this = std::move(o); }
  PooledBuffer &operator=(PooledBuffer &&o) noexcept {
    reset();
    owner_ = o.owner_;
    mem_ = std::move(o.mem_);
    capacity_ = o.capacity_;
    o.owner_ = nullptr;
    o.capacity_ = 0;
    return *this;
  }
  ~PooledBuffer() { reset(); }
  uint8_t *data() const { return mem_.get(); }
  void reset() {
    if (owner_ && mem_)
      owner_->release(std::move(mem_), capacity_);
    owner_ = nullptr;
    mem_.reset();
    capacity_ = 0;
  }

private:
  Comm *owner_ = nullptr;
  std::unique_ptr<uint8_t[]> mem_;
  int64_t capacity_ = 0;
};

/// A block of rows in pooled memory (data plus, for FP8, scales).
struct RowBuffer {
  PooledBuffer mem;
  moecommRows_t rows{};
  /// Allocates `n` rows of `hidden` elements of `type` from `comm`'s pool.
  static RowBuffer make(Comm &comm, int64_t n, int64_t hidden,
                        moecommDataType_t type);
};

} // namespace moecomm

/// The C handle.
struct moecommComm final : moecomm::Comm {
  using moecomm::Comm::Comm;
};

#endif // MOECOMM_LIB_COMM_H
