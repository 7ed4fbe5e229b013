//===- StagedCall.h - The host executors' shared part ----------*- C++ -*-===//
//
// A started dispatch or combine on host memory (StagedOp.h): its arguments,
// the rule that says whether a row map gathers or reduces, and the trace
// span of the whole call. StagedOp.cpp (shared memory) and PipelinedOp.cpp
// (message passing) derive from it, so both apply every map the same way
// and so produce the same bits.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_STAGEDCALL_H
#define MOECOMM_LIB_STAGEDCALL_H

#include "Comm.h"
#include "LayoutHandle.h"
#include "Operation.h"
#include "RowKernels.h"
#include "Trace.h"
#include "moecomm/Model/WireFormat.h"

namespace moecomm {

class StagedCall : public HostOperation {
protected:
  /// makeStaged's arguments (StagedOp.h); `calledSec` is when the
  /// collective was called on the trace clock, < 0 when the trace was off;
  /// `seq0` the first of the sequence numbers its agreement reserved.
  StagedCall(Comm &comm, const moecommLayout &layout, moecommDirection_t dir,
             const moecommRows_t &in, const moecommRows_t &out,
             moecommDataType_t stageType, bool weighted, double calledSec,
             uint64_t seq0)
      : comm_(comm), dir_(dir), plan_(directionPlan(layout, dir)), in_(in),
        out_(out), stageType_(stageType), weighted_(weighted),
        calledSec_(calledSec), seq0_(seq0) {}

  /// Whether `map` is a plain gather in this direction (isPlainGather, with
  /// the weights in use for a weighted combine).
  bool plainGather(const RowMap &map) const {
    return isPlainGather(map, dir_ == moecommDirectionCombine && weighted_);
  }

  /// mapGathers in this direction.
  bool gathers(moecommDataType_t in, moecommDataType_t out,
               bool plainGather) const {
    return mapGathers(dir_, in, out, plainGather);
  }

  /// Applies output rows `range` of `map` from `in` to `out` by the rule of
  /// gathers(); `plainGather` is plainGather(map) (false for an unpack).
  Status apply(const RowMap &map, const RowSource &in, moecommRows_t &out,
               bool plainGather, RowRange range = {}) const {
    if (gathers(in.type, out.type, plainGather))
      return gatherRows(map, in, out, range);
    return reduceRows(map, in, weighted_, out, range);
  }

  /// Records the whole call, from calledSec to now, with the payload bytes
  /// this rank sends over the stages (copies to self included), when the
  /// trace was on at the call.
  void traceCall() const {
    if (calledSec_ < 0)
      return;
    int64_t sent = 0;
    for (const StagePlan &p : plan_.stages)
      sent += p.sendRows() * wireRowBytes(stageType_, in_.hidden);
    comm_.trace().span(dir_ == moecommDirectionDispatch
                           ? moecommTraceKindDispatch
                           : moecommTraceKindCombine,
                       traceDirection(dir_), -1, moecommScopeGlobal,
                       calledSec_, sent);
  }

  Comm &comm_;
  moecommDirection_t dir_;
  const DirectionPlan &plan_;
  moecommRows_t in_, out_;
  moecommDataType_t stageType_;
  bool weighted_;
  double calledSec_;
  /// The first sequence number of the stages' exchanges (StagedOp: one per
  /// stage; PipelinedOp: kMaxChunksPerStage per stage, Comm.h).
  uint64_t seq0_;
};

} // namespace moecomm

#endif // MOECOMM_LIB_STAGEDCALL_H
