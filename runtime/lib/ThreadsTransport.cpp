//===- ThreadsTransport.cpp - W ranks as threads of one process -----------===//
//
// Rendezvous through shared slots keyed by sequence number. A sender posts a
// description of its buffers; each receiver copies (pulls) its block from
// every member's buffer and then tells the member it is done; the sender's
// wait returns once every receiver has copied from it, so its buffers may be
// reused. All waits block on the group's condition variable; testExchange
// (the progress thread's) copies what has been posted and never waits.
//
//===----------------------------------------------------------------------===//
#include "ThreadsTransport.h"

#include <cstring>

namespace moecomm {

ThreadsShared::ThreadsShared(int ranks, int ranksPerNode)
    : ranks_(ranks), ranksPerNode_(ranksPerNode), joined_(ranks, false) {}

Status ThreadsShared::join(int rank) {
  std::unique_lock<std::mutex> lock(mu);
  if (joined_[rank])
    return invalidArgument(cat("rank ", rank, " has already joined"));
  joined_[rank] = true;
  ++joinedCount_;
  ++live_;
  cv.notify_all();
  cv.wait(lock, [&] { return joinedCount_ == ranks_; });
  return Status::success();
}

void ThreadsShared::leave() {
  std::lock_guard<std::mutex> lock(mu);
  --live_;
}

int ThreadsShared::liveComms() {
  std::lock_guard<std::mutex> lock(mu);
  return live_;
}

ThreadsShared::Slot &ThreadsShared::slot(uint64_t seq) {
  auto it = slots_.find(seq);
  if (it == slots_.end()) {
    it = slots_.emplace(seq, Slot()).first;
    it->second.entries.resize(ranks_);
  }
  return it->second;
}

void ThreadsShared::finish(uint64_t seq) {
  Slot &s = slot(seq);
  if (++s.finished == ranks_)
    slots_.erase(seq);
}

namespace {

class ThreadsPending : public PendingExchange {
public:
  Exchange ex;
  /// Per member: its block was copied (or, consumed, its rows released) and
  /// its reader count decremented, by testExchange or waitExchange.
  std::vector<bool> taken;
  /// The last failure of a copy, reported by waitExchange.
  Status status;
};

class ThreadsTransport : public Transport {
public:
  ThreadsTransport(ThreadsShared &shared, int rank)
      : Transport(rank, shared.ranks(), shared.ranksPerNode()),
        shared_(shared) {}

  moecommBackend_t backend() const override { return moecommBackendThreads; }

  Status allGather(uint64_t seq, const void *mine, int64_t bytes,
                   void *all) override {
    const int W = size(), me = rank();
    std::unique_lock<std::mutex> lock(shared_.mu);
    ThreadsShared::Entry &e = shared_.slot(seq).entries[me];
    e.posted = true;
    e.block = mine;
    e.blockBytes = bytes;
    e.pendingReaders = W;
    shared_.cv.notify_all();
    bool sizeMismatch = false;
    for (int i = 0; i < W; ++i) {
      int r = (me + i) % W;
      shared_.cv.wait(lock,
                      [&] { return shared_.slot(seq).entries[r].posted; });
      ThreadsShared::Entry &src = shared_.slot(seq).entries[r];
      if (src.blockBytes != bytes) {
        sizeMismatch = true;
      } else {
        lock.unlock();
        std::memcpy(static_cast<uint8_t *>(all) + (int64_t)r * bytes, src.block,
                    bytes);
        lock.lock();
      }
      ThreadsShared::Entry &src2 = shared_.slot(seq).entries[r];
      if (--src2.pendingReaders == 0)
        shared_.cv.notify_all();
    }
    shared_.cv.wait(lock, [&] {
      return shared_.slot(seq).entries[me].pendingReaders == 0;
    });
    shared_.finish(seq);
    if (sizeMismatch)
      return internalError("allGather blocks of different sizes");
    return Status::success();
  }

  Status startExchange(Exchange ex,
                       std::unique_ptr<PendingExchange> &pending) override {
    auto p = std::make_unique<ThreadsPending>();
    p->ex = std::move(ex);
    int members = (int)group(p->ex.scope).size();
    {
      std::lock_guard<std::mutex> lock(shared_.mu);
      ThreadsShared::Entry &e = shared_.slot(p->ex.seq).entries[rank()];
      e.posted = true;
      e.ex = &p->ex;
      e.pendingReaders = members;
      shared_.cv.notify_all();
    }
    p->taken.assign(members, false);
    pending = std::move(p);
    return Status::success();
  }

  bool supportsDirect() const override { return true; }

