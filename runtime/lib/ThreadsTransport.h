//===- ThreadsTransport.h - W ranks as threads of one process ---*- C++ -*-===//
#ifndef MOECOMM_LIB_THREADSTRANSPORT_H
#define MOECOMM_LIB_THREADSTRANSPORT_H

#include "Transport.h"

#include <condition_variable>
#include <map>
#include <mutex>

namespace moecomm {

/// The state W rank threads share (a moecommThreadGroup): join bookkeeping
/// and the rendezvous slots of outstanding collectives, keyed by sequence
/// number. One mutex and condition variable; waits block, never spin.
class ThreadsShared {
public:
  ThreadsShared(int ranks, int ranksPerNode);

  int ranks() const { return ranks_; }
  int ranksPerNode() const { return ranksPerNode_; }

  /// Registers `rank` and blocks until all ranks have joined.
  Status join(int rank);
  /// A communicator of this group was destroyed.
  void leave();
  /// Number of live communicators.
  int liveComms();

  struct Entry {
    bool posted = false;
    const Exchange *ex = nullptr; // exchange entries
    const void *block = nullptr;  // allGather entries
    int64_t blockBytes = 0;
    int pendingReaders = 0; // receivers still to copy from this entry
  };
  struct Slot {
    std::vector<Entry> entries; // [W]
    int finished = 0;
  };

  std::mutex mu;
  std::condition_variable cv;
  /// The slot of `seq`, created on first use. Caller holds `mu`.
  Slot &slot(uint64_t seq);
  /// Called (holding `mu`) by each rank when it is done with `seq`.
  void finish(uint64_t seq);

private:
  int ranks_, ranksPerNode_;
  std::vector<bool> joined_;
  int joinedCount_ = 0;
  int live_ = 0;
  std::map<uint64_t, Slot> slots_;
};

/// The transport of rank `rank` of `shared`.
std::unique_ptr<Transport> createThreadsTransport(ThreadsShared &shared,
                                                  int rank);

} // namespace moecomm

#endif // MOECOMM_LIB_THREADSTRANSPORT_H
