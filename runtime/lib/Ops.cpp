//===- Ops.cpp - Layouts and the collective operations --------------------===//
//
// Every collective starts with Comm::agree (one allGather of a fixed-size
// Signature): all ranks learn whether everyone runs the same collective with
// the same parameters and whether any rank's input is bad, and all return
// the same result before any payload moves.
//
//===----------------------------------------------------------------------===//
#include "Ops.h"

#include "Fp8.h"
#include "Routing.h"
#include "RowKernels.h"
#include "moecomm/Model/Sizes.h"
#include "moecomm/Model/CostModel.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <numeric>

namespace moecomm {

namespace {

void merge(Status &into, const Status &st) {
  if (into.ok() && !st.ok())
    into = st;
}

Status checkLayout(const Comm &comm, const moecommLayout *layout) {
  if (!layout)
    return invalidArgument(cat("rank ", comm.rank(), ": layout is NULL"));
  if (layout->commUid != comm.uid())
    return invalidArgument(cat("rank ", comm.rank(),
                               ": the layout belongs to another communicator"));
  return Status::success();
}

bool isWireType(moecommDataType_t t) {
  return t == moecommFloat32 || t == moecommBfloat16 || t == moecommFloat8E4M3;
}

/// Posts one exchange of whole rows (FP8: rows and scales as two parts) and
/// counts its payload traffic.
Status postRows(Comm &comm, moecommDirection_t dir, moecommScope_t scope,
                uint64_t seq, const moecommRows_t &send,
                const std::vector<int64_t> &sendCounts,
                const moecommRows_t &recv,
                const std::vector<int64_t> &recvCounts,
                std::unique_ptr<PendingExchange> &pending) {
  std::vector<int> group = comm.transport().group(scope);
  const int64_t H = send.hidden;
  const bool fp8 = send.type == moecommFloat8E4M3;
  Exchange ex;
  ex.seq = seq;
  ex.scope = scope;
  auto addPart = [&](const void *s, void *r, int64_t rowBytes) {
    ExchangePart p;
    p.rowBytes = rowBytes;
    p.send = static_cast<const uint8_t *>(s);
    p.recv = static_cast<uint8_t *>(r);
    int64_t so = 0, ro = 0;
    for (size_t m = 0; m < group.size(); ++m) {
      p.sendOffsets.push_back(so);
      p.sendBytes.push_back(sendCounts[m] * rowBytes);
      so += sendCounts[m] * rowBytes;
      p.recvOffsets.push_back(ro);
      p.recvBytes.push_back(recvCounts[m] * rowBytes);
      ro += recvCounts[m] * rowBytes;
    }
    ex.parts.push_back(std::move(p));
  };
  addPart(send.data, recv.data, H * elementSize(send.type));
  if (fp8)
    addPart(send.scales, recv.scales, fp8Blocks(H) * 4);
  const int64_t rowBytes = wireRowBytes(send.type, H);
  for (size_t m = 0; m < group.size(); ++m)
    comm.countPayload(dir, scope, group[m], sendCounts[m] * rowBytes);
  return comm.transport().startExchange(std::move(ex), pending);
}

/// Combine maps: a plain gather when every row has one unweighted term (the
/// per_expert pack), else an f32 reduction.
Status applyCombineMap(const RowMap &map, const moecommRows_t &in,
                       bool weighted, const moecommRows_t &out) {
  moecommRows_t o = out;
  bool gather = (map.coefs.empty() || !weighted) && in.type == out.type;
  for (int64_t i = 0; gather && i < map.rows(); ++i)
    gather = map.offsets[i + 1] - map.offsets[i] == 1;
  return gather ? gatherRows(map, in, o) : reduceRows(map, in, weighted, o);
}

//===--- Layout creation --------------------------------------------------===//

/// Sends records[m] to each member of `stage`'s group and receives
/// expect[m] records from each (metadata traffic).
Status exchangeRecords(Comm &comm, const StagePlan &stage,
                       const std::vector<std::vector<PairRecord>> &records,
                       const std::vector<int64_t> &expect,
                       std::vector<std::vector<PairRecord>> &received) {
  const size_t n = stage.group.size();
  std::vector<PairRecord> send, recv;
  ExchangePart p;
  p.rowBytes = sizeof(PairRecord);
  int64_t ro = 0;
  for (size_t m = 0; m < n; ++m) {
    int64_t bytes = (int64_t)(records[m].size() * sizeof(PairRecord));
    p.sendOffsets.push_back((int64_t)(send.size() * sizeof(PairRecord)));
    p.sendBytes.push_back(bytes);
    send.insert(send.end(), records[m].begin(), records[m].end());
    p.recvOffsets.push_back(ro * (int64_t)sizeof(PairRecord));
    p.recvBytes.push_back(expect[m] * (int64_t)sizeof(PairRecord));
    ro += expect[m];
    comm.countMetadata(stage.group[m], bytes);
  }
  recv.resize(ro);
  p.send = reinterpret_cast<const uint8_t *>(send.data());
  p.recv = reinterpret_cast<uint8_t *>(recv.data());
  Exchange ex;
  ex.seq = comm.reserveSeqs(1);
  ex.scope = stage.scope;
  ex.parts.push_back(std::move(p));
  std::unique_ptr<PendingExchange> pending;
  Status st = comm.transport().startExchange(std::move(ex), pending);
  if (pending)
    merge(st, comm.transport().waitExchange(std::move(pending), false));
  received.assign(n, {});
  int64_t off = 0;
  for (size_t m = 0; m < n; ++m) {
    received[m].assign(recv.begin() + off, recv.begin() + off + expect[m]);
    off += expect[m];
  }
  return st;
}

const char *const kLayoutFields[] = {
    "topk",           "num_experts",      "strategy",       "capacity",
    "hidden (auto)",  "wire type (auto)", "the link model", "the link model",
    "the link model", "the link model",   "ranks_per_node", "ranks"};

int64_t bitsOf(double d) {
  int64_t v;
  std::memcpy(&v, &d, 8);
  return v;
}

} // namespace

Status createLayout(Comm &comm, const moecommLayoutDesc_t *desc,
                    std::unique_ptr<moecommLayout> &out) {
  const int W = comm.size(), me = comm.rank();
  // A device backend may get device-resident routing: the plan is built
  // from host copies (a host synchronization: the "exact" mode).
  DeviceEngine *dev = comm.transport().deviceEngine();
  HostRouting hostRouting;
  Status copied;
  if (dev && desc) {
    copied = onRank(comm.rank(), dev->hostRouting(*desc, hostRouting));
    if (copied.ok())
      desc = &hostRouting.desc;
  }
  Topology topo;
  topo.ranks = W;
  topo.ranksPerNode = comm.ranksPerNode();
  RoutingView view;
  Status local;
  if (!desc) {
    local = invalidArgument(cat("rank ", me, ": the layout desc is NULL"));
  } else {
    topo.numExperts = desc->numExperts;
    view.numTokens = desc->numTokens;
    view.topk = desc->topk;
    view.topkIdx = desc->topkIdx;
    view.idxType = desc->idxType;
    view.topkWeights = desc->topkWeights;
    if (desc->idxType != moecommInt32 && desc->idxType != moecommInt64)
      local = invalidArgument(
          cat("rank ", me, ": topk_idx must be int32 or int64, got type ",
              (int)desc->idxType));
    else if (desc->numTokens > 0 && desc->topk > 0 && !desc->topkIdx)
      local = invalidArgument(cat("rank ", me, ": topk_idx is NULL"));
    else if (desc->strategy < moecommPerExpert || desc->strategy > moecommAuto)
      local = invalidArgument(
          cat("rank ", me, ": unknown strategy ", (int)desc->strategy));
    else if (!isWireType(desc->wireType))
      local =
          invalidArgument(cat("rank ", me, ": wire type ", (int)desc->wireType,
                              " is not f32, bf16 or fp8"));
    else if (desc->hidden < 0)
      local = invalidArgument(
          cat("rank ", me, ": hidden must be >= 0, got ", desc->hidden));
    else if (!blockFits(1, desc->hidden)) // auto's cost model sizes its rows
      local = invalidArgument(cat("rank ", me, ": hidden ", desc->hidden,
                                  " is more bytes per row than memory holds"));
    else if (copied.ok()) // never read device memory on the host
      local = validateRouting(topo, me, view, desc->capacity);
  }
  if (!copied.ok())
    local = copied;
  Signature sig(OpKind::LayoutCreate);
  sig.setError(local);
  const bool isAuto = desc && desc->strategy == moecommAuto;
  sig.add(desc ? desc->topk : 0);
  sig.add(desc ? desc->numExperts : 0);
  sig.add(desc ? desc->strategy : 0);
  sig.add(desc ? desc->capacity : 0);
  sig.add(isAuto ? desc->hidden : 0);
  sig.add(isAuto ? desc->wireType : 0);
  sig.add(isAuto ? bitsOf(comm.linkModel.intraAlphaSec) : 0);
  sig.add(isAuto ? bitsOf(comm.linkModel.intraBetaBytesPerSec) : 0);
  sig.add(isAuto ? bitsOf(comm.linkModel.interAlphaSec) : 0);
  sig.add(isAuto ? bitsOf(comm.linkModel.interBetaBytesPerSec) : 0);
  if (Status st = comm.agree(sig, kLayoutFields); !st.ok())
    return st;

  // Row counts of every (source, destination) pair, then capacity drops,
  // identically on every rank.
  std::vector<int64_t> mine = pairCountsOfRank(topo, view);
  std::vector<int64_t> pairs((size_t)W * W);
  if (Status st = comm.allGather(mine.data(), W * 8, pairs.data()); !st.ok())
    return st;
  for (int q = 0; q < W; ++q)
    comm.countMetadata(q, W * 8);
  std::vector<int64_t> kept = keptPairCounts(pairs, W, desc->capacity);
  std::vector<uint8_t> mask = keptSlotMask(topo, view, &kept[(size_t)me * W]);

  moecommStrategy_t strategy = desc->strategy;
  if (isAuto) {
    const int N = topo.nodes();
    std::vector<int64_t> summary(W + N), all((size_t)(W + N) * W);
    summarizeRank(topo, view, mask, summary.data(), summary.data() + W);
    if (Status st = comm.allGather(summary.data(), (W + N) * 8, all.data());
        !st.ok())
      return st;
    for (int q = 0; q < W; ++q)
      comm.countMetadata(q, (W + N) * 8);
    RoutingSummary rs;
    rs.topo = topo;
    rs.pairs = kept;
    rs.tokenRanks.resize((size_t)W * W);
    rs.tokenNodes.resize((size_t)W * N);
    for (int r = 0; r < W; ++r) {
      std::copy(all.begin() + (size_t)r * (W + N),
                all.begin() + (size_t)r * (W + N) + W,
                rs.tokenRanks.begin() + (size_t)r * W);
      std::copy(all.begin() + (size_t)r * (W + N) + W,
                all.begin() + (size_t)(r + 1) * (W + N),
                rs.tokenNodes.begin() + (size_t)r * N);
    }
    int64_t H = desc->hidden > 0 ? desc->hidden : 7168;
    moecommDataType_t dataType =
        desc->wireType == moecommFloat8E4M3 ? moecommBfloat16 : desc->wireType;
    strategy = chooseStrategy(rs, wireRowBytes(desc->wireType, H),
                              wireRowBytes(dataType, H), comm.linkModel);
  }

  auto layout = std::make_unique<moecommLayout>();
  RankPlan &plan = layout->plan;
  Status built;
  try {
    SourceSide src = buildSourceSide(topo, strategy, me, view, mask, plan);
    int64_t in = 0, keep = 0;
    for (int s = 0; s < W; ++s) {
      in += pairs[(size_t)s * W + me];
      keep += kept[(size_t)s * W + me];
    }
    plan.dropped = in - keep;
    const size_t S = plan.dispatch.stages.size();
    if (S >= 1) {
      std::vector<std::vector<PairRecord>> received;
      merge(built,
            exchangeRecords(comm, plan.dispatch.stages[0], src.records,
                            expectedRecordCounts(topo, strategy, 0, me, kept),
                            received));
      if (S == 2) {
        auto forward = buildRelaySide(topo, me, received, plan);
        merge(built,
              exchangeRecords(comm, plan.dispatch.stages[1], forward,
                              expectedRecordCounts(topo, strategy, 1, me, kept),
                              received));
      }
      buildDestSide(topo, strategy, me, received, plan);
    }
    if (dev && built.ok())
      merge(built,
            onRank(comm.rank(), dev->uploadLayout(plan, layout->device)));
  } catch (const std::bad_alloc &) {
    merge(built, systemError(cat("rank ", me, ": out of memory")));
  }
  // Every rank learns whether every rank built its plan.
  Signature fin(OpKind::LayoutFinish);
  fin.setError(built);
  if (Status st = comm.agree(fin, kLayoutFields); !st.ok())
    return st;

  layout->comm = &comm;
  layout->commUid = comm.uid();
  layout->id = comm.nextLayoutId();
  layout->info.recvRows = plan.recvRows();
  layout->info.localExperts = topo.localExperts();
  layout->info.dropped = plan.dropped;
  layout->info.strategy = strategy;
  layout->info.numStages = (int)plan.dispatch.stages.size();
  layout->info.numTokens = plan.numTokens;
  out = std::move(layout);
  return Status::success();
}

//===--- Dispatch and combine ---------------------------------------------===//

namespace {

/// dispatch / combine: for s in stages: pack(s) -> exchange(s); unpack.
///
/// On a shared-memory transport (threads) two copies are avoided, with the
/// same arithmetic in the same order (so the same bits as on MPI):
///  - a stage whose pack is a plain gather is not packed: the exchange is
///    posted with row indices into the stage's input (zero copy);
///  - the last stage, and a stage whose next pack is a reduction, is not
///    copied into a receive buffer: the unpack (or next pack) reads the
///    members' rows in place.
class StagedOp : public Operation {
public:
  StagedOp(Comm &comm, const moecommLayout &layout, moecommDirection_t dir,
           const moecommRows_t &in, const moecommRows_t &out,
           moecommDataType_t stageType, bool weighted)
      : comm_(comm), dir_(dir),
        plan_(dir == moecommDirectionDispatch ? layout.plan.dispatch
                                              : layout.plan.combine),
        in_(in), out_(out), stageType_(stageType), weighted_(weighted),
        direct_(comm.transport().supportsDirect()) {}

