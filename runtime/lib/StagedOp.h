//===- StagedOp.h - Dispatch and combine on the host backends --*- C++ -*-===//
//
// Dispatch and combine are one algorithm run in two directions over the
// layout's plan: for each stage, pack -> exchange; then unpack. startStaged
// runs it on host memory: StagedOp.cpp where ranks share memory (threads)
// or there is no stage, PipelinedOp.cpp over message passing (mpi), chunk
// by chunk. A device backend supplies its own (DeviceEngine::prepareStaged).
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_STAGEDOP_H
#define MOECOMM_LIB_STAGEDOP_H

#include "Operation.h"
#include "moecomm/moecomm.h"

#include <memory>

struct moecommLayout;

namespace moecomm {

class Comm;

/// Makes the staged operation of `layout` in `direction` (HostOperation:
/// its sequence numbers from `seq0` on, reserved by its agreement, Comm.h's
/// kSeqsPerCollective; begun once every rank agreed on it):
/// dispatch moves x (`in`, [T][H] f32/bf16) into recv (`out`,
/// [R][H], x's type) with the stages in `stageType` (x's type or FP8);
/// combine moves y (`in`, [R][H]) into out (`out`, [T][H], y's type) with
/// the stages in y's type, `weighted` multiplying by the routing weights.
/// The arguments are checked (Collective.cpp). begin() posts the first
/// stage; advance() (the progress thread's) carries on without blocking and
/// finish() completes the rest (blocking) and reports any failure.
/// Traced (Trace.h): each stage's pack and exchange, the unpack, and the
/// whole operation from `calledSec` (trace clock; < 0: the trace was off
/// when the collective was called, so no whole span) to the end of finish().
std::unique_ptr<HostOperation>
makeStaged(Comm &comm, const moecommLayout &layout,
           moecommDirection_t direction, const moecommRows_t &in,
           const moecommRows_t &out, moecommDataType_t stageType, bool weighted,
           double calledSec, uint64_t seq0);

} // namespace moecomm

#endif // MOECOMM_LIB_STAGEDOP_H