  Status peers(PendingExchange &pending,
               std::vector<const Exchange *> &out) override {
    auto &p = static_cast<ThreadsPending &>(pending);
    std::vector<int> grp = group(p.ex.scope);
    out.assign(grp.size(), nullptr);
    std::unique_lock<std::mutex> lock(shared_.mu);
    for (size_t m = 0; m < grp.size(); ++m) {
      shared_.cv.wait(
          lock, [&] { return shared_.slot(p.ex.seq).entries[grp[m]].posted; });
      out[m] = shared_.slot(p.ex.seq).entries[grp[m]].ex;
    }
    return Status::success();
  }

  bool peersPosted(PendingExchange &pending) override {
    auto &p = static_cast<ThreadsPending &>(pending);
    std::lock_guard<std::mutex> lock(shared_.mu);
    for (int r : group(p.ex.scope))
      if (!shared_.slot(p.ex.seq).entries[r].posted)
        return false;
    return true;
  }

  bool testExchange(PendingExchange &pending, bool consumed) override {
    auto &p = static_cast<ThreadsPending &>(pending);
    std::vector<int> grp = group(p.ex.scope);
    const int n = (int)grp.size(), me = memberIndex(p.ex.scope);
    std::unique_lock<std::mutex> lock(shared_.mu);
    for (int i = 0; i < n; ++i) {
      const int m = (me + i) % n;
      if (!p.taken[m] && shared_.slot(p.ex.seq).entries[grp[m]].posted)
        take(p, m, grp[m], consumed, lock);
    }
    for (int m = 0; m < n; ++m)
      if (!p.taken[m])
        return false;
    return shared_.slot(p.ex.seq).entries[rank()].pendingReaders == 0;
  }

  Status waitExchange(std::unique_ptr<PendingExchange> pending,
                      bool consumed) override {
    auto &p = static_cast<ThreadsPending &>(*pending);
    const uint64_t seq = p.ex.seq;
    std::vector<int> grp = group(p.ex.scope);
    const int n = (int)grp.size();
    const int me = memberIndex(p.ex.scope);
    std::unique_lock<std::mutex> lock(shared_.mu);
    for (int i = 0; i < n; ++i) {
      const int m = (me + i) % n;
      if (p.taken[m])
        continue;
      shared_.cv.wait(lock,
                      [&] { return shared_.slot(seq).entries[grp[m]].posted; });
      take(p, m, grp[m], consumed, lock);
    }
    shared_.cv.wait(lock, [&] {
      return shared_.slot(seq).entries[rank()].pendingReaders == 0;
    });
    shared_.finish(seq);
    return p.status;
  }

private:
  /// Copies member m's (rank r's, posted) block into this rank's receive
  /// buffer, unless `consumed` (the caller read it in place through
  /// peers()), and tells r this rank is done with its rows. `lock` holds
  /// the group's mutex; the copy runs without it.
  void take(ThreadsPending &p, int m, int r, bool consumed,
            std::unique_lock<std::mutex> &lock) {
    const Exchange &mine = p.ex;
    const uint64_t seq = mine.seq;
    const int me = memberIndex(mine.scope);
    const Exchange *src = shared_.slot(seq).entries[r].ex;
    lock.unlock();
    if (consumed) {
      // Read in place by the caller (peers()).
    } else if (!src || src->parts.size() != mine.parts.size()) {
      p.status = internalError(
          cat("exchange ", seq, ": rank ", r, " posted a different exchange"));
    } else {
      for (size_t pi = 0; pi < mine.parts.size(); ++pi) {
        const ExchangePart &sp = src->parts[pi];
        const ExchangePart &rp = mine.parts[pi];
        int64_t bytes = sp.sendBytes[me];
        if (bytes != rp.recvBytes[m]) {
          p.status = internalError(cat("exchange ", seq, ": rank ", rank(),
                                       " expects ", rp.recvBytes[m],
                                       " bytes from rank ", r, " but it sends ",
                                       bytes));
          continue;
        }
        if (bytes > 0 && !sp.sendRowIndex) {
          std::memcpy(rp.recv + rp.recvOffsets[m], sp.send + sp.sendOffsets[me],
                      bytes);
        } else if (bytes > 0) {
          const int64_t rb = sp.rowBytes;
          for (int64_t k = 0; k < bytes / rb; ++k)
            std::memcpy(rp.recv + rp.recvOffsets[m] + k * rb,
                        sp.sendRow(me, k), rb);
        }
      }
    }
    lock.lock();
    p.taken[m] = true;
    if (--shared_.slot(seq).entries[r].pendingReaders == 0)
      shared_.cv.notify_all();
  }

  ThreadsShared &shared_;
};

} // namespace

std::unique_ptr<Transport> createThreadsTransport(ThreadsShared &shared,
                                                  int rank) {
  return std::make_unique<ThreadsTransport>(shared, rank);
}

} // namespace moecomm
