//===- Operation.h - A started collective ----------------------*- C++ -*-===//
//
// The object behind a moecommRequest_t: a collective that has been started
// (its arguments agreed on by every rank, its first exchange posted) and
// that finish() completes. Implemented by the host operations (StagedOp.cpp,
// RowExchange.cpp) and by the device operations of a DeviceEngine
// (DeviceEngine.h). On the CPU backends the communicator's progress thread
// (ProgressEngine.h) calls advance() while the caller computes, so the
// exchange keeps moving without a runtime call.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_OPERATION_H
#define MOECOMM_LIB_OPERATION_H

#include "Status.h"

namespace moecomm {

/// A started collective; finish() completes it. On the CPU backends finish()
/// blocks until the results are in place; on a device backend it makes the
/// caller's stream wait for them (stream order, the host does not block).
class Operation {
public:
  /// What one advance() achieved.
  enum class Advance {
    Blocked,  ///< nothing could be done without waiting for another rank
    Moved,    ///< some step was taken (a chunk arrived, a piece was packed)
    Complete, ///< everything is done: finish() will not block
  };

  virtual ~Operation() = default;
  virtual Status finish() = 0;
  /// Takes every step that needs no wait for another rank (test, never
  /// block) and says how far it got; errors are kept for finish(). Called
  /// with the communicator's lock held, by its progress thread, in start
  /// order. The default is for operations with nothing for the host to
  /// drive (the device operations: their completion is ordered on the
  /// device's streams, and a device backend runs no progress thread): they
  /// complete in finish().
  virtual Advance advance() { return Advance::Blocked; }
};

/// A host operation made in two steps: created with its sequence numbers
/// reserved (in call order, the same on every rank, Comm::reserveSeqs),
/// then begun: begin() posts its first messages. A started collective
/// begins once every rank has agreed to it (AgreedOp.h), which on MPI may be
/// after the start call returned. advance() and finish() are called only
/// after begin(); an operation never begun (its agreement failed) is only
/// destroyed.
class HostOperation : public Operation {
public:
  virtual void begin() = 0;
};

} // namespace moecomm

#endif // MOECOMM_LIB_OPERATION_H
