//===- LayoutHandle.cpp - The checks of a layout argument -----------------===//
#include "LayoutHandle.h"

#include "Comm.h"

namespace moecomm {

Status checkLayout(const Comm &comm, const moecommLayout *layout) {
  if (!layout)
    return invalidArgument("layout is NULL");
  if (layout->commUid != comm.uid())
    return invalidArgument("the layout belongs to another communicator");
  return Status::success();
}

Status checkDirection(moecommDirection_t direction) {
  if (direction != moecommDirectionDispatch &&
      direction != moecommDirectionCombine)
    return invalidArgument(
        cat("direction ", (int)direction, " is neither dispatch nor combine"));
  return Status::success();
}

Status checkStage(const moecommLayout &layout, moecommDirection_t direction,
                  int stage) {
  const size_t S = directionPlan(layout, direction).stages.size();
  if (stage < 0 || stage >= (int)S)
    return invalidArgument(
        cat("stage ", stage, " is out of range [0, ", S, ")"));
  return Status::success();
}

const DirectionPlan &directionPlan(const moecommLayout &layout,
                                   moecommDirection_t direction) {
  return direction == moecommDirectionDispatch ? layout.plan.dispatch
                                               : layout.plan.combine;
}

int64_t stageInputRows(const moecommLayout &layout,
                       moecommDirection_t direction, int stage) {
  const DirectionPlan &dp = directionPlan(layout, direction);
  if (stage > 0)
    return dp.stages[stage - 1].recvRows();
  return direction == moecommDirectionDispatch ? layout.plan.numTokens
                                               : layout.plan.recvRows();
}

int64_t outputRows(const moecommLayout &layout, moecommDirection_t direction) {
  return direction == moecommDirectionDispatch ? layout.plan.recvRows()
                                               : layout.plan.numTokens;
}

} // namespace moecomm
