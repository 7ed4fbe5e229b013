//===- ProgressEngine.cpp - A communicator's progress thread --------------===//
#include "ProgressEngine.h"

#include "ApiBoundary.h"
#include "Comm.h"
#include "Request.h"

#include <algorithm>
#include <chrono>
#include <pthread.h>

namespace moecomm {

namespace {
constexpr std::chrono::microseconds kMinPause{16}, kMaxPause{512};
} // namespace

ProgressEngine::ProgressEngine(Comm &comm)
    : comm_(comm), thread_([this] { run(); }) {}

ProgressEngine::~ProgressEngine() {
  {
    std::lock_guard<std::mutex> lock(comm_.mutex());
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void ProgressEngine::run() {
  // Named (15 characters at most) so that tools and the tests' CPU bounds
  // can tell progress threads from the application's.
  pthread_setname_np(pthread_self(), kProgressThreadName);
  std::unique_lock<std::mutex> lock(comm_.mutex());
  std::chrono::microseconds pause = kMinPause;
  while (!stop_) {
    if (comm_.outstanding().empty()) {
      cv_.wait(lock,
               [&] { return stop_ || !comm_.outstanding().empty(); });
      pause = kMinPause;
      continue;
    }
    pause = sweep() ? kMinPause : std::min(pause * 2, kMaxPause);
    // Releases the lock, so the caller's calls get in between sweeps; one
    // that is waiting for it goes first (Comm::lockForCall).
    lock.unlock();
    do
      std::this_thread::sleep_for(pause);
    while (comm_.callWaiting());
    lock.lock();
  }
}

bool ProgressEngine::sweep() {
  auto &queue = comm_.outstanding();
  bool moved = false, front = true;
  for (size_t i = 0; i < queue.size();) {
    moecommRequest *r = queue[i];
    if (!r->advanced) {
      Operation::Advance a = Operation::Advance::Blocked;
      const Status failed = guarded([&] {
        a = r->op->advance();
        return Status::success();
      });
      // A failed advance is reported by moecommWait as a failed finish()
      // is; the operation stays, so that finish() settles what it posted
      // before its buffers go.
      if (!failed.ok())
        r->status = failed;
      r->advanced = !failed.ok() || a == Operation::Advance::Complete;
      // Only news counts: a request that was complete already does not
      // keep the back-off short while an earlier one is stalled.
      moved = moved || a != Operation::Advance::Blocked;
    }
    // Requests complete in start order (Request.h): only the front ones.
    front = front && r->advanced;
    if (!front) {
      ++i;
      continue;
    }
    completeOldest(comm_); // r: every one before it has gone
  }
  return moved;
}

} // namespace moecomm
