//===- RuntimeError.h - runtime results as llvm::Error ----------*- C++ -*-===//
//
// The tools' convention for a failed call into the runtime's C ABI: its
// result class decides the exit status (bad input 2, anything else 3, see
// ToolIO.h's reportError) and its last-error text is the message.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_WORKLOAD_RUNTIMEERROR_H
#define MOECOMM_WORKLOAD_RUNTIMEERROR_H

#include "moecomm/moecomm.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace moecomm::workload {

/// Converts a failed `result` of a call `what` on `comm` (nullptr for calls
/// without a communicator) into an llvm::StringError with the message
/// "<what>: <moecommGetErrorString>: <moecommCommGetLastError(comm)>" and
/// the error code invalid_argument for moecommInvalidArgument / Mismatch /
/// Unsupported (bad input) and io_error otherwise. Success for
/// moecommSuccess.
llvm::Error runtimeError(moecommResult_t result, moecommComm_t comm,
                         llvm::StringRef what);

} // namespace moecomm::workload

#endif // MOECOMM_WORKLOAD_RUNTIMEERROR_H
