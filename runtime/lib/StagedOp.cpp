//===- StagedOp.cpp - Dispatch and combine on the host backends -----------===//
#include "StagedOp.h"

#include "PipelinedOp.h"
#include "Quantize.h"
#include "RowExchange.h"
#include "StagedCall.h"
#include "moecomm/Model/WireFormat.h"

namespace moecomm {

namespace {

/// dispatch / combine: for s in stages: pack(s) -> exchange(s); unpack, on
/// a shared-memory transport (threads), or with no stage at all. Two copies
/// are avoided, with the same arithmetic in the same order as PipelinedOp
/// (so the same bits as on MPI):
///  - a stage whose pack is a plain gather is not packed: the exchange is
///    posted with row indices into the stage's input (zero copy);
///  - the last stage, and a stage whose next pack is a reduction, is not
///    copied into a receive buffer: the unpack (or next pack) reads the
///    members' rows in place.
class StagedOp : public StagedCall {
public:
  StagedOp(Comm &comm, const moecommLayout &layout, moecommDirection_t dir,
           const moecommRows_t &in, const moecommRows_t &out,
           moecommDataType_t stageType, bool weighted, double calledSec,
           uint64_t seq0)
      : StagedCall(comm, layout, dir, in, out, stageType, weighted, calledSec,
                   seq0),
        posted_(plan_.stages.size(), -1), send_(plan_.stages.size()),
        recv_(plan_.stages.size()) {}

  void begin() override {
    if (!plan_.stages.empty())
      mergeStatus(err_, post(0, RowSource::of(in_)));
  }

  Status finish() override {
    while (next_ < plan_.stages.size())
      stepStage(/*block=*/true);
    if (plan_.stages.empty())
      mergeStatus(err_, unpack(RowSource::of(in_)));
    send_.clear();
    recv_.clear();
    traceCall();
    return err_;
  }

  Advance advance() override {
    bool moved = false;
    while (next_ < plan_.stages.size()) {
      if (!stepStage(/*block=*/false))
        return moved ? Advance::Moved : Advance::Blocked;
      moved = true;
    }
    return Advance::Complete;
  }

private:
  bool plainGatherPack(size_t s) const {
    return plainGather(plan_.stages[s].pack);
  }
  /// Receive stage s in place: it is the last stage, or the next stage's
  /// pack reduces (combine) and so copies anyway.
  bool readInPlace(size_t s) const {
    return s + 1 == plan_.stages.size() || !plainGatherPack(s + 1);
  }

  /// Posts stage s, whose input rows are `in` (contiguous, valid until the
  /// stage completes): row-indexed when its pack is a plain gather of rows
  /// of the stage type, else packed.
  Status post(size_t s, const RowSource &in) {
    if (in.type == stageType_ && !in.rowPtrs && plainGatherPack(s))
      return postRows(s, in.base, in.scales, plan_.stages[s].pack.src.data());
    Status st = pack(s, in);
    mergeStatus(st, postPacked(s));
    return st;
  }

  Status pack(size_t s, const RowSource &in) {
    const StagePlan &stage = plan_.stages[s];
    send_[s] = RowBuffer::make(comm_, stage.sendRows(), in_.hidden, stageType_);
    const bool plain = plainGatherPack(s);
    const bool reduces = !gathers(in.type, stageType_, plain);
    TraceScope span(comm_.trace(), [&] {
      return traceEvent(packTraceKind(in.type, stageType_, reduces),
                        traceDirection(dir_), (int32_t)s, stage.scope,
                        traceBytes(send_[s].rows));
    });
    return apply(stage.pack, in, send_[s].rows, plain);
  }

  Status postPacked(size_t s) {
    return postRows(s, static_cast<const uint8_t *>(send_[s].rows.data),
                    send_[s].rows.scales, nullptr);
  }

  /// Posts the exchange of stage s from `data` / `scales` rows (row-indexed
  /// by `index` when non-null), receiving into a buffer unless stage s is
  /// read in place.
  Status postRows(size_t s, const uint8_t *data, const void *scales,
                  const int64_t *index) {
    const StagePlan &stage = plan_.stages[s];
    const int64_t H = in_.hidden;
    if (!readInPlace(s))
      recv_[s] = RowBuffer::make(comm_, stage.recvRows(), H, stageType_);
    // The exchange only reads its send rows (moecommRows_t has no const
    // form).
    moecommRows_t send{const_cast<uint8_t *>(data), const_cast<void *>(scales),
                       stage.sendRows(), H, stageType_};
    Exchange ex = rowExchange(stage.scope, send, index, stage.sendCounts,
                              recv_[s].rows, stage.recvCounts);
    if (comm_.trace().on())
      posted_[s] = traceNow();
    ex.seq = seq0_ + s;
    countRowPayload(comm_, dir_, stage.scope, stage.group, stage.sendCounts,
                    stageType_, H);
    return comm_.transport().startExchange(std::move(ex), pending_);
  }

  /// Records stage s's exchange, from its post until now (its wait
  /// returned), when the trace was on at the post.
  void traceExchange(size_t s) {
    if (posted_[s] < 0)
      return;
    const StagePlan &stage = plan_.stages[s];
    comm_.trace().span(moecommTraceKindExchange, traceDirection(dir_),
                       (int32_t)s, stage.scope, posted_[s],
                       stage.sendRows() * wireRowBytes(stageType_, in_.hidden));
  }