  void start() {
    const size_t S = plan_.stages.size();
    seq0_ = comm_.reserveSeqs(S);
    send_.resize(S);
    recv_.resize(S);
    if (S > 0)
      merge(err_, post(0, RowSource::of(in_)));
  }

  Status finish() override {
    const size_t S = plan_.stages.size();
    Status st = err_;
    for (; next_ < S; ++next_) {
      const size_t s = next_;
      const bool last = s + 1 == S;
      if (!pending_) {
        // Posting failed (already in st): nothing to wait for.
        merge(st, internalError(cat("rank ", comm_.rank(), ": stage ", s,
                                    " was not posted")));
        break;
      }
      if (readInPlace(s)) {
        std::vector<const Exchange *> peers;
        RowSource rows;
        Status ps = comm_.transport().peers(*pending_, peers);
        if (ps.ok())
          ps = peerRows(s, peers, rows);
        merge(st, ps);
        if (ps.ok())
          merge(st, last ? unpack(rows) : pack(s + 1, rows));
        merge(st, comm_.transport().waitExchange(std::move(pending_), true));
        if (!last)
          merge(st, postPacked(s + 1));
      } else {
        merge(st, comm_.transport().waitExchange(std::move(pending_), false));
        RowSource rows = RowSource::of(recv_[s].rows);
        merge(st, last ? unpack(rows) : post(s + 1, rows));
      }
    }
    if (S == 0)
      merge(st, unpack(RowSource::of(in_)));
    send_.clear();
    recv_.clear();
    return st;
  }

private:
  bool plainGatherPack(size_t s) const {
    return isPlainGather(plan_.stages[s].pack,
                         dir_ == moecommDirectionCombine && weighted_);
  }
  /// Receive stage s in place: it is the last stage, or the next stage's
  /// pack reduces (combine) and so copies anyway.
  bool readInPlace(size_t s) const {
    if (!direct_)
      return false;
    return s + 1 == plan_.stages.size() || !plainGatherPack(s + 1);
  }

