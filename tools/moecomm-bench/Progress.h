//===- Progress.h - moecomm-bench's progress line on stderr -----*- C++ -*-===//
//
// "moecomm-bench: [i/N] <what> (elapsed s)" on stderr for sweeps: at most
// about once a second and only once the run has taken more than a second, so
// short runs (and the tests) print nothing. On a terminal the line is
// rewritten in place; otherwise one line per update.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TOOLS_BENCH_PROGRESS_H
#define MOECOMM_TOOLS_BENCH_PROGRESS_H

#include <chrono>
#include <string>

namespace moecomm::bench {

class Progress {
public:
  /// `enabled` = false makes every call a no-op (--quiet, MPI ranks != 0).
  explicit Progress(bool enabled);
  /// Reports that step `done` of `total` is `what`.
  void update(long done, long total, const std::string &what);
  /// Ends the line started on a terminal (no-op otherwise).
  void finish();

private:
  using Clock = std::chrono::steady_clock;
  bool enabled;
  bool tty;
  bool lineOpen = false;
  Clock::time_point start, last;
};

} // namespace moecomm::bench

#endif // MOECOMM_TOOLS_BENCH_PROGRESS_H
