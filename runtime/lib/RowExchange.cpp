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

/// A single exchange of host rows, posted by begin().
class ExchangeOp : public HostOperation {
public:
  ExchangeOp(Comm &comm, moecommDirection_t direction, int stage,
             const moecommRows_t &send, std::vector<int64_t> sendCounts,
             Exchange ex)
      : comm_(comm), direction_(direction), stage_(stage), scope_(ex.scope),
        send_(send), sendCounts_(std::move(sendCounts)), ex_(std::move(ex)) {}

  void begin() override {
    if (comm_.trace().on())
      posted_ = traceNow();
    countRowPayload(comm_, direction_, scope_, comm_.transport().group(scope_),
                    sendCounts_, send_.type, send_.hidden);
    err_ = comm_.transport().startExchange(std::move(ex_), pending_);
  }
  Status finish() override {
    Status st = err_;
    if (pending_)
      mergeStatus(st,
                  comm_.transport().waitExchange(std::move(pending_), false));
    if (posted_ >= 0) {
      const bool allToAll = direction_ == moecommDirectionAllToAll;
      comm_.trace().span(allToAll ? moecommTraceKindAllToAll
                                  : moecommTraceKindExchange,
                         traceDirection(direction_), allToAll ? -1 : stage_,
                         scope_, posted_, traceBytes(send_));
    }
    return st;
  }
  Advance advance() override {
    return !pending_ || comm_.transport().testExchange(*pending_, false)
               ? Advance::Complete
               : Advance::Blocked;
  }

private:
  Comm &comm_;
  moecommDirection_t direction_;
  int stage_;
  moecommScope_t scope_;
  moecommRows_t send_;
  std::vector<int64_t> sendCounts_;
  /// Posted by begin(); its sequence number is reserved at creation.
  Exchange ex_;
  /// The trace span: posted_ < 0 when the trace was off at the post.
  double posted_ = -1;
  std::unique_ptr<PendingExchange> pending_;
  Status err_;
};

} // namespace

std::unique_ptr<HostOperation>
makeRowExchange(Comm &comm, moecommDirection_t direction, int stage,
                moecommScope_t scope, const moecommRows_t &send,
                const std::vector<int64_t> &sendCounts,
                const moecommRows_t &recv,
                const std::vector<int64_t> &recvCounts, uint64_t seq) {
  Exchange ex = rowExchange(scope, send, nullptr, sendCounts, recv, recvCounts);
  ex.seq = seq;
  return std::make_unique<ExchangeOp>(comm, direction, stage, send, sendCounts,
                                      std::move(ex));
}

} // namespace moecomm
