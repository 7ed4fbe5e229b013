//===- RowExchange.cpp - A ragged exchange of whole rows ------------------===//
#include "RowExchange.h"

#include "Comm.h"
#include "Fp8.h"
#include "RowKernels.h"
#include "moecomm/Model/Traffic.h"

namespace moecomm {

Exchange rowExchange(moecommScope_t scope, const moecommRows_t &send,
                     const int64_t *sendRowIndex,
                     const std::vector<int64_t> &sendCounts,
                     const moecommRows_t &recv,
                     const std::vector<int64_t> &recvCounts) {
  Exchange ex;
  ex.scope = scope;
  auto addPart = [&](const void *s, void *r, int64_t rowBytes) {
    ExchangePart p;
    p.rowBytes = rowBytes;
    p.send = static_cast<const uint8_t *>(s);
    p.sendRowIndex = sendRowIndex;
    p.recv = static_cast<uint8_t *>(r);
    int64_t so = 0, ro = 0;
    for (size_t m = 0; m < sendCounts.size(); ++m) {
      p.sendOffsets.push_back(so);
      p.sendBytes.push_back(sendCounts[m] * rowBytes);
      so += sendCounts[m] * rowBytes;
      p.recvOffsets.push_back(ro);
      p.recvBytes.push_back(recvCounts[m] * rowBytes);
      ro += recvCounts[m] * rowBytes;
    }
    ex.parts.push_back(std::move(p));
  };
  addPart(send.data, recv.data, send.hidden * elementSize(send.type));
  if (isFp8(send.type))
    addPart(send.scales, recv.scales, fp8ScaleRowBytes(send.type, send.hidden));
  return ex;
}

void countRowPayload(Comm &comm, moecommDirection_t direction,
                     moecommScope_t scope, const std::vector<int> &group,
                     const std::vector<int64_t> &sendCounts,
                     moecommDataType_t type, int64_t hidden) {
  const int64_t rowBytes = wireRowBytes(type, hidden);
  for (size_t m = 0; m < group.size() && m < sendCounts.size(); ++m)
    comm.countPayload(direction, scope, group[m], sendCounts[m] * rowBytes);
}

namespace {

/// A single posted exchange of host rows.
class ExchangeOp : public Operation {
public:
  explicit ExchangeOp(Comm &comm) : comm_(comm) {}
  Status finish() override {
    Status st = err_;
    if (pending_)
      mergeStatus(st,
                  comm_.transport().waitExchange(std::move(pending_), false));
    if (posted_ >= 0)
      comm_.trace().span(kind_, direction_, stage_, scope_, posted_, bytes_);
    return st;
  }
  Advance advance() override {
    return !pending_ || comm_.transport().testExchange(*pending_, false)
               ? Advance::Complete
               : Advance::Blocked;
  }

  Comm &comm_;
  /// The trace span: posted_ < 0 when the trace was off at the post.
  double posted_ = -1;
  moecommTraceKind_t kind_ = moecommTraceKindExchange;
  moecommTraceDirection_t direction_ = moecommTraceDirNone;
  int32_t stage_ = -1;
  moecommScope_t scope_ = moecommScopeGlobal;
  int64_t bytes_ = 0;
  std::unique_ptr<PendingExchange> pending_;
  Status err_;
};

} // namespace

std::unique_ptr<Operation> startRowExchange(
    Comm &comm, moecommDirection_t direction, int stage, moecommScope_t scope,
    const moecommRows_t &send, const std::vector<int64_t> &sendCounts,
    const moecommRows_t &recv, const std::vector<int64_t> &recvCounts) {
  auto op = std::make_unique<ExchangeOp>(comm);
  if (comm.trace().on()) {
    op->posted_ = traceNow();
    op->kind_ = direction == moecommDirectionAllToAll
                    ? moecommTraceKindAllToAll
                    : moecommTraceKindExchange;
    op->direction_ = traceDirection(direction);
    op->stage_ = direction == moecommDirectionAllToAll ? -1 : stage;
    op->scope_ = scope;
    op->bytes_ = traceBytes(send);
  }
  Exchange ex = rowExchange(scope, send, nullptr, sendCounts, recv, recvCounts);
  ex.seq = comm.reserveSeqs(1);
  countRowPayload(comm, direction, scope, comm.transport().group(scope),
                  sendCounts, send.type, send.hidden);
  op->err_ = comm.transport().startExchange(std::move(ex), op->pending_);
  return op;
}

} // namespace moecomm