  /// Posts stage s, whose input rows are `in` (contiguous, valid until the
  /// stage completes): row-indexed when its pack is a plain gather of rows
  /// of the stage type on a shared-memory transport, else packed.
  Status post(size_t s, const RowSource &in) {
    if (direct_ && in.type == stageType_ && !in.rowPtrs && plainGatherPack(s))
      return postRows(s, in.base, in.scales, plan_.stages[s].pack.src.data());
    Status st = pack(s, in);
    merge(st, postPacked(s));
    return st;
  }

  Status pack(size_t s, const RowSource &in) {
    const StagePlan &stage = plan_.stages[s];
    send_[s] = RowBuffer::make(comm_, stage.sendRows(), in_.hidden, stageType_);
    if (dir_ == moecommDirectionDispatch ||
        (in.type == stageType_ && plainGatherPack(s)))
      return gatherRows(stage.pack, in, send_[s].rows);
    return reduceRows(stage.pack, in, weighted_, send_[s].rows);
  }

  Status postPacked(size_t s) {
    return postRows(s, static_cast<const uint8_t *>(send_[s].rows.data),
                    send_[s].rows.scales, nullptr);
  }

  /// Posts the exchange of stage s from `data` / `scales` rows (row-indexed
  /// by `index` when non-null), receiving into a buffer unless stage s is
  /// read in place.
  Status postRows(size_t s, const uint8_t *data, const float *scales,
                  const int64_t *index) {
    const StagePlan &stage = plan_.stages[s];
    const int64_t H = in_.hidden;
    if (!readInPlace(s))
      recv_[s] = RowBuffer::make(comm_, stage.recvRows(), H, stageType_);
    Exchange ex;
    ex.seq = seq0_ + s;
    ex.scope = stage.scope;
    auto addPart = [&](const void *src, void *dst, int64_t rowBytes) {
      ExchangePart p;
      p.rowBytes = rowBytes;
      p.send = static_cast<const uint8_t *>(src);
      p.sendRowIndex = index;
      p.recv = static_cast<uint8_t *>(dst);
      int64_t so = 0, ro = 0;
      for (size_t m = 0; m < stage.group.size(); ++m) {
        p.sendOffsets.push_back(so);
        p.sendBytes.push_back(stage.sendCounts[m] * rowBytes);
        so += stage.sendCounts[m] * rowBytes;
        p.recvOffsets.push_back(ro);
        p.recvBytes.push_back(stage.recvCounts[m] * rowBytes);
        ro += stage.recvCounts[m] * rowBytes;
      }
      ex.parts.push_back(std::move(p));
    };
    addPart(data, recv_[s].rows.data, H * elementSize(stageType_));
    if (stageType_ == moecommFloat8E4M3)
      addPart(scales, recv_[s].rows.scales, fp8Blocks(H) * 4);
    const int64_t rowBytes = wireRowBytes(stageType_, H);
    for (size_t m = 0; m < stage.group.size(); ++m)
      comm_.countPayload(dir_, stage.scope, stage.group[m],
                         stage.sendCounts[m] * rowBytes);
    return comm_.transport().startExchange(std::move(ex), pending_);
  }

