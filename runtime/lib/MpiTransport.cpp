//===- MpiTransport.cpp - One process per rank over Open MPI --------------===//
//
// Exchanges are MPI_Isend/MPI_Irecv of bytes on the scope's communicator,
// tagged by the sequence number, in messages of at most 1 MiB; the copy to self
// is a memcpy. allGather is MPI_Allgather, a started one (the agreements)
// MPI_Iallgather. MPI must provide MPI_THREAD_MULTIPLE: the communicator's
// progress thread tests its requests (under the communicator's lock) while
// other threads of the application may call MPI themselves.
//
//===----------------------------------------------------------------------===//
#include "MpiTransport.h"

#include <algorithm>
#include <cstring>

namespace moecomm {

namespace {

/// The largest allGather block (MPI counts are int).
constexpr int64_t kMaxGatherBytes = int64_t(1) << 30;
Status checkGatherBytes(int64_t bytes) {
  return bytes > kMaxGatherBytes ? internalError("allGather block too large")
                                 : Status::success();
}
/// An exchange's block travels as messages of at most this many bytes (the
/// pieces of one block share its tag and match in order). So every message
/// can be sent eagerly with a transport eager limit of 1 MiB or more: a
/// rendezvous message waits for the receiver's acknowledgement, which over
/// TCP queues behind the receiver's own bulk to the sender, so the two
/// directions of a large exchange moved one after the other (2 x 1, 25
/// Mbit/s, 1024 tokens per rank: the compiled identity layer's 7.5 and 14.7
/// MB blocks took 2x their link time; docs/BENCHMARKS.md, "Overlap").
constexpr int64_t kMessageBytes = int64_t(1) << 20;
// Tags repeat every kTagSpace sequence numbers (every collective takes
// kSeqsPerCollective, 65, Comm.h: some 490 collectives); Comm::reserveSeqs
// completes an outstanding request before its tags are handed out again.
constexpr uint64_t kTagSpace = 32000; // MPI_TAG_UB >= 32767

std::string mpiError(int err) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(err, buf, &len);
  return std::string(buf, len);
}

/// The name of a thread level below MPI_THREAD_MULTIPLE.
const char *threadLevelName(int level) {
  return level == MPI_THREAD_SINGLE     ? "MPI_THREAD_SINGLE"
         : level == MPI_THREAD_FUNNELED ? "MPI_THREAD_FUNNELED"
                                        : "MPI_THREAD_SERIALIZED";
}

Status check(int err, const char *what) {
  if (err == MPI_SUCCESS)
    return Status::success();
  return systemError(cat(what, " failed: ", mpiError(err)));
}

/// A started MPI_Iallgather (an agreement in flight, AgreedOp.h).
class MpiGather : public PendingGather {
public:
  MPI_Request req = MPI_REQUEST_NULL;
};

class MpiPending : public PendingExchange {
public:
  Exchange ex;
  std::vector<MPI_Request> requests;
  // For each receive request: the bytes expected.
  std::vector<int64_t> expectBytes;
  std::vector<bool> isRecv;
  /// Set once MPI_Testall found every request complete or failed: `err` and
  /// `statuses` are then its results, which waitExchange checks.
  bool completed = false;
  int err = MPI_SUCCESS;
  std::vector<MPI_Status> statuses;
};

class MpiTransport : public Transport {
public:
  MpiTransport(int rank, int size, int G, MPI_Comm world, MPI_Comm intra,
               MPI_Comm inter, MPI_Comm quiet)
      : Transport(rank, size, G), world_(world), intra_(intra), inter_(inter),
        quiet_(quiet) {}
  ~MpiTransport() override {
    MPI_Comm_free(&quiet_);
    MPI_Comm_free(&inter_);
    MPI_Comm_free(&intra_);
    MPI_Comm_free(&world_);
  }

  moecommBackend_t backend() const override { return moecommBackendMpi; }
  uint64_t tagSpace() const override { return kTagSpace; }

  Status allGather(uint64_t, const void *mine, int64_t bytes,
                   void *all) override {
    if (Status st = checkGatherBytes(bytes); !st.ok())
      return st;
    return check(MPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes,
                               MPI_BYTE, world_),
                 "MPI_Allgather");
  }

