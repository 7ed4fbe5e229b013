//===- PackUnpack.cpp - The local staged primitives -----------------------===//
#include "PackUnpack.h"

#include "Collective.h"
#include "Comm.h"
#include "LayoutHandle.h"
#include "RowKernels.h"

namespace moecomm {

namespace {

/// The checks of both primitives: a stream `comm` accepts, a layout of
/// `comm`, a direction and (for a pack) a stage of it.
Status checkStep(Comm &comm, moecommStream_t stream,
                 const moecommLayout *layout, moecommDirection_t direction,
                 int stage, bool isPack) {
  Status st = checkStream(comm, stream);
  if (st.ok())
    st = checkLayout(comm, layout);
  if (st.ok())
    st = checkDirection(direction);
  if (st.ok() && isPack)
    st = checkStage(*layout, direction, stage);
  return st;
}

/// Combine maps: a plain gather when every row has one unweighted term (the
/// per_expert pack), else an f32 reduction.
Status applyCombineMap(const RowMap &map, const moecommRows_t &in,
                       bool weighted, const moecommRows_t &out) {
  moecommRows_t o = out;
  const bool gather = mapGathers(moecommDirectionCombine, in.type, out.type,
                                 isPlainGather(map, weighted));
  return gather ? gatherRows(map, in, o) : reduceRows(map, in, weighted, o);
}

} // namespace

Status packRows(Comm &comm, const moecommLayout *layout,
                moecommDirection_t direction, int stage,
                const moecommRows_t *in, int weighted, const moecommRows_t *out,
                moecommStream_t stream) {
  if (Status st = checkStep(comm, stream, layout, direction, stage, true);
      !st.ok())
    return onRank(comm.rank(), st);
  const int64_t H = in ? in->hidden : 0;
  const StagePlan &sp = directionPlan(*layout, direction).stages[stage];
  if (Status s =
          checkRows(in, "in", stageInputRows(*layout, direction, stage), H);
      !s.ok())
    return onRank(comm.rank(), s);
  if (Status s = checkRows(out, "out", sp.sendRows(), H); !s.ok())
    return onRank(comm.rank(), s);
  moecommRows_t o = *out;
  if (direction == moecommDirectionDispatch) {
    if (!(out->type == in->type ||
          (isFloatData(in->type) && isFp8(out->type))))
      return onRank(
          comm.rank(),
          invalidArgument(cat("dispatch pack cannot convert "
                              "type ",
                              (int)in->type, " to type ", (int)out->type)));
  } else if (!isFloatData(in->type) || !isFloatData(out->type)) {
    return onRank(comm.rank(),
                  invalidArgument("combine pack needs f32 or bf16 rows"));
  }
  if (DeviceEngine *dev = comm.transport().deviceEngine())
    return onRank(comm.rank(), dev->pack(*layout, direction, stage, *in,
                                         weighted != 0, *out, stream));
  TraceScope span(comm.trace(), [&] {
    const bool reduces =
        !mapGathers(direction, in->type, out->type,
                    isPlainGather(sp.pack, weighted != 0));
    return traceEvent(packTraceKind(in->type, out->type, reduces),
                      traceDirection(direction), stage, sp.scope,
                      traceBytes(o));
  });
  if (direction == moecommDirectionDispatch)
    return onRank(comm.rank(), gatherRows(sp.pack, *in, o));
  return onRank(comm.rank(), applyCombineMap(sp.pack, *in, weighted != 0, o));
}

Status unpackRows(Comm &comm, const moecommLayout *layout,
                  moecommDirection_t direction, const moecommRows_t *in,
                  int weighted, const moecommRows_t *out,
                  moecommStream_t stream) {
  if (Status st = checkStep(comm, stream, layout, direction, 0, false);
      !st.ok())
    return onRank(comm.rank(), st);
  const DirectionPlan &dp = directionPlan(*layout, direction);
  const int64_t H = in ? in->hidden : 0;
  if (Status s = checkRows(
          in, "in", stageInputRows(*layout, direction, (int)dp.stages.size()),
          H);
      !s.ok())
    return onRank(comm.rank(), s);
  if (Status s = checkRows(out, "out", outputRows(*layout, direction), H);
      !s.ok())
    return onRank(comm.rank(), s);
  if (DeviceEngine *dev = comm.transport().deviceEngine())
    return onRank(comm.rank(), dev->unpack(*layout, direction, *in,
                                           weighted != 0, *out, stream));
  moecommRows_t o = *out;
  TraceScope span(comm.trace(), [&] {
    return traceEvent(moecommTraceKindUnpack, traceDirection(direction), -1,
                      moecommScopeGlobal, traceBytes(o));
  });
  if (direction == moecommDirectionDispatch)
    return onRank(comm.rank(), gatherRows(dp.unpack, *in, o));
  return onRank(comm.rank(), reduceRows(dp.unpack, *in, weighted != 0, o));
}

} // namespace moecomm
