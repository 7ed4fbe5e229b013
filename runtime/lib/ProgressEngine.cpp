//===- ProgressEngine.cpp - A communicator's progress thread --------------===//
#include "ProgressEngine.h"

#include "Comm.h"
#include "Request.h"

#include <algorithm>
#include <chrono>
#include <new>

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
    Operation::Advance a;
    Status failed;
    try {
      a = r->op->advance();
    } catch (const std::bad_alloc &) {
      failed = systemError("out of memory");
    } catch (...) {
      failed = internalError("unknown exception");
    }
    if (!failed.ok()) {
      // As moecommWait reports a failed finish(); the operation is dropped.
      a = Operation::Advance::Complete;
      r->status = failed;
      r->op.reset();
    }
    moved = moved || a != Operation::Advance::Blocked;
    // Requests complete in start order (Request.h): only the front ones.
    front = front && a == Operation::Advance::Complete;
    if (!front) {
      ++i;
      continue;
    }
    completeRequest(*r);
    queue.erase(queue.begin() + (std::ptrdiff_t)i);
  }
  return moved;
}

} // namespace moecomm
