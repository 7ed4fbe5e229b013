//===- Request.h - Started collectives handed to the caller -----*- C++ -*-===//
//
// A started collective (Operation) is either finished at once (the blocking
// calls) or handed out as a moecommRequest_t that moecommWait completes.
// Requests complete in start order on every rank, whatever order the caller
// waits in: each rank then posts the later stages of its requests in the
// same order, so no rank waits on a stage another has not posted. On the
// CPU backends the communicator's progress thread (ProgressEngine.h) also
// completes them, in the same order, while the caller computes.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_REQUEST_H
#define MOECOMM_LIB_REQUEST_H

#include "Operation.h"
#include "Status.h"

#include <memory>

namespace moecomm {
class Comm;
} // namespace moecomm

/// The C handle of a request.
struct moecommRequest {
  moecomm::Comm *comm = nullptr;
  std::unique_ptr<moecomm::Operation> op;
  /// The first sequence number its collective reserved (Comm::reserveSeqs).
  uint64_t firstSeq = 0;
  bool done = false;
  /// The progress thread is done advancing op: it reported Complete, or
  /// advance() failed (status holds why; finish() still settles the
  /// exchanges it posted before the request completes).
  bool advanced = false;
  moecomm::Status status;
};

namespace moecomm {

/// Finishes `op` (blocking) when `request` is NULL; else queues it on
/// `comm` as a new request stored in *request (completed by waitRequest).
/// `firstSeq`: the first sequence number op's collective reserved.
Status finishOrHandOut(Comm &comm, std::unique_ptr<Operation> op,
                       moecommRequest_t *request, uint64_t firstSeq);

/// Completes `request`'s operation (finish(): blocks unless advance()
/// reported it complete) and records its status (an exception becomes a
/// system or internal error; a failure the progress thread recorded
/// first stands); the request stays allocated. Caller holds the
/// communicator's mutex.
void completeRequest(moecommRequest &request);

/// Pops `comm`'s oldest outstanding request (the queue must not be empty)
/// and completes it (completeRequest): requests complete in start order.
/// Caller holds the communicator's mutex.
void completeOldest(Comm &comm);

/// Completes `request` (and, first, every request of its communicator
/// started before it), frees it and returns its status. Caller holds the
/// communicator's mutex.
Status waitRequest(moecommRequest *request);

} // namespace moecomm

#endif // MOECOMM_LIB_REQUEST_H