  /// The rows of stage s as posted by its members, in receive order.
  Status peerRows(size_t s, const std::vector<const Exchange *> &peers,
                  RowSource &rows) {
    const StagePlan &stage = plan_.stages[s];
    const int me = comm_.transport().memberIndex(stage.scope);
    const bool fp8 = stageType_ == moecommFloat8E4M3;
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
          scalePtrs_.push_back(
              reinterpret_cast<const float *>(pe->parts[1].sendRow(me, k)));
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
        stageType_ == moecommFloat8E4M3 && in.type != moecommFloat8E4M3) {
      // No exchange (W == 1): still quantize once, so the result does not
      // depend on the topology.
      quantized = RowBuffer::make(comm_, in_.rows, in_.hidden, stageType_);
      if (Status st = quantizeRows(&in_, &quantized.rows); !st.ok())
        return st;
      in = RowSource::of(quantized.rows);
    }
    if (dir_ == moecommDirectionDispatch)
      return gatherRows(plan_.unpack, in, out_);
    return reduceRows(plan_.unpack, in, weighted_, out_);
  }

  Comm &comm_;
  moecommDirection_t dir_;
  const DirectionPlan &plan_;
  moecommRows_t in_, out_;
  moecommDataType_t stageType_;
  bool weighted_;
  bool direct_;
  uint64_t seq0_ = 0;
  size_t next_ = 0;
  std::vector<RowBuffer> send_, recv_;
  std::vector<const uint8_t *> rowPtrs_;
  std::vector<const float *> scalePtrs_;
  std::unique_ptr<PendingExchange> pending_;
  Status err_;
};

/// A single posted exchange (all_to_all, one staged exchange).
class ExchangeOp : public Operation {
public:
  ExchangeOp(Comm &comm) : comm_(comm) {}
  Status finish() override {
    Status st = err_;
    if (pending_)
      merge(st, comm_.transport().waitExchange(std::move(pending_), false));
    return st;
  }
  Comm &comm_;
  std::unique_ptr<PendingExchange> pending_;
  Status err_;
};

/// Posts a prepared device operation (after the agreement) and hands it
/// out; a posting failure is reported by its finish(), like the CPU
/// operations' (every rank has agreed, so every rank gets a request).
Status postDevice(std::unique_ptr<DeviceOperation> devOp,
                  std::unique_ptr<Operation> &op) {
  if (!devOp)
    return internalError("the device engine prepared no operation");
  (void)devOp->post();
  op = std::move(devOp);
  return Status::success();
}

/// The staged operation allocates a block per stage (rows from several
/// sources, a relay's rows for others): each must be addressable, like the
/// caller's blocks, and every rank must know before anything moves.
Status checkStageBlocks(const moecommLayout &layout, moecommDirection_t dir,
                        int64_t H) {
  const DirectionPlan &dp =
      dir == moecommDirectionDispatch ? layout.plan.dispatch
                                      : layout.plan.combine;
  for (size_t s = 0; s < dp.stages.size(); ++s) {
    const int64_t n =
        std::max(dp.stages[s].sendRows(), dp.stages[s].recvRows());
    if (!blockFits(n, H))
      return invalidArgument(cat("stage ", s, " of ", directionName(dir),
                                 " moves ", n, " rows of hidden size ", H,
                                 ": more bytes than memory holds"));
  }
  return Status::success();
}

const char *const kDispatchFields[] = {"the layout", "hidden", "the data type",
                                       "the wire type"};
const char *const kCombineFields[] = {"the layout", "hidden", "the data type",
                                      "weighted"};

} // namespace

