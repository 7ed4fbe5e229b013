//===- PipelinedOp.cpp - Dispatch and combine over message passing --------===//
//
// The staged algorithm of StagedOp.h on a transport that moves bytes between
// processes (mpi). A stage's exchange is not one step: every block (the rows
// for one member) is cut into chunks, each chunk travels as its own message,
// and a chunk of the next stage is packed and sent as soon as the chunks of
// this stage that it reads have arrived. So the next stage's work runs while
// the slow link still carries the rest: hierarchical dispatch forwards the
// first rows over the intra-node links while later ones cross the network,
// and its combine reduces and sends the first inter-node rows while the
// intra-node partial sums of the others still arrive. The final unpack is
// applied piece by piece the same way. This is the relay pipelining of the
// hand-written hierarchical systems (DeepEP's and NVIDIA Hybrid-EP's
// forwarding of RDMA chunks over NVLink as they land), here on host buffers.
//
// Every output row is computed by the same map with the same terms in the
// same order as StagedOp computes it, so the results are the same bits; only
// when each row is computed changes.
//
// The work is a sequence of phases (send stage 0, ..., send stage S-1,
// unpack, complete what is in flight), each a list of pieces run as their
// inputs arrive. advance() (the communicator's progress thread,
// ProgressEngine.h) runs them as far as arrived chunks allow, testing and
// never waiting, and resumes there next time; finish() runs them to the end,
// waiting where it must. So the relay and the unpack proceed while the
// caller computes.
//
//===----------------------------------------------------------------------===//
#include "PipelinedOp.h"

#include "RowExchange.h"
#include "StagedCall.h"
#include "moecomm/Model/WireFormat.h"

#include <algorithm>
#include <optional>

namespace moecomm {

namespace {

/// At most this many chunks per stage, shared by its blocks (a block gets
/// kMaxChunks / members, at least 1): each is one message (two for FP8).
/// Blocks are cut into chunks of about the communicator's pipeline chunk
/// bytes (256 KiB by default), so that the first chunk arrives (and the next
/// stage can start) after a small fraction of the block, while each message
/// stays large enough to run at link speed. The cap is per stage because
/// many small messages to many peers cost more than they overlap: on the
/// emulated cluster (4 x 2, 1 Gbit/s, DeepSeek-V3 shapes) per_expert ran at
/// 1.64x its link-limited time with up to 32 chunks per block, 1.10x with 32
/// per stage, hierarchical 1.35x either way.
constexpr int kMaxChunks = static_cast<int>(kMaxChunksPerStage);
/// Receives posted ahead per member. Open MPI shares a link among all the
/// matched messages to a peer, so with every chunk's receive posted the
/// chunks would all finish together at the end; with a few, chunk c arrives
/// while the next ones stream, and the next stage works on c. Measured on
/// the emulated cluster (2 x 2, 1 Gbit/s, DeepSeek-V3 shapes, hierarchical):
/// 1 MiB chunks with 2 posted ran at 1.54x the link-limited time, 256 KiB
/// chunks with 4 posted at 1.29-1.37x, 128 KiB with 8 at 1.41-1.47x.
constexpr int kRecvWindow = 4;

/// Chunks of a block of `n` rows of `rowBytes` wire bytes cut at about
/// `chunkBytes`, at most `maxChunks`. Sender and receiver compute it from
/// the same numbers (the chunk bytes are agreed with the collective, the
/// group size is the scope's, and the layout makes a sender's count for a
/// member that member's count for it), so they agree: a block whose two
/// sides disagreed would leave a receive unmatched.
int chunkCount(int64_t n, int64_t rowBytes, int64_t chunkBytes,
               int maxChunks) {
  if (n <= 0)
    return 0;
  // n * rowBytes fits (a checked block) far below 2^62.
  const int64_t c = (n * rowBytes + chunkBytes - 1) / chunkBytes;
  return (int)std::clamp<int64_t>(c, 1, std::min<int64_t>(maxChunks, n));
}

/// First row of chunk c of a block of n rows in C chunks.
int64_t chunkBegin(int64_t n, int C, int c) { return n * c / C; }

/// Rows [begin, begin + n) of `rows`.
moecommRows_t rowsView(const moecommRows_t &rows, int64_t begin, int64_t n) {
  moecommRows_t v = rows;
  v.rows = n;
  if (rows.data)
    v.data = static_cast<uint8_t *>(rows.data) +
             begin * rows.hidden * elementSize(rows.type);
  if (rows.scales)
    v.scales = static_cast<uint8_t *>(rows.scales) +
               begin * fp8ScaleRowBytes(rows.type, rows.hidden);
  return v;
}

class PipelinedOp : public StagedCall {
public:
  PipelinedOp(Comm &comm, const moecommLayout &layout, moecommDirection_t dir,
              const moecommRows_t &in, const moecommRows_t &out,
              moecommDataType_t stageType, bool weighted, double calledSec,
              uint64_t seq0)
      : StagedCall(comm, layout, dir, in, out, stageType, weighted, calledSec,
                   seq0),
        rowBytes_(wireRowBytes(stageType, in.hidden)),
        chunkBytes_(comm.pipelineChunkBytes) {}

