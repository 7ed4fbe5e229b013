//===- LayoutHandle.h - The C handle of a layout ----------------*- C++ -*-===//
//
// A layout is this rank's plan of a routing (moecomm/Runtime/Plan.h) plus
// its identity: created collectively (LayoutCreate.cpp), then read by every
// collective and staged primitive that names it. The checks of a layout
// argument live here, once, for all of them.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_LAYOUTHANDLE_H
#define MOECOMM_LIB_LAYOUTHANDLE_H

#include "DeviceEngine.h"
#include "Status.h"
#include "moecomm/Runtime/Plan.h"

#include <memory>

/// The C handle of a layout: the plan of this rank plus its identity.
struct moecommLayout {
  moecomm::Comm *comm = nullptr;
  uint64_t commUid = 0; ///< Comm::uid() of its communicator
  int64_t id = 0;       ///< the same on every rank (creation order)
  moecomm::RankPlan plan;
  moecommLayoutInfo_t info{};
  /// The plan's row maps in device memory (device backends only).
  std::unique_ptr<moecomm::DeviceLayout> device;
};

namespace moecomm {

/// Collective. Validates `desc` (NULL is an error every rank learns about),
/// agrees, computes capacity drops, exchanges the routing records along the
/// stages and builds this rank's plan. `layout` is set on success.
Status createLayout(Comm &comm, const moecommLayoutDesc_t *desc,
                    std::unique_ptr<moecommLayout> &layout);

/// InvalidArgument "layout is NULL" / "the layout belongs to another
/// communicator" unless `layout` was created on `comm`.
Status checkLayout(const Comm &comm, const moecommLayout *layout);

/// InvalidArgument unless `direction` is dispatch or combine.
Status checkDirection(moecommDirection_t direction);

/// InvalidArgument unless `stage` indexes a stage of `direction` (checked
/// before) in `layout`.
Status checkStage(const moecommLayout &layout, moecommDirection_t direction,
                  int stage);

/// The plan of `direction` (dispatch or combine).
const DirectionPlan &directionPlan(const moecommLayout &layout,
                                   moecommDirection_t direction);

/// Rows of the input of stage `stage` of `direction` (stage == number of
/// stages: of the unpack): dispatch starts from the T tokens, combine from
/// the R received rows.
int64_t stageInputRows(const moecommLayout &layout,
                       moecommDirection_t direction, int stage);

/// Rows of the output of `direction`: R for dispatch, T for combine.
int64_t outputRows(const moecommLayout &layout, moecommDirection_t direction);

} // namespace moecomm

#endif // MOECOMM_LIB_LAYOUTHANDLE_H