Status startDispatch(Comm &comm, const moecommLayout *layout,
                     const moecommRows_t *x, moecommDataType_t wireType,
                     const moecommRows_t *recv, moecommStream_t stream,
                     std::unique_ptr<Operation> &op) {
  Status local = checkLayout(comm, layout);
  const int64_t H = x ? x->hidden : 0;
  if (local.ok())
    local = onRank(comm.rank(), checkRows(x, "x", layout->plan.numTokens, H));
  if (local.ok() && H < 1)
    local = onRank(comm.rank(),
                   invalidArgument(cat("hidden must be >= 1, got ", H)));
  if (local.ok() && !isFloatData(x->type))
    local = onRank(
        comm.rank(),
        invalidArgument(cat("x must be f32 or bf16, got type ", (int)x->type)));
  if (local.ok() && wireType != x->type && wireType != moecommFloat8E4M3)
    local = onRank(comm.rank(),
                   invalidArgument(cat("wire type ", (int)wireType,
                                       " is neither x's type nor FP8")));
  if (local.ok())
    local = onRank(comm.rank(),
                   checkRows(recv, "recv", layout->plan.recvRows(), H));
  if (local.ok() && recv->type != x->type)
    local = onRank(comm.rank(),
                   invalidArgument(cat("recv has type ", (int)recv->type,
                                       ", expected x's type ", (int)x->type)));
  if (local.ok())
    local = onRank(comm.rank(),
                   checkStageBlocks(*layout, moecommDirectionDispatch, H));
  DeviceEngine *dev = comm.transport().deviceEngine();
  std::unique_ptr<DeviceOperation> devOp;
  if (local.ok() && dev)
    local =
        onRank(comm.rank(),
               dev->prepareStaged(comm, *layout, moecommDirectionDispatch, *x,
                                  *recv, wireType, false, stream, devOp));
  Signature sig(OpKind::Dispatch);
  sig.setError(local);
  sig.add(layout ? layout->id : 0);
  sig.add(H);
  sig.add(x ? (int64_t)x->type : -1);
  sig.add((int64_t)wireType);
  if (Status st = comm.agree(sig, kDispatchFields); !st.ok())
    return st;
  if (dev)
    return postDevice(std::move(devOp), op);
  auto o = std::make_unique<StagedOp>(comm, *layout, moecommDirectionDispatch,
                                      *x, *recv, wireType, false);
  o->start();
  op = std::move(o);
  return Status::success();
}

