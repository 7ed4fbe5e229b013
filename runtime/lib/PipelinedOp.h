//===- PipelinedOp.h - Dispatch and combine over message passing -*- C++ -*-===//
//
// The staged operation of StagedOp.h on a transport that copies between
// processes (mpi), with every stage cut into chunks that flow into the next
// stage as they arrive (PipelinedOp.cpp says how and why).
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_PIPELINEDOP_H
#define MOECOMM_LIB_PIPELINEDOP_H

#include "Operation.h"
#include "moecomm/moecomm.h"

#include <memory>

struct moecommLayout;

namespace moecomm {

class Comm;

/// makeStaged's contract (StagedOp.h) for a layout whose `direction` has at
/// least one stage, on a transport without shared memory between ranks.
/// begin() posts the first receives of every stage and packs and sends
/// stage 0; advance() (the progress thread's, never blocking) and finish()
/// (blocking) post the other receives as chunks arrive and run the later
/// stages and the unpack as their inputs arrive. Traced like
/// makeStaged, with one span per packed chunk and per unpacked piece, and
/// each stage's exchange from the start of its sends until its last chunk
/// was received.
std::unique_ptr<HostOperation>
makePipelined(Comm &comm, const moecommLayout &layout,
              moecommDirection_t direction, const moecommRows_t &in,
              const moecommRows_t &out, moecommDataType_t stageType,
              bool weighted, double calledSec, uint64_t seq0);

} // namespace moecomm

#endif // MOECOMM_LIB_PIPELINEDOP_H