  /// Posts the first receives of every stage (so that the first messages
  /// find their receives posted), then packs and sends stage 0 (which reads
  /// only the caller's rows, so it never waits).
  void begin() override {
    const size_t S = plan_.stages.size();
    stages_.resize(S);
    for (size_t s = 0; s < S; ++s)
      prepare(s);
    for (size_t s = 0; s < S; ++s)
      for (int m = 0; m < members(s); ++m)
        if (m != me(s))
          postRecvs(s, m, kRecvWindow);
    runPhase(/*block=*/true);
  }

  Status finish() override {
    while (phase_ <= plan_.stages.size() + 1)
      runPhase(/*block=*/true);
    traceCall();
    stages_.clear();
    return err_;
  }

  Advance advance() override {
    moved_ = false;
    while (phase_ <= plan_.stages.size() + 1)
      if (!runPhase(/*block=*/false))
        return moved_ ? Advance::Moved : Advance::Blocked;
    return Advance::Complete;
  }

private:
  struct Stage {
    RowBuffer send, recv;
    /// Row offsets of each member's block, [members + 1].
    std::vector<int64_t> sendOff, recvOff;
    /// Posted receive chunks by member (the copy to self is one of them).
    std::vector<std::vector<std::unique_ptr<PendingExchange>>> recvs;
    std::vector<int> arrived; ///< chunks of each member waited for
    std::vector<int> posted;  ///< receive chunks of each member posted
    int pending = 0;          ///< receive chunks not waited for yet
    bool packOk = true;       ///< the pack map makes the rows sent
    /// When the stage's first chunk was sent (trace clock; < 0: untraced).
    double sentSec = -1;
    /// The chunk of each receive row, for the next stage's dependencies.
    std::vector<uint8_t> rowChunk;
    std::vector<std::unique_ptr<PendingExchange>> sends;
  };

  const StagePlan &plan(size_t s) const { return plan_.stages[s]; }
  int members(size_t s) const { return (int)plan(s).group.size(); }
  int me(size_t s) const {
    return comm_.transport().memberIndex(plan(s).scope);
  }
  /// The chunks a block of stage s may have (kMaxChunks shared).
  int blockMaxChunks(size_t s) const {
    return std::max(1, kMaxChunks / members(s));
  }
  int sendChunks(size_t s, int m) const {
    return chunkCount(plan(s).sendCounts[m], rowBytes_, chunkBytes_,
                      blockMaxChunks(s));
  }
  int recvChunks(size_t s, int m) const {
    return chunkCount(plan(s).recvCounts[m], rowBytes_, chunkBytes_,
                      blockMaxChunks(s));
  }