Status startCombine(Comm &comm, const moecommLayout *layout,
                    const moecommRows_t *y, int weighted,
                    const moecommRows_t *out, moecommStream_t stream,
                    std::unique_ptr<Operation> &op) {
  Status local = checkLayout(comm, layout);
  const int64_t H = y ? y->hidden : 0;
  if (local.ok())
    local = onRank(comm.rank(), checkRows(y, "y", layout->plan.recvRows(), H));
  if (local.ok() && H < 1)
    local = onRank(comm.rank(),
                   invalidArgument(cat("hidden must be >= 1, got ", H)));
  if (local.ok() && !isFloatData(y->type))
    local = onRank(
        comm.rank(),
        invalidArgument(cat("y must be f32 or bf16, got type ", (int)y->type)));
  if (local.ok())
    local =
        onRank(comm.rank(), checkRows(out, "out", layout->plan.numTokens, H));
  if (local.ok() && out->type != y->type)
    local = onRank(comm.rank(),
                   invalidArgument(cat("out has type ", (int)out->type,
                                       ", expected y's type ", (int)y->type)));
  if (local.ok())
    local = onRank(comm.rank(),
                   checkStageBlocks(*layout, moecommDirectionCombine, H));
  DeviceEngine *dev = comm.transport().deviceEngine();
  std::unique_ptr<DeviceOperation> devOp;
  if (local.ok() && dev)
    local =
        onRank(comm.rank(),
               dev->prepareStaged(comm, *layout, moecommDirectionCombine, *y,
                                  *out, y->type, weighted != 0, stream, devOp));
  Signature sig(OpKind::Combine);
  sig.setError(local);
  sig.add(layout ? layout->id : 0);
  sig.add(H);
  sig.add(y ? (int64_t)y->type : -1);
  sig.add(weighted ? 1 : 0);
  if (Status st = comm.agree(sig, kCombineFields); !st.ok())
    return st;
  if (dev)
    return postDevice(std::move(devOp), op);
  auto o = std::make_unique<StagedOp>(comm, *layout, moecommDirectionCombine,
                                      *y, *out, y->type, weighted != 0);
  o->start();
  op = std::move(o);
  return Status::success();
}

//===--- all_to_all -------------------------------------------------------===//

namespace {
Status checkCounts(const Comm &comm, const int64_t *counts, const char *what) {
  if (!counts)
    return invalidArgument(cat("rank ", comm.rank(), ": ", what, " is NULL"));
  int64_t total = 0;
  for (int r = 0; r < comm.size(); ++r) {
    if (counts[r] < 0)
      return invalidArgument(cat("rank ", comm.rank(), ": ", what, "[", r,
                                 "] is negative (", counts[r], ")"));
    // A wrapped sum could match the buffer's row count.
    if (!checkedAdd(total, counts[r], total))
      return invalidArgument(cat("rank ", comm.rank(), ": the sum of ", what,
                                 " overflows int64"));
  }
  return Status::success();
}

int64_t sum(const int64_t *v, int n) {
  return v ? std::accumulate(v, v + n, (int64_t)0) : 0;
}

const char *const kAllToAllFields[] = {"hidden", "the data type"};
} // namespace

Status startAllToAll(Comm &comm, const moecommRows_t *send,
                     const int64_t *sendCounts, const moecommRows_t *recv,
                     const int64_t *recvCounts, moecommStream_t stream,
                     std::unique_ptr<Operation> &op) {
  const int W = comm.size();
  Status local = checkCounts(comm, sendCounts, "send_counts");
  if (local.ok())
    local = checkCounts(comm, recvCounts, "recv_counts");
  const int64_t H = send ? send->hidden : 0;
  if (local.ok())
    local = onRank(comm.rank(), checkRows(send, "send", sum(sendCounts, W), H));
  if (local.ok())
    local = onRank(comm.rank(), checkRows(recv, "recv", sum(recvCounts, W), H));
  if (local.ok() && recv->type != send->type)
    local = onRank(comm.rank(),
                   invalidArgument(cat("recv has type ", (int)recv->type,
                                       ", send has type ", (int)send->type)));
  DeviceEngine *dev = comm.transport().deviceEngine();
  std::unique_ptr<DeviceOperation> devOp;
  if (local.ok() && dev)
    local = onRank(comm.rank(),
                   dev->prepareExchange(
                       comm, moecommDirectionAllToAll, moecommScopeGlobal,
                       *send, std::vector<int64_t>(sendCounts, sendCounts + W),
                       *recv, std::vector<int64_t>(recvCounts, recvCounts + W),
                       stream, devOp));
  Signature sig(OpKind::AllToAll);
  sig.setError(local);
  sig.add(H);
  sig.add(send ? (int64_t)send->type : -1);
  if (Status st = comm.agree(sig, kAllToAllFields); !st.ok())
    return st;
  // Every rank checks every (receiver, sender) pair: recvCounts must be the
  // transpose of the send counts. Nothing has moved yet.
  std::vector<int64_t> mine(2 * W), all((size_t)2 * W * W);
  std::copy(sendCounts, sendCounts + W, mine.begin());
  std::copy(recvCounts, recvCounts + W, mine.begin() + W);
  if (Status st = comm.allGather(mine.data(), 2 * W * 8, all.data()); !st.ok())
    return st;
  for (int r = 0; r < W; ++r)
    for (int s = 0; s < W; ++s) {
      int64_t expects = all[(size_t)r * 2 * W + W + s];
      int64_t sends = all[(size_t)s * 2 * W + r];
      if (expects != sends)
        return mismatch(cat("rank ", r, " expects ", expects,
                            " rows from rank ", s, " but rank ", s, " sends ",
                            sends));
    }
  if (dev)
    return postDevice(std::move(devOp), op);
  auto o = std::make_unique<ExchangeOp>(comm);
  std::vector<int64_t> sc(sendCounts, sendCounts + W),
      rc(recvCounts, recvCounts + W);
  o->err_ = postRows(comm, moecommDirectionAllToAll, moecommScopeGlobal,
                     comm.reserveSeqs(1), *send, sc, *recv, rc, o->pending_);
  op = std::move(o);
  return Status::success();
}