  std::unique_ptr<PendingGather> allGatherStart(uint64_t, const void *mine,
                                                int64_t bytes,
                                                void *all) override {
    auto p = std::make_unique<MpiGather>();
    p->status = checkGatherBytes(bytes);
    if (!p->status.ok()) {
      p->done = true;
      return p;
    }
    p->status = check(MPI_Iallgather(mine, (int)bytes, MPI_BYTE, all,
                                     (int)bytes, MPI_BYTE, world_, &p->req),
                      "MPI_Iallgather");
    p->done = !p->status.ok();
    return p;
  }

  bool testGather(PendingGather &pending) override {
    auto &p = static_cast<MpiGather &>(pending);
    if (p.done)
      return true;
    int flag = 0;
    p.status = check(MPI_Test(&p.req, &flag, MPI_STATUS_IGNORE), "MPI_Test");
    p.done = flag || !p.status.ok();
    return p.done;
  }

  Status waitGather(PendingGather &pending) override {
    auto &p = static_cast<MpiGather &>(pending);
    if (!p.done) {
      p.status = check(MPI_Wait(&p.req, MPI_STATUS_IGNORE), "MPI_Wait");
      p.done = true;
    }
    return p.status;
  }

  Status startExchange(Exchange ex,
                       std::unique_ptr<PendingExchange> &pending) override {
    auto p = std::make_unique<MpiPending>();
    p->ex = std::move(ex);
    MPI_Comm comm = commOf(p->ex.scope);
    const int me = memberIndex(p->ex.scope);
    const int n = (int)group(p->ex.scope).size();
    const int tag = (int)(p->ex.seq % kTagSpace);
    Status status;
    for (const ExchangePart &part : p->ex.parts)
      if (part.sendRowIndex)
        status = internalError("the mpi transport needs packed sends");
    auto post = [&](bool recv, uint8_t *buf, int64_t bytes, int peer) {
      for (int64_t off = 0; off < bytes && status.ok(); off += kMessageBytes) {
        int count = (int)std::min(kMessageBytes, bytes - off);
        MPI_Request req;
        int err =
            recv ? MPI_Irecv(buf + off, count, MPI_BYTE, peer, tag, comm, &req)
                 : MPI_Isend(buf + off, count, MPI_BYTE, peer, tag, comm, &req);
        status = check(err, recv ? "MPI_Irecv" : "MPI_Isend");
        if (status.ok()) {
          p->requests.push_back(req);
          p->expectBytes.push_back(count);
          p->isRecv.push_back(recv);
        }
      }
    };
    // Receives first, then sends, each part in order on both sides, so the
    // MPI matching order (source, tag, communicator) lines up.
    for (const ExchangePart &part : p->ex.parts)
      for (int m = 0; m < n && status.ok(); ++m)
        if (m != me)
          post(true, part.recv + part.recvOffsets[m], part.recvBytes[m], m);
    for (const ExchangePart &part : p->ex.parts)
      for (int m = 0; m < n && status.ok(); ++m)
        if (m != me)
          post(false, const_cast<uint8_t *>(part.send) + part.sendOffsets[m],
               part.sendBytes[m], m);
    for (const ExchangePart &part : p->ex.parts) {
      if (part.sendBytes[me] != part.recvBytes[me] && status.ok())
        status = internalError(cat("exchange ", p->ex.seq, ": rank ", rank(),
                                   " sends itself ", part.sendBytes[me],
                                   " bytes but expects ", part.recvBytes[me]));
      else if (part.sendBytes[me] > 0)
        std::memcpy(part.recv + part.recvOffsets[me],
                    part.send + part.sendOffsets[me], part.sendBytes[me]);
    }
    pending = std::move(p);
    return status;
  }

