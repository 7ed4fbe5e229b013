//===- Progress.h - progress line on stderr for long runs -------*- C++ -*-===//
//
// Prints "<tool>: <what> (elapsed s)" on stderr, at most about once a second
// and only after the run has taken more than a second, so short runs (and the
// tests) print nothing. On a terminal the line is rewritten in place;
// otherwise one line per update. Shared by moecomm-run (iterations) and
// moecomm-bench (sweep groups); thread-safe.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_WORKLOAD_PROGRESS_H
#define MOECOMM_WORKLOAD_PROGRESS_H

#include "llvm/ADT/StringRef.h"

#include <chrono>
#include <mutex>
#include <string>

namespace moecomm::workload {

class Progress {
public:
  /// `tool` starts every line; `enabled` = false makes every call a no-op
  /// (--quiet, MPI ranks != 0).
  Progress(llvm::StringRef tool, bool enabled);
  /// Reports `what` (e.g. "iteration 3/10"). `lastStep` (the final step) is
  /// printed even within a second of the previous line.
  void update(const std::string &what, bool lastStep = false);
  /// Ends the line started on a terminal (no-op otherwise).
  void finish();

private:
  using Clock = std::chrono::steady_clock;
  std::string tool;
  bool enabled;
  bool tty;
  bool lineOpen = false;
  Clock::time_point start;
  Clock::time_point last;
  std::mutex mutex;
};

} // namespace moecomm::workload

#endif // MOECOMM_WORKLOAD_PROGRESS_H