  void prepare(size_t s) {
    const StagePlan &p = plan(s);
    Stage &st = stages_[s];
    const int64_t H = in_.hidden;
    st.send = RowBuffer::make(comm_, p.sendRows(), H, stageType_);
    st.recv = RowBuffer::make(comm_, p.recvRows(), H, stageType_);
    st.sendOff.assign(1, 0);
    st.recvOff.assign(1, 0);
    for (int m = 0; m < members(s); ++m) {
      st.sendOff.push_back(st.sendOff.back() + p.sendCounts[m]);
      st.recvOff.push_back(st.recvOff.back() + p.recvCounts[m]);
    }
    const int self = me(s);
    st.packOk = p.pack.rows() == p.sendRows();
    if (!st.packOk)
      mergeStatus(err_, internalError(cat("stage ", s, ": the pack makes ",
                                          p.pack.rows(), " rows for ",
                                          p.sendRows(), " sent")));
    if (p.sendCounts[self] != p.recvCounts[self])
      mergeStatus(err_, internalError(cat("stage ", s, ": rank ", comm_.rank(),
                                          " sends itself ", p.sendCounts[self],
                                          " rows but expects ",
                                          p.recvCounts[self])));
    st.recvs.resize(members(s));
    st.arrived.assign(members(s), 0);
    st.posted.assign(members(s), 0);
    st.rowChunk.resize(p.recvRows());
    for (int m = 0; m < members(s); ++m) {
      const int64_t n = p.recvCounts[m];
      const int C = recvChunks(s, m);
      st.recvs[m].resize(C);
      st.pending += C;
      for (int c = 0; c < C; ++c)
        std::fill(st.rowChunk.begin() + st.recvOff[m] + chunkBegin(n, C, c),
                  st.rowChunk.begin() + st.recvOff[m] + chunkBegin(n, C, c + 1),
                  (uint8_t)c);
    }
  }

  /// The exchange of chunk c between this rank and member m of stage s:
  /// `sendRows` rows of the send buffer from row `sendAt` and `recvRows` rows
  /// of the receive buffer from row `recvAt` (either may be 0 rows).
  Status postChunk(size_t s, int m, int c, int64_t sendAt, int64_t sendRows,
                   int64_t recvAt, int64_t recvRows,
                   std::unique_ptr<PendingExchange> &pending) {
    Stage &st = stages_[s];
    std::vector<int64_t> sendCounts(members(s), 0), recvCounts(members(s), 0);
    sendCounts[m] = sendRows;
    recvCounts[m] = recvRows;
    Exchange ex = rowExchange(plan(s).scope,
                              rowsView(st.send.rows, sendAt, sendRows), nullptr,
                              sendCounts,
                              rowsView(st.recv.rows, recvAt, recvRows),
                              recvCounts);
    ex.seq = seq0_ + s * kMaxChunks + c;
    return comm_.transport().startExchange(std::move(ex), pending);
  }

  /// Posts the receives of member m's (not this rank's) chunks of stage s
  /// up to chunk `upTo` (exclusive).
  void postRecvs(size_t s, int m, int upTo) {
    Stage &st = stages_[s];
    const int64_t n = plan(s).recvCounts[m];
    const int C = recvChunks(s, m);
    for (; st.posted[m] < std::min(upTo, C); ++st.posted[m]) {
      const int c = st.posted[m];
      const int64_t b = chunkBegin(n, C, c), e = chunkBegin(n, C, c + 1);
      mergeStatus(err_, postChunk(s, m, c, 0, 0, st.recvOff[m] + b, e - b,
                                  st.recvs[m][c]));
    }
  }

  /// Waits for the first `upTo` chunks of member k of stage s.
  void waitChunks(size_t s, int k, int upTo) {
    while (stages_[s].arrived[k] < upTo)
      chunkArrived(s, k);
  }

