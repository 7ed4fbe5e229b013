//===- ApiBoundary.h - The C boundary of the runtime ------------*- C++ -*-===//
//
// Helpers of the extern "C" entry points (Api.cpp, NcclApi.cpp): no C++
// exception crosses the boundary, nothing aborts, every failure becomes a
// result code plus the message moecommCommGetLastError() returns (the
// communicator's, or the calling thread's when there is no communicator).
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_APIBOUNDARY_H
#define MOECOMM_LIB_APIBOUNDARY_H

#include "Comm.h"
#include "Status.h"

#include <exception>
#include <mutex>
#include <new>
#include <string>

namespace moecomm {

/// The calling thread's last error of a call without a communicator
/// (returned by moecommCommGetLastError(NULL)).
std::string &threadLastError();

/// The failure of the latest entry point that failed on this thread, with
/// or without a communicator (set by failNoComm and Comm::finish): the one
/// place the compiled ABI reads a failed call's code and message from,
/// whichever kind of call it made.
Status &threadLastFailure();

/// Records `st` as the thread's last error and returns its code.
inline moecommResult_t failNoComm(const Status &st) {
  threadLastError() = st.message;
  threadLastFailure() = st;
  return st.code;
}

/// Traces the caller's time in a call that can move rows or wait
/// (moecommTraceKindCall), from after it took comm's mutex until it returns:
/// what the timeline subtracts to find the caller's compute.
inline TraceScope traceCall(Comm &comm) {
  return TraceScope(comm.trace(), [] {
    return traceEvent(moecommTraceKindCall, moecommTraceDirNone, -1,
                      moecommScopeGlobal, 0);
  });
}

/// Runs `body` (returning Status) on `comm` if it is usable, records the
/// result on it. Holds comm's mutex (Comm::mutex) throughout; a traced call
/// (traceCall).
template <typename F> moecommResult_t onComm(moecommComm_t comm, F body) {
  if (!comm)
    return failNoComm(invalidArgument("comm is NULL"));
  auto lock = comm->lockForCall();
  TraceScope call = traceCall(*comm);
  Status st;
  try {
    st = comm->usable();
    if (st.ok())
      st = body(*comm);
  } catch (const std::bad_alloc &) {
    st = systemError(cat("rank ", comm->rank(), ": out of memory"));
  } catch (const std::exception &e) {
    st = internalError(cat("rank ", comm->rank(), ": ", e.what()));
  } catch (...) {
    st = internalError(cat("rank ", comm->rank(), ": unknown exception"));
  }
  return comm->finish(st);
}

/// Runs `body` (returning Status); an exception escaping it becomes the
/// status a local call reports for it (out of memory: system error; else
/// internal error). Also used off the API boundary, where requests complete
/// (Request.cpp, the progress thread).
template <typename F> Status guarded(F body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return systemError("out of memory");
  } catch (...) {
    return internalError("unknown exception");
  }
}

/// Local calls that do not depend on the communicator being healthy. Holds
/// comm's mutex.
template <typename F> moecommResult_t onCommLocal(moecommComm_t comm, F body) {
  if (!comm)
    return failNoComm(invalidArgument("comm is NULL"));
  auto lock = comm->lockForCall();
  return comm->finish(guarded([&] { return body(*comm); }));
}

/// Calls without a communicator: failures go to the thread's last error.
template <typename F> moecommResult_t noComm(F body) {
  Status st = guarded(body);
  return st.ok() ? moecommSuccess : failNoComm(st);
}

} // namespace moecomm

#endif // MOECOMM_LIB_APIBOUNDARY_H
