//===- Trace.cpp - A communicator's recorded timeline ---------------------===//
#include "Trace.h"

#include "moecomm/Model/WireFormat.h"

#include <chrono>

namespace moecomm {

double traceNow() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

moecommTraceDirection_t traceDirection(moecommDirection_t direction) {
  switch (direction) {
  case moecommDirectionDispatch:
    return moecommTraceDirDispatch;
  case moecommDirectionCombine:
    return moecommTraceDirCombine;
  default:
    return moecommTraceDirNone;
  }
}

moecommTraceKind_t packTraceKind(moecommDataType_t in, moecommDataType_t out,
                                 bool reduces) {
  if (isFp8(out) && !isFp8(in))
    return moecommTraceKindQuantize;
  return reduces ? moecommTraceKindReduce : moecommTraceKindPack;
}

int64_t traceBytes(const moecommRows_t &rows) {
  return rows.rows * wireRowBytes(rows.type, rows.hidden);
}

void Trace::enable(bool on) {
  on_ = on;
  if (on)
    since_ = traceNow();
  events_.clear();
  // Keep no memory while off; reserve nothing up front either (a short run
  // records few events).
  if (!on)
    events_.shrink_to_fit();
  dropped_ = 0;
}

void Trace::record(const moecommTraceEvent_t &event) {
  // A span begun before the trace was switched off ends unrecorded, also
  // when it was switched on again since (that recording starts later).
  if (!on_ || event.startSec < since_)
    return;
  if ((int64_t)events_.size() >= MOECOMM_TRACE_MAX_EVENTS) {
    ++dropped_;
    return;
  }
  events_.push_back(event);
}

moecommTraceEvent_t traceEvent(moecommTraceKind_t kind,
                               moecommTraceDirection_t direction, int32_t stage,
                               moecommScope_t scope, int64_t bytes) {
  moecommTraceEvent_t e;
  e.kind = kind;
  e.direction = direction;
  e.stage = stage;
  e.scope = scope;
  e.startSec = 0;
  e.endSec = 0;
  e.bytes = bytes;
  return e;
}

void Trace::span(moecommTraceKind_t kind, moecommTraceDirection_t direction,
                 int32_t stage, moecommScope_t scope, double startSec,
                 int64_t bytes) {
  moecommTraceEvent_t e = traceEvent(kind, direction, stage, scope, bytes);
  e.startSec = startSec;
  e.endSec = traceNow();
  record(e);
}

} // namespace moecomm
