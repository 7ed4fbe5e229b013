//===- Trace.h - A communicator's recorded timeline -------------*- C++ -*-===//
//
// When asked (moecommCommSetTrace), a communicator records timestamped spans
// of its work: layouts, packs, exchange stages, unpacks, waits. Each
// communicator has its own buffer, recorded under the communicator's mutex
// (held by the caller's calls and its progress thread, ProgressEngine.h), so
// recording takes no lock of its own. Off, a traced place costs one branch on
// a bool (no clock read); the buffer is bounded (MOECOMM_TRACE_MAX_EVENTS),
// further events are counted as dropped.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_TRACE_H
#define MOECOMM_LIB_TRACE_H

#include "moecomm/moecomm.h"

#include <cstdint>
#include <vector>

namespace moecomm {

/// Seconds on std::chrono::steady_clock (the trace's clock).
double traceNow();

/// The trace direction of a collective's direction (all_to_all: none).
moecommTraceDirection_t traceDirection(moecommDirection_t direction);

/// The kind of a pack of `in` rows into `out` rows in `direction`: quantize
/// when it converts to FP8, reduce when it sums rows (combine), else pack.
moecommTraceKind_t packTraceKind(moecommDataType_t in, moecommDataType_t out,
                                 bool reduces);

/// The bytes of `rows` (rows x wireRowBytes(type, hidden): FP8 with its
/// scales).
int64_t traceBytes(const moecommRows_t &rows);

class Trace {
public:
  bool on() const { return on_; }
  /// Starts or stops recording; clears the events and the drop count.
  void enable(bool on);
  /// Appends `event` (when on and it began since recording started), or
  /// counts it as dropped when the buffer is full.
  void record(const moecommTraceEvent_t &event);
  /// Records a span of `kind` from `startSec` until now.
  void span(moecommTraceKind_t kind, moecommTraceDirection_t direction,
            int32_t stage, moecommScope_t scope, double startSec,
            int64_t bytes);
  const std::vector<moecommTraceEvent_t> &events() const { return events_; }
  int64_t dropped() const { return dropped_; }

private:
  bool on_ = false;
  /// When recording last started: a span begun before it (posted, then the
  /// trace switched off and on again) is not part of this recording.
  double since_ = 0;
  std::vector<moecommTraceEvent_t> events_;
  int64_t dropped_ = 0;
};

/// An event of `kind` (times left 0: the recorder stamps them).
moecommTraceEvent_t traceEvent(moecommTraceKind_t kind,
                               moecommTraceDirection_t direction, int32_t stage,
                               moecommScope_t scope, int64_t bytes);

/// Records a span from construction to destruction when its trace is on at
/// construction. `describe()` returns the event (traceEvent) and is called
/// only then, so that off a traced place costs one branch: no clock read,
/// no byte count.
class TraceScope {
public:
  template <typename Describe>
  TraceScope(Trace &trace, Describe describe)
      : trace_(trace.on() ? &trace : nullptr) {
    if (trace_) {
      event_ = describe();
      event_.startSec = traceNow();
    }
  }
  TraceScope(const TraceScope &) = delete;
  TraceScope &operator=(const TraceScope &) = delete;
  ~TraceScope() {
    if (trace_) {
      event_.endSec = traceNow();
      trace_->record(event_);
    }
  }

private:
  Trace *trace_;
  moecommTraceEvent_t event_;
};

} // namespace moecomm

#endif // MOECOMM_LIB_TRACE_H