  /// Takes in the first `upTo` chunks of member k of stage s as far as they
  /// have arrived, without waiting; true when all have.
  bool pollChunks(size_t s, int k, int upTo) {
    Stage &st = stages_[s];
    while (st.arrived[k] < upTo) {
      const auto &p = st.recvs[k][st.arrived[k]];
      if (p && !comm_.transport().testExchange(*p, false))
        return false;
      chunkArrived(s, k);
    }
    return true;
  }

  /// Completes the next chunk of member k of stage s (waiting for it unless
  /// a test found it arrived), keeping kRecvWindow receives posted ahead.
  void chunkArrived(size_t s, int k) {
    Stage &st = stages_[s];
    if (auto &p = st.recvs[k][st.arrived[k]])
      mergeStatus(err_, comm_.transport().waitExchange(std::move(p), false));
    ++st.arrived[k];
    moved_ = true;
    if (--st.pending == 0)
      traceExchange(s);
    if (k != me(s))
      postRecvs(s, k, st.arrived[k] + kRecvWindow);
  }

  /// Records stage s's exchange, from its first send until its last chunk
  /// arrived (now), when the trace was on at that send.
  void traceExchange(size_t s) {
    const Stage &st = stages_[s];
    if (st.sentSec >= 0)
      comm_.trace().span(moecommTraceKindExchange, traceDirection(dir_),
                         (int32_t)s, plan(s).scope, st.sentSec,
                         plan(s).sendRows() * rowBytes_);
  }

  /// A piece of a map: output rows `rows`, and per member of the stage its
  /// inputs come from, how many of that member's chunks they need.
  struct Piece {
    RowRange rows;
    std::vector<int> need;
    int member = 0, chunk = 0; ///< the chunk it is (packs only)
  };

  /// The chunks of stage s's receive buffer that rows `range` of `map` read.
  std::vector<int> inputsOf(size_t s, const RowMap &map, RowRange range) {
    const Stage &st = stages_[s];
    std::vector<int> need(members(s), 0);
    for (int64_t j = map.offsets[range.begin]; j < map.offsets[range.end];
         ++j) {
      const int64_t r = map.src[j];
      if (r < 0 || r >= (int64_t)st.rowChunk.size())
        continue; // the kernel reports the bad index
      const int k = (int)(std::upper_bound(st.recvOff.begin(),
                                           st.recvOff.end(), r) -
                          st.recvOff.begin()) -
                    1;
      need[k] = std::max(need[k], st.rowChunk[r] + 1);
    }
    return need;
  }

  /// Whether the inputs of `piece` in stage s are here without waiting for
  /// the network (taking in the chunks that have arrived). The copy to self completed when it was posted (the
  /// transport copies it in startExchange), so waiting for it never blocks.
  bool ready(size_t s, const Piece &piece) {
    for (int k = 0; k < members(s); ++k)
      if (k == me(s))
        waitChunks(s, k, piece.need[k]);
      else if (!pollChunks(s, k, piece.need[k]))
        return false;
    return true;
  }

  /// Runs `run` on the pieces of the current phase (work_), those whose
  /// inputs (in stage `inputs`, when there is one) are here first, in
  /// order; when none is, it waits for the inputs of the first piece left,
  /// or without `block` returns false (a later call resumes). So rows that
  /// need nothing from the network (a relay's own node's rows) never wait
  /// behind rows that do. True when every piece has run.
  template <typename Fn>
  bool runPieces(std::optional<size_t> inputs, bool block, Fn run) {
    Work &w = work_;
    while (w.left > 0) {
      bool ran = false;
      for (size_t i = w.first; i < w.pieces.size(); ++i)
        if (!w.done[i] && (!inputs || ready(*inputs, w.pieces[i]))) {
          comm_.transport().progress();
          run(w.pieces[i]);
          w.done[i] = true;
          --w.left;
          ran = true;
          moved_ = true;
        }
      while (w.first < w.pieces.size() && w.done[w.first])
        ++w.first;
      if (!ran && w.left > 0) {
        if (!block)
          return false;
        for (int k = 0; k < members(*inputs); ++k)
          waitChunks(*inputs, k, w.pieces[w.first].need[k]);
      }
    }
    return true;
  }

