//===- Request.cpp - Started collectives handed to the caller -------------===//
#include "Request.h"

#include "Comm.h"

namespace moecomm {

Status finishOrHandOut(Comm &comm, std::unique_ptr<Operation> op,
                       moecommRequest_t *request) {
  if (!request)
    return op->finish();
  auto *req = new moecommRequest();
  req->comm = &comm;
  req->op = std::move(op);
  comm.outstanding().push_back(req);
  *request = req;
  return Status::success();
}

Status waitRequest(moecommRequest *request) {
  Comm &comm = *request->comm;
  TraceScope span(comm.trace(), [&] {
    return traceEvent(moecommTraceKindWait, moecommTraceDirNone, -1,
                      moecommScopeGlobal, 0);
  });
  auto &queue = comm.outstanding();
  while (!request->done && !queue.empty()) {
    moecommRequest *r = queue.front();
    queue.pop_front();
    r->status = r->op->finish();
    r->op.reset();
    r->done = true;
  }
  Status st = request->status;
  delete request;
  return st;
}

} // namespace moecomm