  /// The rows of stage s as posted by its members, in receive order.
  Status peerRows(size_t s, const std::vector<const Exchange *> &peers,
                  RowSource &rows) {
    const StagePlan &stage = plan_.stages[s];
    const int me = comm_.transport().memberIndex(stage.scope);
    const bool fp8 = isFp8(stageType_);
    rowPtrs_.clear();
    scalePtrs_.clear();
    for (size_t m = 0; m < stage.group.size(); ++m) {
      const Exchange *pe = peers[m];
      const int64_t n = stage.recvCounts[m];
      if (!pe || pe->parts.size() != (fp8 ? 2u : 1u) ||
          pe->parts[0].sendBytes[me] != n * pe->parts[0].rowBytes)
        return internalError(cat("rank ", comm_.rank(), " expects ", n,
                                 " rows from rank ", stage.group[m],
                                 " in exchange ", seq0_ + s,
                                 " but it posts a different block"));
      for (int64_t k = 0; k < n; ++k) {
        rowPtrs_.push_back(pe->parts[0].sendRow(me, k));
        if (fp8)
          scalePtrs_.push_back(pe->parts[1].sendRow(me, k));
      }
    }
    rows = RowSource();
    rows.type = stageType_;
    rows.hidden = in_.hidden;
    rows.rows = (int64_t)rowPtrs_.size();
    rows.rowBytes = in_.hidden * elementSize(stageType_);
    rows.rowPtrs = rowPtrs_.data();
    rows.scalePtrs = fp8 ? scalePtrs_.data() : nullptr;
    return Status::success();
  }

  Status unpack(RowSource in) {
    RowBuffer quantized;
    if (dir_ == moecommDirectionDispatch && plan_.stages.empty() &&
        isFp8(stageType_) && !isFp8(in.type)) {
      // No exchange (W == 1): still quantize once, so the result does not
      // depend on the topology.
      quantized = RowBuffer::make(comm_, in_.rows, in_.hidden, stageType_);
      TraceScope span(comm_.trace(), [&] {
        return traceEvent(moecommTraceKindQuantize, moecommTraceDirDispatch, -1,
                          moecommScopeGlobal, traceBytes(quantized.rows));
      });
      if (Status st = quantizeRows(&in_, &quantized.rows); !st.ok())
        return st;
      in = RowSource::of(quantized.rows);
    }
    TraceScope span(comm_.trace(), [&] {
      return traceEvent(moecommTraceKindUnpack, traceDirection(dir_), -1,
                        moecommScopeGlobal, traceBytes(out_));
    });
    return apply(plan_.unpack, in, out_, /*plainGather=*/false);
  }

  /// Completes stage next_ (its exchange, then the next stage's pack and
  /// post or the unpack) and moves on to the next. Without `block` it stops
  /// where it would wait for another rank and returns false (a later call
  /// resumes there). Failures go to err_.
  bool stepStage(bool block) {
    const size_t S = plan_.stages.size();
    const size_t s = next_;
    const bool last = s + 1 == S;
    Transport &t = comm_.transport();
    if (!pending_) {
      // Posting failed (already in err_): nothing to wait for.
      mergeStatus(err_, internalError(cat("rank ", comm_.rank(), ": stage ", s,
                                          " was not posted")));
      next_ = S;
      return true;
    }
    if (readInPlace(s)) {
      if (!consumed_) {
        if (!block && !t.peersPosted(*pending_))
          return false;
        std::vector<const Exchange *> peers;
        RowSource rows;
        Status ps = t.peers(*pending_, peers);
        if (ps.ok())
          ps = peerRows(s, peers, rows);
        mergeStatus(err_, ps);
        if (ps.ok())
          mergeStatus(err_, last ? unpack(rows) : pack(s + 1, rows));
        consumed_ = true;
      }
      if (!block && !t.testExchange(*pending_, /*consumed=*/true))
        return false;
      mergeStatus(err_, t.waitExchange(std::move(pending_), true));
      consumed_ = false;
      traceExchange(s);
      ++next_;
      if (!last)
        mergeStatus(err_, postPacked(s + 1));
      return true;
    }
    if (!block && !t.testExchange(*pending_, /*consumed=*/false))
      return false;
    mergeStatus(err_, t.waitExchange(std::move(pending_), false));
    traceExchange(s);
    ++next_;
    RowSource rows = RowSource::of(recv_[s].rows);
    mergeStatus(err_, last ? unpack(rows) : post(s + 1, rows));
    return true;
  }

  /// When stage s was posted (trace clock), or < 0 when the trace was off.
  std::vector<double> posted_;
  size_t next_ = 0;
  std::vector<RowBuffer> send_, recv_;
  std::vector<const uint8_t *> rowPtrs_;
  std::vector<const uint8_t *> scalePtrs_;
  std::unique_ptr<PendingExchange> pending_;
  /// Stage next_'s members' rows were read in place (the next pack or the
  /// unpack ran); what is left is releasing them.
  bool consumed_ = false;
  Status err_;
};

} // namespace

std::unique_ptr<HostOperation>
makeStaged(Comm &comm, const moecommLayout &layout,
           moecommDirection_t direction, const moecommRows_t &in,
           const moecommRows_t &out, moecommDataType_t stageType, bool weighted,
           double calledSec, uint64_t seq0) {
  if (!comm.transport().supportsDirect() &&
      !directionPlan(layout, direction).stages.empty())
    return makePipelined(comm, layout, direction, in, out, stageType, weighted,
                         calledSec, seq0);
  return std::make_unique<StagedOp>(comm, layout, direction, in, out, stageType,
                                    weighted, calledSec, seq0);
}

} // namespace moecomm