  /// Sets the pieces of the current phase.
  void setPieces(std::vector<Piece> pieces) {
    work_.left = pieces.size();
    work_.done.assign(pieces.size(), false);
    work_.first = 0;
    work_.pieces = std::move(pieces);
  }

  /// Runs the current phase (phase_: 0..S-1 sends stage phase_, S unpacks,
  /// S+1 completes what is still in flight) as far as it can, all of it
  /// when `block`; true when it is done and phase_ moved on.
  bool runPhase(bool block) {
    const size_t S = plan_.stages.size();
    if (!work_.begun) {
      if (phase_ < S)
        beginSend(phase_);
      else if (phase_ == S)
        beginUnpack();
      work_.begun = true;
    }
    bool done = phase_ < S    ? continueSend(phase_, block)
                : phase_ == S ? continueUnpack(block)
                              : drain(block);
    if (!done)
      return false;
    if (phase_ < S && stages_[phase_].pending == 0)
      traceExchange(phase_); // nothing to receive: done when sent
    ++phase_;
    work_ = Work();
    moved_ = true;
    return true;
  }

  /// Completes everything still in flight before the buffers go away.
  bool drain(bool block) {
    Transport &t = comm_.transport();
    for (size_t s = 0; s < stages_.size(); ++s)
      for (int k = 0; k < members(s); ++k) {
        if (block)
          waitChunks(s, k, recvChunks(s, k));
        else if (!pollChunks(s, k, recvChunks(s, k)))
          return false;
      }
    if (!block)
      for (Stage &st : stages_)
        for (auto &p : st.sends)
          if (p && !t.testExchange(*p, false))
            return false;
    for (Stage &st : stages_) {
      for (auto &p : st.sends)
        mergeStatus(err_, t.waitExchange(std::move(p), false));
      st.sends.clear();
    }
    return true;
  }

  /// Counts stage s's payload and cuts its sends into pieces: chunk by
  /// chunk, other members first and self last, so the network gets the
  /// first bytes early.
  void beginSend(size_t s) {
    const StagePlan &p = plan(s);
    Stage &st = stages_[s];
    countRowPayload(comm_, dir_, p.scope, p.group, p.sendCounts, stageType_,
                    in_.hidden);
    const int n = members(s), self = me(s);
    if (comm_.trace().on())
      st.sentSec = traceNow();
    std::vector<Piece> pieces;
    for (int c = 0; c < blockMaxChunks(s); ++c)
      for (int i = 1; i <= n; ++i) {
        const int m = (self + i) % n;
        const int C = sendChunks(s, m);
        if (c >= C || (m == self && p.sendCounts[m] != p.recvCounts[m]))
          continue; // done, or an inconsistent copy to self (reported)
        const int64_t rows = p.sendCounts[m];
        Piece piece;
        piece.rows = {st.sendOff[m] + chunkBegin(rows, C, c),
                      st.sendOff[m] + chunkBegin(rows, C, c + 1)};
        piece.member = m;
        piece.chunk = c;
        if (s > 0 && st.packOk)
          piece.need = inputsOf(s - 1, p.pack, piece.rows);
        else if (s > 0)
          piece.need.assign(members(s - 1), 0);
        pieces.push_back(std::move(piece));
      }
    setPieces(std::move(pieces));
  }

