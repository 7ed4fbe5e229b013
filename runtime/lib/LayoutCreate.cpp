//===- LayoutCreate.cpp - The collective creation of a layout -------------===//
//
// Every rank validates its routing, all agree (Comm::agree), then the plan
// is built from the routing records each rank exchanges along the stages;
// a second agreement tells every rank that every plan was built.
//
// With an expert placement (moecomm/Model/Placement.h) the routing is
// validated against the logical experts, the ranks agree on the placement,
// and the replica choice rewrites this rank's logical ids into physical slot
// ids before anything is counted: from there on the layout is built exactly
// as without a placement, over a topology of S slots.
//
//===----------------------------------------------------------------------===//
#include "LayoutHandle.h"

#include "Comm.h"
#include "Routing.h"
#include "moecomm/Model/CostModel.h"
#include "moecomm/Model/Limits.h"
#include "moecomm/Model/Placement.h"
#include "moecomm/Model/Sizes.h"
#include "moecomm/Model/Traffic.h"

#include <cstring>
#include <new>

namespace moecomm {

namespace {

bool isWireType(moecommDataType_t t) {
  return t == moecommFloat32 || t == moecommBfloat16 || isFp8(t);
}

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
    mergeStatus(st, comm.transport().waitExchange(std::move(pending), false));
  received.assign(n, {});
  int64_t off = 0;
  for (size_t m = 0; m < n; ++m) {
    received[m].assign(recv.begin() + off, recv.begin() + off + expect[m]);
    off += expect[m];
  }
  return st;
}

const char *const kLayoutFields[] = {
    "topk",
    "num_experts",
    "strategy",
    "capacity",
    "hidden (auto)",
    "wire type (auto)",
    "the link model",
    "the link model",
    "the link model",
    "the link model",
    "align",
    "the placement's num_slots",
    "the placement's replica choice",
    "the placement's slot_experts (FNV-1a hash)"};

static_assert(MOECOMM_MAX_ALIGN == kMaxAlign, "one bound for C and C++");

/// The desc's align in effect: 0 (a zero-initialised desc) is 1.
int64_t alignOf(const moecommLayoutDesc_t &desc) {
  return desc.align == 0 ? 1 : desc.align;
}

/// A fingerprint of a placement's slot_experts for the agreement (FNV-1a
/// over the ids' little-endian bytes; Fowler, Noll, Vo): ranks whose
/// placements differ learn it at layout creation, not from wrong rows.
int64_t placementHash(const std::vector<int64_t> &slotExperts) {
  uint64_t h = 14695981039346656037ull;
  for (int64_t e : slotExperts)
    for (int b = 0; b < 8; ++b) {
      h ^= ((uint64_t)e >> (8 * b)) & 0xff;
      h *= 1099511628211ull;
    }
  return (int64_t)h;
}

bool isReplicaChoice(moecommReplicaChoice_t c) {
  return c == moecommReplicaLocality || c == moecommReplicaLoadOnly;
}

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
  ExpertPlacement placement; // numLogical 0 = none
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
    else if (!isValidAlign(alignOf(*desc)))
      local = invalidArgument(cat("rank ", me, ": align ", desc->align,
                                  " is not a power of two in [1, ", kMaxAlign,
                                  "]"));
    else if (desc->numSlots < 0)
      local = invalidArgument(
          cat("rank ", me, ": num_slots must be >= 0, got ", desc->numSlots));
    else if (desc->numSlots > kMaxExperts) // slot ids are expert ids
      local = invalidArgument(cat("rank ", me, ": num_slots ", desc->numSlots,
                                  " does not fit in 31 bits"));
    else if (desc->numSlots > 0 && !desc->slotExperts)
      local = invalidArgument(cat("rank ", me, ": slot_experts is NULL"));
    else if (desc->numSlots > 0 && !isReplicaChoice(desc->replicaChoice))
      local = invalidArgument(cat("rank ", me, ": unknown replica choice ",
                                  (int)desc->replicaChoice));
    else if (copied.ok()) { // never read device memory on the host
      local = validateRouting(topo, me, view, desc->capacity,
                              /*placed=*/desc->numSlots > 0);
      if (local.ok() && desc->numSlots > 0) {
        placement.numLogical = desc->numExperts;
        placement.slotExperts.assign(desc->slotExperts,
                                     desc->slotExperts + desc->numSlots);
        if (std::string msg = checkPlacement(placement, W); !msg.empty()) {
          local = invalidArgument(cat("rank ", me, ": ", msg));
          placement = ExpertPlacement();
        }
      }
    }
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
  sig.add(desc ? alignOf(*desc) : 0);
  const bool placed = placement.numLogical > 0;
  sig.add(placed ? placement.numSlots() : 0);
  sig.add(placed ? desc->replicaChoice : 0);
  sig.add(placed ? placementHash(placement.slotExperts) : 0);
  if (Status st = comm.agree(sig, kLayoutFields); !st.ok())
    return st;

  // The replica choice: this rank's logical ids -> slot ids [T][K]; the
  // rest sees the physical view (topology of S slots).
  std::vector<int64_t> physicalIds;
  if (placed) {
    const ReplicaTable table(placement, W, topo.ranksPerNode);
    physicalIds.resize((size_t)(view.numTokens * view.topk));
    chooseReplicas(table, desc->replicaChoice, me, view, physicalIds.data());
    view.topkIdx = physicalIds.data();
    view.idxType = moecommInt64;
    topo = table.slotTopology();
  }

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
        isFp8(desc->wireType) ? moecommBfloat16 : desc->wireType;
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
      mergeStatus(built, exchangeRecords(
                             comm, plan.dispatch.stages[0], src.records,
                             expectedRecordCounts(topo, strategy, 0, me, kept),
                             received));
      if (S == 2) {
        auto forward = buildRelaySide(topo, me, received, plan);
        mergeStatus(
            built,
            exchangeRecords(comm, plan.dispatch.stages[1], forward,
                            expectedRecordCounts(topo, strategy, 1, me, kept),
                            received));
      }
      buildDestSide(topo, strategy, me, received, plan);
    }
    padExpertSegments(alignOf(*desc), plan);
    if (dev && built.ok())
      mergeStatus(built,
                  onRank(comm.rank(), dev->uploadLayout(plan, layout->device)));
  } catch (const std::bad_alloc &) {
    mergeStatus(built, systemError(cat("rank ", me, ": out of memory")));
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

} // namespace moecomm