Status allToAllCounts(Comm &comm, const int64_t *sendCounts,
                      int64_t *recvCounts) {
  const int W = comm.size(), me = comm.rank();
  Status local = checkCounts(comm, sendCounts, "send_counts");
  if (local.ok() && !recvCounts)
    local = invalidArgument(cat("rank ", me, ": recv_counts is NULL"));
  Signature sig(OpKind::AllToAllCounts);
  sig.setError(local);
  if (Status st = comm.agree(sig, nullptr); !st.ok())
    return st;
  std::vector<int64_t> all((size_t)W * W);
  if (Status st = comm.allGather(sendCounts, W * 8, all.data()); !st.ok())
    return st;
  for (int s = 0; s < W; ++s)
    recvCounts[s] = all[(size_t)s * W + me];
  return Status::success();
}

//===--- Staged primitives ------------------------------------------------===//

namespace {
const DirectionPlan &directionPlan(const moecommLayout &l,
                                   moecommDirection_t d) {
  return d == moecommDirectionDispatch ? l.plan.dispatch : l.plan.combine;
}

Status checkDirection(const Comm &comm, moecommDirection_t d) {
  if (d != moecommDirectionDispatch && d != moecommDirectionCombine)
    return invalidArgument(cat("rank ", comm.rank(), ": direction ", (int)d,
                               " is neither dispatch nor combine"));
  return Status::success();
}

Status checkStage(const Comm &comm, const moecommLayout &l,
                  moecommDirection_t d, int stage) {
  int S = (int)directionPlan(l, d).stages.size();
  if (stage < 0 || stage >= S)
    return invalidArgument(cat("rank ", comm.rank(), ": stage ", stage,
                               " is out of range [0, ", S, ")"));
  return Status::success();
}

// Rows of the input of stage `s` (s == S: of the unpack).
int64_t stageInputRows(const moecommLayout &l, moecommDirection_t d, int s) {
  const DirectionPlan &dp = directionPlan(l, d);
  if (s > 0)
    return dp.stages[s - 1].recvRows();
  return d == moecommDirectionDispatch ? l.plan.numTokens : l.plan.recvRows();
}

const char *const kExchangeFields[] = {"the layout", "the direction",
                                       "the stage", "hidden", "the data type"};
} // namespace

Status packRows(Comm &comm, const moecommLayout *layout,
                moecommDirection_t direction, int stage,
                const moecommRows_t *in, int weighted,
                const moecommRows_t *out, moecommStream_t stream) {
  Status st = checkLayout(comm, layout);
  if (st.ok())
    st = checkDirection(comm, direction);
  if (st.ok())
    st = checkStage(comm, *layout, direction, stage);
  if (!st.ok())
    return st;
  const int64_t H = in ? in->hidden : 0;
  const StagePlan &sp = directionPlan(*layout, direction).stages[stage];
  if (Status s =
          checkRows(in, "in", stageInputRows(*layout, direction, stage), H);
      !s.ok())
    return onRank(comm.rank(), s);
  if (Status s = checkRows(out, "out", sp.sendRows(), H); !s.ok())
    return onRank(comm.rank(), s);
  moecommRows_t o = *out;
  if (direction == moecommDirectionDispatch) {
    if (!(out->type == in->type ||
          (isFloatData(in->type) && out->type == moecommFloat8E4M3)))
      return onRank(
          comm.rank(),
          invalidArgument(cat("dispatch pack cannot convert "
                              "type ",
                              (int)in->type, " to type ", (int)out->type)));
  } else if (!isFloatData(in->type) || !isFloatData(out->type)) {
    return onRank(comm.rank(),
                  invalidArgument("combine pack needs f32 or bf16 rows"));
  }
  if (DeviceEngine *dev = comm.transport().deviceEngine())
    return onRank(comm.rank(), dev->pack(*layout, direction, stage, *in,
                                         weighted != 0, *out, stream));
  if (direction == moecommDirectionDispatch)
    return onRank(comm.rank(), gatherRows(sp.pack, *in, o));
  return onRank(comm.rank(), applyCombineMap(sp.pack, *in, weighted != 0, o));
}

Status unpackRows(Comm &comm, const moecommLayout *layout,
                  moecommDirection_t direction, const moecommRows_t *in,
                  int weighted, const moecommRows_t *out,
                  moecommStream_t stream) {
  Status st = checkLayout(comm, layout);
  if (st.ok())
    st = checkDirection(comm, direction);
  if (!st.ok())
    return st;
  const DirectionPlan &dp = directionPlan(*layout, direction);
  const int64_t H = in ? in->hidden : 0;
  if (Status s = checkRows(
          in, "in", stageInputRows(*layout, direction, (int)dp.stages.size()),
          H);
      !s.ok())
    return onRank(comm.rank(), s);
  const int64_t outRows = direction == moecommDirectionDispatch
                              ? layout->plan.recvRows()
                              : layout->plan.numTokens;
  if (Status s = checkRows(out, "out", outRows, H); !s.ok())
    return onRank(comm.rank(), s);
  if (DeviceEngine *dev = comm.transport().deviceEngine())
    return onRank(comm.rank(), dev->unpack(*layout, direction, *in,
                                           weighted != 0, *out, stream));
  moecommRows_t o = *out;
  if (direction == moecommDirectionDispatch)
    return onRank(comm.rank(), gatherRows(dp.unpack, *in, o));
  return onRank(comm.rank(), reduceRows(dp.unpack, *in, weighted != 0, o));
}

