//===- Progress.h - progress line on stderr for long runs -------*- C++ -*-===//
//
// Prints "moecomm-run: <phase> i/N (elapsed)" on stderr, at most about once a
// second and only after the run has taken more than a second, so short runs
// (and the tests) print nothing. On a terminal the line is rewritten in place.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TOOLS_RUN_PROGRESS_H
#define MOECOMM_TOOLS_RUN_PROGRESS_H

#include <chrono>
#include <mutex>
#include <string>

namespace moecomm::run {

class Progress {
public:
  /// `enabled` = false makes every call a no-op (--quiet, MPI ranks != 0).
  explicit Progress(bool enabled);
  /// Reports that `done` of `total` steps of `phase` are complete.
  void update(const std::string &phase, long done, long total);
  /// Ends the line started on a terminal (no-op otherwise).
  void finish();

private:
  using Clock = std::chrono::steady_clock;
  bool enabled;
  bool tty;
  bool lineOpen = false;
  Clock::time_point start;
  Clock::time_point last;
  std::mutex mutex;
};

} // namespace moecomm::run

#endif // MOECOMM_TOOLS_RUN_PROGRESS_H
