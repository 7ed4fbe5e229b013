//===- Operation.h - A started collective ----------------------*- C++ -*-===//
//
// The object behind a moecommRequest_t: a collective that has been started
// (its arguments agreed on by every rank, its first exchange posted) and
// that finish() completes. Implemented by the host operations (StagedOp.cpp,
// RowExchange.cpp) and by the device operations of a DeviceEngine
// (DeviceEngine.h).
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
  virtual ~Operation() = default;
  virtual Status finish() = 0;
};

} // namespace moecomm

#endif // MOECOMM_LIB_OPERATION_H