Status startExchange(Comm &comm, const moecommLayout *layout,
                     moecommDirection_t direction, int stage,
                     const moecommRows_t *send, const moecommRows_t *recv,
                     moecommStream_t stream, std::unique_ptr<Operation> &op) {
  Status local = checkLayout(comm, layout);
  if (local.ok())
    local = checkDirection(comm, direction);
  if (local.ok())
    local = checkStage(comm, *layout, direction, stage);
  const int64_t H = send ? send->hidden : 0;
  const StagePlan *sp =
      local.ok() ? &directionPlan(*layout, direction).stages[stage] : nullptr;
  if (local.ok())
    local = onRank(comm.rank(), checkRows(send, "send", sp->sendRows(), H));
  if (local.ok())
    local = onRank(comm.rank(), checkRows(recv, "recv", sp->recvRows(), H));
  if (local.ok() && send->type != recv->type)
    local = onRank(comm.rank(),
                   invalidArgument(cat("recv has type ", (int)recv->type,
                                       ", send has type ", (int)send->type)));
  DeviceEngine *dev = comm.transport().deviceEngine();
  std::unique_ptr<DeviceOperation> devOp;
  if (local.ok() && dev)
    local = onRank(comm.rank(),
                   dev->prepareExchange(comm, direction, sp->scope, *send,
                                        sp->sendCounts, *recv, sp->recvCounts,
                                        stream, devOp));
  Signature sig(OpKind::Exchange);
  sig.setError(local);
  sig.add(layout ? layout->id : 0);
  sig.add((int64_t)direction);
  sig.add(stage);
  sig.add(H);
  sig.add(send ? (int64_t)send->type : -1);
  if (Status st = comm.agree(sig, kExchangeFields); !st.ok())
    return st;
  if (dev)
    return postDevice(std::move(devOp), op);
  auto o = std::make_unique<ExchangeOp>(comm);
  o->err_ = postRows(comm, direction, sp->scope, comm.reserveSeqs(1), *send,
                     sp->sendCounts, *recv, sp->recvCounts, o->pending_);
  op = std::move(o);
  return Status::success();
}

//===--- FP8 and requests -------------------------------------------------===//

Status quantizeRows(const moecommRows_t *in, const moecommRows_t *out) {
  if (!in || !out)
    return invalidArgument("in and out must not be NULL");
  if (Status st = checkRows(in, "in", in->rows, in->hidden); !st.ok())
    return st;
  if (Status st = checkRows(out, "out", in->rows, in->hidden); !st.ok())
    return st;
  if (!isFloatData(in->type) || out->type != moecommFloat8E4M3)
    return invalidArgument("quantize needs f32 or bf16 in and FP8 out");
  const int64_t H = in->hidden, nb = fp8Blocks(H);
  for (int64_t r = 0; r < in->rows; ++r) {
    uint8_t *q = static_cast<uint8_t *>(out->data) + r * H;
    if (in->type == moecommFloat32)
      fp8QuantizeRow(static_cast<const float *>(in->data) + r * H, H, q,
                     out->scales + r * nb);
    else
      fp8QuantizeRowBf16(static_cast<const uint16_t *>(in->data) + r * H, H, q,
                         out->scales + r * nb);
  }
  return Status::success();
}

Status dequantizeRows(const moecommRows_t *in, const moecommRows_t *out) {
  if (!in || !out)
    return invalidArgument("in and out must not be NULL");
  if (Status st = checkRows(in, "in", in->rows, in->hidden); !st.ok())
    return st;
  if (Status st = checkRows(out, "out", in->rows, in->hidden); !st.ok())
    return st;
  if (in->type != moecommFloat8E4M3 || !isFloatData(out->type))
    return invalidArgument("dequantize needs FP8 in and f32 or bf16 out");
  const int64_t H = in->hidden, nb = fp8Blocks(H);
  for (int64_t r = 0; r < in->rows; ++r) {
    const uint8_t *q = static_cast<const uint8_t *>(in->data) + r * H;
    if (out->type == moecommFloat32)
      fp8DequantizeRow(q, in->scales + r * nb, H,
                       static_cast<float *>(out->data) + r * H);
    else
      fp8DequantizeRowBf16(q, in->scales + r * nb, H,
                           static_cast<uint16_t *>(out->data) + r * H);
  }
  return Status::success();
}

Status waitRequest(moecommRequest *request) {
  Comm &comm = *request->comm;
  // Requests complete in start order on every rank, whatever order the
  // caller waits in: each rank then posts the later stages of its requests
  // in the same order, so no rank waits on a stage another has not posted.
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