  void progress() override {
    // Open MPI runs its progress engine (which writes queued TCP bytes) in
    // a probe that finds nothing to match: so probe a communicator that
    // never carries a message.
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, quiet_, &flag, MPI_STATUS_IGNORE);
  }

  bool testExchange(PendingExchange &pending, bool consumed) override {
    auto &p = static_cast<MpiPending &>(pending);
    if (consumed || p.completed || p.requests.empty())
      return true;
    p.statuses.resize(p.requests.size());
    int flag = 0;
    p.err = MPI_Testall((int)p.requests.size(), p.requests.data(), &flag,
                        p.statuses.data());
    p.completed = flag || p.err != MPI_SUCCESS;
    return p.completed;
  }

  Status waitExchange(std::unique_ptr<PendingExchange> pending,
                      bool consumed) override {
    if (consumed)
      return internalError("the mpi transport cannot be read in place");
    auto *p = static_cast<MpiPending *>(pending.get());
    if (p->requests.empty())
      return Status::success();
    if (!p->completed) {
      p->statuses.resize(p->requests.size());
      p->err = MPI_Waitall((int)p->requests.size(), p->requests.data(),
                           p->statuses.data());
    }
    const std::vector<MPI_Status> &st = p->statuses;
    if (p->err != MPI_SUCCESS) {
      const char *what = p->completed ? "MPI_Testall" : "MPI_Waitall";
      for (size_t i = 0; i < st.size(); ++i)
        if (st[i].MPI_ERROR != MPI_SUCCESS &&
            st[i].MPI_ERROR != MPI_ERR_PENDING)
          return systemError(cat("exchange ", p->ex.seq, ": ", what,
                                 " failed: ", mpiError(st[i].MPI_ERROR)));
      return check(p->err, what);
    }
    for (size_t i = 0; i < st.size(); ++i) {
      if (!p->isRecv[i])
        continue;
      int count = 0;
      MPI_Get_count(&st[i], MPI_BYTE, &count);
      if (count != p->expectBytes[i])
        return internalError(cat("exchange ", p->ex.seq, ": received ", count,
                                 " bytes, expected ", p->expectBytes[i]));
    }
    return Status::success();
  }

private:
  MPI_Comm commOf(moecommScope_t scope) const {
    return scope == moecommScopeIntraNode   ? intra_
           : scope == moecommScopeInterNode ? inter_
                                            : world_;
  }
  MPI_Comm world_, intra_, inter_;
  MPI_Comm quiet_; ///< no message is ever sent on it (progress())
};

} // namespace

Status createMpiTransport(MPI_Comm comm, int ranksPerNode,
                          std::unique_ptr<Transport> &out) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    return invalidArgument("MPI is not initialized");
  // The communicator's progress thread (ProgressEngine.h) makes MPI calls
  // while the application's threads may make their own.
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE)
    return Status::error(moecommUnsupported, cat(
        "the mpi backend needs MPI_THREAD_MULTIPLE (its progress thread calls "
        "MPI while the application runs), but MPI provides ",
        threadLevelName(provided),
        ": initialize MPI with MPI_Init_thread(&argc, &argv, "
        "MPI_THREAD_MULTIPLE, &provided)"));
  if (comm == MPI_COMM_NULL)
    return invalidArgument("the MPI communicator is MPI_COMM_NULL");
  int rank = 0, size = 0;
  if (Status st = check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank"); !st.ok())
    return st;
  if (Status st = check(MPI_Comm_size(comm, &size), "MPI_Comm_size"); !st.ok())
    return st;
  // Every rank must agree on ranksPerNode before splitting.
  std::vector<int> all(size);
  if (Status st = check(MPI_Allgather(&ranksPerNode, 1, MPI_INT, all.data(), 1,
                                      MPI_INT, comm),
                        "MPI_Allgather");
      !st.ok())
    return st;
  for (int r = 0; r < size; ++r)
    if (all[r] != all[0])
      return mismatch(cat("ranks disagree on ranks_per_node: rank 0 has ",
                          all[0], ", rank ", r, " has ", all[r]));
  if (ranksPerNode < 1 || size % ranksPerNode != 0)
    return invalidArgument(cat("ranks_per_node ", ranksPerNode,
                               " does not divide ", size, " ranks"));
  MPI_Comm world, intra, inter, quiet;
  if (Status st = check(MPI_Comm_dup(comm, &world), "MPI_Comm_dup"); !st.ok())
    return st;
  MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
  int G = ranksPerNode;
  if (Status st = check(MPI_Comm_split(world, rank / G, rank, &intra),
                        "MPI_Comm_split");
      !st.ok()) {
    MPI_Comm_free(&world);
    return st;
  }
  if (Status st = check(MPI_Comm_split(world, rank % G, rank, &inter),
                        "MPI_Comm_split");
      !st.ok()) {
    MPI_Comm_free(&intra);
    MPI_Comm_free(&world);
    return st;
  }
  if (Status st = check(MPI_Comm_dup(world, &quiet), "MPI_Comm_dup");
      !st.ok()) {
    MPI_Comm_free(&inter);
    MPI_Comm_free(&intra);
    MPI_Comm_free(&world);
    return st;
  }
  MPI_Comm_set_errhandler(intra, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
  out = std::make_unique<MpiTransport>(rank, size, G, world, intra, inter,
                                       quiet);
  return Status::success();
}

} // namespace moecomm