  /// Packs and sends the chunks of stage s (from x or y for stage 0, else
  /// from the previous stage's receive buffer), each as soon as its input
  /// rows are here (runPieces).
  bool continueSend(size_t s, bool block) {
    const StagePlan &p = plan(s);
    Stage &st = stages_[s];
    const RowSource in = s == 0 ? RowSource::of(in_)
                                : RowSource::of(stages_[s - 1].recv.rows);
    const bool packGathers = plainGather(p.pack);
    const int self = me(s);
    const moecommTraceKind_t packKind =
        packTraceKind(in.type, stageType_,
                      !gathers(in.type, stageType_, packGathers));
    std::optional<size_t> inputs;
    if (s > 0)
      inputs = s - 1;
    return runPieces(inputs, block, [&](const Piece &piece) {
      const int64_t b = piece.rows.begin, e = piece.rows.end;
      const int m = piece.member, c = piece.chunk;
      if (st.packOk) {
        TraceScope span(comm_.trace(), [&] {
          return traceEvent(packKind, traceDirection(dir_), (int32_t)s,
                            p.scope, (e - b) * rowBytes_);
        });
        mergeStatus(err_,
                    apply(p.pack, in, st.send.rows, packGathers, {b, e}));
      }
      // A failed pack still sends (its rows are then garbage and the error
      // is reported): the members wait for this message.
      std::unique_ptr<PendingExchange> pending;
      if (m == self) {
        const int64_t at = st.recvOff[m] + (b - st.sendOff[m]);
        mergeStatus(err_, postChunk(s, m, c, b, e - b, at, e - b, pending));
        st.recvs[m][c] = std::move(pending);
      } else {
        mergeStatus(err_, postChunk(s, m, c, b, e - b, 0, 0, pending));
        st.sends.push_back(std::move(pending));
      }
    });
  }

  /// The final unpack, in pieces of output rows, each applied as soon as its
  /// rows of the last stage are here (combine: out token t reads the rows of
  /// t from every node's block, which arrive in token order).
  void beginUnpack() {
    const RowMap &map = plan_.unpack;
    const size_t last = plan_.stages.size() - 1;
    const int64_t R = map.rows();
    const int count = chunkCount(R, rowBytes_, chunkBytes_, kMaxChunks);
    std::vector<Piece> pieces(count);
    for (int c = 0; c < count; ++c) {
      pieces[c].rows = {chunkBegin(R, count, c), chunkBegin(R, count, c + 1)};
      pieces[c].need = inputsOf(last, map, pieces[c].rows);
    }
    setPieces(std::move(pieces));
  }

  bool continueUnpack(bool block) {
    const RowMap &map = plan_.unpack;
    const size_t last = plan_.stages.size() - 1;
    const RowSource in = RowSource::of(stages_[last].recv.rows);
    return runPieces(last, block, [&](const Piece &piece) {
      TraceScope span(comm_.trace(), [&] {
        return traceEvent(moecommTraceKindUnpack, traceDirection(dir_), -1,
                          moecommScopeGlobal,
                          (piece.rows.end - piece.rows.begin) *
                              wireRowBytes(out_.type, out_.hidden));
      });
      mergeStatus(err_, apply(map, in, out_, false, piece.rows));
    });
  }

  int64_t rowBytes_;
  /// The chunk size every rank agreed on when the collective started (the
  /// communicator's may change while this operation is outstanding).
  int64_t chunkBytes_;
  std::vector<Stage> stages_;
  /// The pieces of the current phase and how far they have run.
  struct Work {
    bool begun = false;
    std::vector<Piece> pieces;
    std::vector<bool> done;
    size_t first = 0, left = 0;
  };
  size_t phase_ = 0;
  Work work_;
  /// An advance() took a step (reset by each advance()).
  bool moved_ = false;
  Status err_;
};

} // namespace

std::unique_ptr<HostOperation>
makePipelined(Comm &comm, const moecommLayout &layout,
              moecommDirection_t direction, const moecommRows_t &in,
              const moecommRows_t &out, moecommDataType_t stageType,
              bool weighted, double calledSec, uint64_t seq0) {
  return std::make_unique<PipelinedOp>(comm, layout, direction, in, out,
                                       stageType, weighted, calledSec, seq0);
}

} // namespace moecomm
