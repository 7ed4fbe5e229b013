//===- ProgressEngine.h - A communicator's progress thread ------*- C++ -*-===//
//
// Started requests (moecommDispatchStart, ..., the compiled graphs'
// moecommExchangeStart) must keep moving while the caller computes without
// calling the runtime: Open MPI moves bytes only inside MPI calls, and a
// pipelined operation posts its later chunks, relays and unpacks only when
// its inputs are found to have arrived. A CPU communicator therefore owns
// one progress thread (the idea of NCCL's proxy thread and DeepEP's
// communication stream, on the host): while requests are outstanding it
// advances each (Operation::advance: tests, never blocks) and completes them
// in start order; otherwise it sleeps on a condition variable.
//
// Threading: every runtime call on a communicator and every sweep of its
// progress thread hold the communicator's mutex (Comm::mutex), so one of
// them uses the communicator (its transport, MPI calls included, trace,
// buffers, queue) at a time. CPU: none when no request is outstanding (a
// condition-variable wait); with requests outstanding and nothing to do it
// polls with an exponential back-off from 16 us to 512 us between sweeps
// (so a stalled peer costs a few percent of a core, and a link keeps
// being fed), returning to 16 us after a sweep that moved something.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_PROGRESSENGINE_H
#define MOECOMM_LIB_PROGRESSENGINE_H

#include <condition_variable>
#include <thread>

namespace moecomm {

class Comm;

/// The name of every progress thread (pthread_setname_np; /proc's comm).
inline constexpr char kProgressThreadName[] = "moecomm-progres";

class ProgressEngine {
public:
  /// Starts the thread of `comm` (which must outlive this object).
  explicit ProgressEngine(Comm &comm);
  /// Stops and joins the thread. The caller must not hold comm's mutex.
  ~ProgressEngine();
  ProgressEngine(const ProgressEngine &) = delete;
  ProgressEngine &operator=(const ProgressEngine &) = delete;

  /// A request was queued (called holding comm's mutex): wake the thread.
  void wake() { cv_.notify_one(); }

private:
  void run();
  /// Advances every outstanding request once and completes the finished
  /// ones at the front of the queue. Returns whether anything moved.
  bool sweep();

  Comm &comm_;
  std::condition_variable cv_;
  bool stop_ = false; ///< guarded by comm's mutex
  std::thread thread_;
};

} // namespace moecomm

#endif // MOECOMM_LIB_PROGRESSENGINE_H
