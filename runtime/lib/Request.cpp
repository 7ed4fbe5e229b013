//===- Request.cpp - Started collectives handed to the caller -------------===//
#include "Request.h"

#include "ApiBoundary.h"
#include "Comm.h"
#include "ProgressEngine.h"


namespace moecomm {

Status finishOrHandOut(Comm &comm, std::unique_ptr<Operation> op,
                       moecommRequest_t *request, uint64_t firstSeq) {
  if (!request)
    return op->finish();
  auto *req = new moecommRequest();
  req->comm = &comm;
  req->op = std::move(op);
  req->firstSeq = firstSeq;
  comm.outstanding().push_back(req);
  ++comm.unwaited();
  if (ProgressEngine *engine = comm.progressEngine())
    engine->wake();
  *request = req;
  return Status::success();
}

void completeRequest(moecommRequest &request) {
  if (request.op) {
    Status st = guarded([&] { return request.op->finish(); });
    if (request.status.ok())
      request.status = st;
  }
  request.op.reset();
  request.done = true;
}

void completeOldest(Comm &comm) {
  moecommRequest *oldest = comm.outstanding().front();
  comm.outstanding().pop_front();
  completeRequest(*oldest);
}

Status waitRequest(moecommRequest *request) {
  Comm &comm = *request->comm;
  TraceScope span(comm.trace(), [&] {
    return traceEvent(moecommTraceKindWait, moecommTraceDirNone, -1,
                      moecommScopeGlobal, 0);
  });
  while (!request->done && !comm.outstanding().empty())
    completeOldest(comm);
  Status st = request->status;
  --comm.unwaited();
  delete request;
  return st;
}

} // namespace moecomm
