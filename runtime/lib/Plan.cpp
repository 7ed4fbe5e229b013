//===- Plan.cpp - Per-rank stage plans of dispatch and combine ------------===//
//
// Row orders (docs/runtime.md):
//   per_expert   stage 0: one row per kept pair, order (dest, token, expert).
//   flat-like    stage 0: one row per (member, token), member = destination
//                rank (flat, 1-stage hierarchical) or node (2-stage
//                hierarchical); the row's records are in slot order.
//   hierarchical stage 1: the relay sends one row per (dest, source, token).
//   dispatch unpack: expert-major (local expert, source rank, source token),
//                each expert's segment padded to the layout's align.
// Combine mirrors every stage; its pack maps reduce the rows that the
// dispatch fanned out, and the home rank's unpack reduces into out[T].
//
//===----------------------------------------------------------------------===//
#include "moecomm/Runtime/Plan.h"

#include "Routing.h"
#include "moecomm/Model/Limits.h"

#include <algorithm>
#include <numeric>
#include <tuple>

namespace moecomm {

int64_t StagePlan::sendRows() const {
  return std::accumulate(sendCounts.begin(), sendCounts.end(), (int64_t)0);
}
int64_t StagePlan::recvRows() const {
  return std::accumulate(recvCounts.begin(), recvCounts.end(), (int64_t)0);
}

std::vector<int> scopeGroup(const Topology &topo, moecommScope_t scope,
                            int rank) {
  std::vector<int> g;
  const int G = topo.ranksPerNode;
  switch (scope) {
  case moecommScopeGlobal:
    for (int r = 0; r < topo.ranks; ++r)
      g.push_back(r);
    break;
  case moecommScopeIntraNode:
    for (int i = 0; i < G; ++i)
      g.push_back(topo.node(rank) * G + i);
    break;
  case moecommScopeInterNode:
    for (int n = 0; n < topo.nodes(); ++n)
      g.push_back(n * G + topo.localRank(rank));
    break;
  case moecommScopeMinEnum: // not a scope: no group
  case moecommScopeMaxEnum:
    break;
  }
  return g;
}

namespace {

// Index of rank r in any group of `scope` that contains it.
int memberIndex(const Topology &topo, moecommScope_t scope, int r) {
  switch (scope) {
  case moecommScopeIntraNode:
    return topo.localRank(r);
  case moecommScopeInterNode:
    return topo.node(r);
  default:
    return r;
  }
}

struct Pair {
  int64_t member; // stage-0 member the pair's row goes to
  int64_t token;
  int64_t expert;
  int slot;
  float weight;
};

// A received row: the records [begin, end) of one member's record list.
struct RecvRow {
  int member;
  int64_t begin, end;
};

// Splits each member's records into rows: one record per row (per_expert) or
// consecutive records of the same (source, token).
std::vector<RecvRow>
splitRows(const std::vector<std::vector<PairRecord>> &received,
          bool onePerRecord, std::vector<int64_t> &counts) {
  std::vector<RecvRow> rows;
  counts.assign(received.size(), 0);
  for (size_t m = 0; m < received.size(); ++m) {
    const std::vector<PairRecord> &recs = received[m];
    for (size_t i = 0; i < recs.size();) {
      size_t j = i + 1;
      if (!onePerRecord)
        while (j < recs.size() && recs[j].token == recs[i].token &&
               recs[j].srcRank == recs[i].srcRank)
          ++j;
      rows.push_back({(int)m, (int64_t)i, (int64_t)j});
      counts[m]++;
      i = j;
    }
  }
  return rows;
}

void initStages(const Topology &topo, moecommStrategy_t strategy, int rank,
                RankPlan &plan) {
  std::vector<moecommScope_t> scopes = stageScopes(
      topo.ranks, topo.ranksPerNode, strategy, moecommDirectionDispatch);
  plan.dispatch.stages.assign(scopes.size(), StagePlan());
  plan.combine.stages.assign(scopes.size(), StagePlan());
  for (size_t i = 0; i < scopes.size(); ++i) {
    StagePlan &d = plan.dispatch.stages[i];
    d.scope = scopes[i];
    d.group = scopeGroup(topo, scopes[i], rank);
    d.sendCounts.assign(d.group.size(), 0);
    d.recvCounts.assign(d.group.size(), 0);
    StagePlan &c = plan.combine.stages[scopes.size() - 1 - i];
    c.scope = d.scope;
    c.group = d.group;
  }
}

// Combine stage i mirrors dispatch stage S-1-i.
void mirrorCounts(RankPlan &plan) {
  size_t S = plan.dispatch.stages.size();
  for (size_t i = 0; i < S; ++i) {
    const StagePlan &d = plan.dispatch.stages[i];
    StagePlan &c = plan.combine.stages[S - 1 - i];
    c.sendCounts = d.recvCounts;
    c.recvCounts = d.sendCounts;
  }
}

// The whole plan of a single rank (W == 1): dispatch = unpack(x), combine =
// unpack(y).
void buildLocalPlan(const Topology &topo, const RoutingView &routing,
                    const std::vector<uint8_t> &keptMask, RankPlan &plan) {
  const int K = routing.topk;
  const int64_t L = topo.localExperts();
  struct Entry {
    int64_t expert, token;
    int slot;
    float weight;
  };
  std::vector<Entry> entries;
  for (int64_t t = 0; t < routing.numTokens; ++t)
    for (int k = 0; k < K; ++k)
      if (keptMask[t * K + k])
        entries.push_back({routing.expert(t, k), t, k, routing.weight(t, k)});
  std::sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) {
    return std::tie(a.expert, a.token) < std::tie(b.expert, b.token);
  });
  plan.tokensPerExpert.assign(L, 0);
  std::vector<int64_t> pos(routing.numTokens * K, -1);
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry &e = entries[i];
    plan.dispatch.unpack.addTerm(e.token);
    plan.dispatch.unpack.endRow();
    plan.tokensPerExpert[e.expert]++;
    plan.recvWeights.push_back(e.weight);
    plan.recvSources.push_back(0);
    plan.recvSources.push_back(e.token);
    pos[e.token * K + e.slot] = (int64_t)i;
  }
  for (int64_t t = 0; t < routing.numTokens; ++t) {
    for (int k = 0; k < K; ++k)
      if (pos[t * K + k] >= 0)
        plan.combine.unpack.addTerm(pos[t * K + k], routing.weight(t, k));
    plan.combine.unpack.endRow();
  }
}

} // namespace

SourceSide buildSourceSide(const Topology &topo, moecommStrategy_t strategy,
                           int rank, const RoutingView &routing,
                           const std::vector<uint8_t> &keptMask,
                           RankPlan &plan) {
  SourceSide side;
  plan.rank = rank;
  plan.strategy = strategy;
  plan.numTokens = routing.numTokens;
  initStages(topo, strategy, rank, plan);
  const size_t S = plan.dispatch.stages.size();
  if (S == 0) {
    buildLocalPlan(topo, routing, keptMask, plan);
    return side;
  }
  const int K = routing.topk;
  const bool perPair = strategy == moecommPerExpert;
  // Stage-0 member of an expert: its node with two stages, else its rank
  // (which is also its member index in the 1-stage hierarchical groups).
  auto memberOf = [&](int64_t e) -> int64_t {
    return S == 2 ? topo.nodeOfExpert(e) : topo.rankOfExpert(e);
  };
  std::vector<Pair> pairs;
  for (int64_t t = 0; t < routing.numTokens; ++t)
    for (int k = 0; k < K; ++k)
      if (keptMask[t * K + k]) {
        int64_t e = routing.expert(t, k);
        pairs.push_back({memberOf(e), t, e, k, routing.weight(t, k)});
      }
  // Rows in (member, token, expert) order for per_expert; (member, token)
  // with the row's records in slot order otherwise.
  std::sort(pairs.begin(), pairs.end(),
            [perPair](const Pair &a, const Pair &b) {
              if (a.member != b.member)
                return a.member < b.member;
              if (a.token != b.token)
                return a.token < b.token;
              return perPair ? a.expert < b.expert : a.slot < b.slot;
            });
  StagePlan &st = plan.dispatch.stages[0];
  side.records.assign(st.group.size(), {});
  // Combine unpack terms per token: per_expert by slot, else by member.
  std::vector<int64_t> rowOfSlot(perPair ? routing.numTokens * K : 0, -1);
  std::vector<std::vector<int64_t>> rowsOfToken(perPair ? 0
                                                        : routing.numTokens);
  int64_t row = -1;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const Pair &p = pairs[i];
    bool newRow = perPair || i == 0 || p.member != pairs[i - 1].member ||
                  p.token != pairs[i - 1].token;
    if (newRow) {
      ++row;
      st.pack.addTerm(p.token);
      st.pack.endRow();
      st.sendCounts[p.member]++;
      if (!perPair)
        rowsOfToken[p.token].push_back(row);
    }
    if (perPair)
      rowOfSlot[p.token * K + p.slot] = row;
    side.records[p.member].push_back(
        {p.token, (int32_t)rank, (int32_t)p.expert, p.weight, p.slot});
  }
  RowMap &un = plan.combine.unpack;
  for (int64_t t = 0; t < routing.numTokens; ++t) {
    if (perPair) {
      for (int k = 0; k < K; ++k)
        if (rowOfSlot[t * K + k] >= 0)
          un.addTerm(rowOfSlot[t * K + k], routing.weight(t, k));
    } else {
      for (int64_t r : rowsOfToken[t])
        un.addTerm(r);
    }
    un.endRow();
  }
  return side;
}

std::vector<std::vector<PairRecord>>
buildRelaySide(const Topology &topo, int rank,
               const std::vector<std::vector<PairRecord>> &received,
               RankPlan &plan) {
  StagePlan &st0 = plan.dispatch.stages[0];
  StagePlan &st1 = plan.dispatch.stages[1];
  std::vector<RecvRow> rows = splitRows(received, false, st0.recvCounts);
  const int G = topo.ranksPerNode;
  const int node = topo.node(rank);
  const int nodeBase = node * G;
  // The stage-0 rows by source node, starting after this relay's own node:
  // a pipelined exchange (PipelinedOp.cpp) sends each block in row order, so
  // the combine partials bound for other nodes reach this relay first and
  // its inter-node stage starts early; in dispatch the own node's rows, last
  // here, are ready first anyway.
  // (rows are in member order, and member n is node n)
  std::vector<int64_t> order;
  for (bool later : {true, false})
    for (size_t j = 0; j < rows.size(); ++j)
      if ((rows[j].member > node) == later)
        order.push_back((int64_t)j);
  // rowsOfDest[g]: stage-0 rows with a kept expert on member g, in order.
  std::vector<std::vector<int64_t>> rowsOfDest(G);
  std::vector<int64_t> lastRow(G, -1);
  for (int64_t j : order) {
    const std::vector<PairRecord> &recs = received[rows[j].member];
    for (int64_t i = rows[j].begin; i < rows[j].end; ++i) {
      int g = topo.rankOfExpert(recs[i].expert) - nodeBase;
      if (lastRow[g] != j) {
        lastRow[g] = j;
        rowsOfDest[g].push_back(j);
      }
    }
  }
  std::vector<std::vector<PairRecord>> out(G);
  std::vector<std::vector<int64_t>> termsOfRow(rows.size());
  int64_t sendRow = 0;
  for (int g = 0; g < G; ++g) {
    for (int64_t j : rowsOfDest[g]) {
      st1.pack.addTerm(j);
      st1.pack.endRow();
      st1.sendCounts[g]++;
      termsOfRow[j].push_back(sendRow++);
      const std::vector<PairRecord> &recs = received[rows[j].member];
      for (int64_t i = rows[j].begin; i < rows[j].end; ++i)
        if (topo.rankOfExpert(recs[i].expert) == nodeBase + g)
          out[g].push_back(recs[i]);
    }
  }
  // Combine stage 1 (inter-node) pack: each stage-0 row is the sum of the
  // partial rows its destinations return, in ascending destination order.
  RowMap &pack = plan.combine.stages[1].pack;
  for (size_t j = 0; j < rows.size(); ++j) {
    for (int64_t r : termsOfRow[j])
      pack.addTerm(r);
    pack.endRow();
  }
  return out;
}

void buildDestSide(const Topology &topo, moecommStrategy_t strategy, int rank,
                   const std::vector<std::vector<PairRecord>> &received,
                   RankPlan &plan) {
  StagePlan &last = plan.dispatch.stages.back();
  const bool perPair = strategy == moecommPerExpert;
  std::vector<RecvRow> rows = splitRows(received, perPair, last.recvCounts);
  const int64_t L = topo.localExperts();
  const int64_t firstExpert = (int64_t)rank * L;
  struct Entry {
    int64_t localExpert, srcRank, token;
    const PairRecord *rec;
    int64_t row;
  };
  std::vector<Entry> entries;
  for (size_t j = 0; j < rows.size(); ++j) {
    const std::vector<PairRecord> &recs = received[rows[j].member];
    for (int64_t i = rows[j].begin; i < rows[j].end; ++i)
      entries.push_back({recs[i].expert - firstExpert, recs[i].srcRank,
                         recs[i].token, &recs[i], (int64_t)j});
  }
  std::vector<int64_t> order(entries.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const Entry &x = entries[a], &y = entries[b];
    return std::tie(x.localExpert, x.srcRank, x.token) <
           std::tie(y.localExpert, y.srcRank, y.token);
  });
  plan.tokensPerExpert.assign(L, 0);
  plan.recvWeights.clear();
  plan.recvSources.clear();
  std::vector<int64_t> pos(entries.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const Entry &e = entries[order[i]];
    pos[order[i]] = (int64_t)i;
    plan.dispatch.unpack.addTerm(e.row);
    plan.dispatch.unpack.endRow();
    plan.tokensPerExpert[e.localExpert]++;
    plan.recvWeights.push_back(e.rec->weight);
    plan.recvSources.push_back(e.srcRank);
    plan.recvSources.push_back(e.token);
  }
  // Combine stage 0 pack: per received row, its experts' y rows (per_expert:
  // the one row, unweighted; otherwise the weighted sum in slot order).
  RowMap &pack = plan.combine.stages[0].pack;
  size_t ei = 0;
  for (size_t j = 0; j < rows.size(); ++j) {
    for (; ei < entries.size() && entries[ei].row == (int64_t)j; ++ei) {
      if (perPair)
        pack.addTerm(pos[ei]);
      else
        pack.addTerm(pos[ei], entries[ei].rec->weight);
    }
    pack.endRow();
  }
  mirrorCounts(plan);
}

void padExpertSegments(int64_t align, RankPlan &plan) {
  const size_t L = plan.tokensPerExpert.size();
  plan.expertOffsets.assign(1, 0);
  // Unpadded (every layout without align): the segments are already in
  // place, so only their offsets are new; no map is rebuilt.
  if (align == 1) {
    for (int64_t n : plan.tokensPerExpert)
      plan.expertOffsets.push_back(plan.expertOffsets.back() + n);
    return;
  }
  const RowMap real = std::move(plan.dispatch.unpack);
  const std::vector<float> weights = std::move(plan.recvWeights);
  const std::vector<int64_t> sources = std::move(plan.recvSources);
  plan.dispatch.unpack = RowMap();
  plan.recvWeights.clear();
  plan.recvSources.clear();
  // paddedRow[i]: where real row i lands; real rows keep their order.
  std::vector<int64_t> paddedRow;
  paddedRow.reserve(weights.size());
  int64_t i = 0;
  for (size_t e = 0; e < L; ++e) {
    const int64_t n = plan.tokensPerExpert[e];
    for (int64_t end = i + n; i < end; ++i) {
      paddedRow.push_back(plan.recvRows());
      for (int64_t j = real.offsets[i]; j < real.offsets[i + 1]; ++j)
        plan.dispatch.unpack.addTerm(real.src[j]);
      plan.dispatch.unpack.endRow();
      plan.recvWeights.push_back(weights[i]);
      plan.recvSources.push_back(sources[2 * i]);
      plan.recvSources.push_back(sources[2 * i + 1]);
    }
    // align is a power of two: round n up to its next multiple.
    for (int64_t pad = ((n + align - 1) & ~(align - 1)) - n; pad > 0; --pad) {
      plan.dispatch.unpack.endRow(); // empty: a zero row
      plan.recvWeights.push_back(0.0f);
      plan.recvSources.push_back(-1);
      plan.recvSources.push_back(-1);
    }
    plan.expertOffsets.push_back(plan.recvRows());
  }
  RowMap &readsRecv = plan.combine.stages.empty() ? plan.combine.unpack
                                                  : plan.combine.stages[0].pack;
  for (int64_t &src : readsRecv.src)
    src = paddedRow[src];
}

std::vector<int64_t> expectedRecordCounts(const Topology &topo,
                                          moecommStrategy_t strategy, int stage,
                                          int rank,
                                          const std::vector<int64_t> &kept) {
  const int W = topo.ranks, G = topo.ranksPerNode;
  std::vector<moecommScope_t> scopes =
      stageScopes(W, G, strategy, moecommDirectionDispatch);
  std::vector<int> group = scopeGroup(topo, scopes[stage], rank);
  std::vector<int64_t> counts(group.size(), 0);
  if (scopes.size() == 1) {
    for (size_t m = 0; m < group.size(); ++m)
      counts[m] = kept[(size_t)group[m] * W + rank];
  } else if (stage == 0) {
    // From source group[m]: its pairs to any rank of this node.
    for (size_t m = 0; m < group.size(); ++m)
      for (int g = 0; g < G; ++g)
        counts[m] += kept[(size_t)group[m] * W + topo.node(rank) * G + g];
  } else {
    // From relay with local rank m: the pairs to this rank of every source
    // on that rail.
    for (int s = 0; s < W; ++s)
      counts[topo.localRank(s)] += kept[(size_t)s * W + rank];
  }
  return counts;
}

std::string buildPlans(const Topology &topo, moecommStrategy_t strategy,
                       int64_t capacity,
                       const std::vector<RoutingView> &routing,
                       std::vector<RankPlan> &plans, int64_t align) {
  const int W = topo.ranks;
  plans.clear();
  if ((int)routing.size() != W)
    return cat("routing has ", routing.size(), " ranks, expected ", W);
  if (strategy != moecommPerExpert && strategy != moecommFlat &&
      strategy != moecommHierarchical)
    return cat("buildPlans needs a concrete strategy, got ", (int)strategy);
  if (!isValidAlign(align))
    return cat("align ", align, " is not a power of two in [1, ", kMaxAlign,
               "]");
  for (int r = 0; r < W; ++r) {
    Status st = validateRouting(topo, r, routing[r], capacity,
                                /*placed=*/false);
    if (!st.ok())
      return st.message;
  }
  std::vector<int64_t> pairs((size_t)W * W);
  for (int r = 0; r < W; ++r) {
    std::vector<int64_t> row = pairCountsOfRank(topo, routing[r]);
    std::copy(row.begin(), row.end(), pairs.begin() + (size_t)r * W);
  }
  std::vector<int64_t> kept = keptPairCounts(pairs, W, capacity);
  plans.assign(W, RankPlan());
  // inbox[r][m]: records rank r receives from its member m in this stage.
  std::vector<std::vector<std::vector<PairRecord>>> inbox(W);
  auto deliver = [&](int from, const std::vector<int> &group,
                     moecommScope_t scope,
                     std::vector<std::vector<PairRecord>> &&out) {
    for (size_t m = 0; m < group.size(); ++m) {
      auto &box = inbox[group[m]];
      box.resize(group.size());
      box[memberIndex(topo, scope, from)] = std::move(out[m]);
    }
  };
  for (int r = 0; r < W; ++r) {
    std::vector<uint8_t> mask =
        keptSlotMask(topo, routing[r], &kept[(size_t)r * W]);
    SourceSide side =
        buildSourceSide(topo, strategy, r, routing[r], mask, plans[r]);
    int64_t in = 0, keep = 0;
    for (int s = 0; s < W; ++s) {
      in += pairs[(size_t)s * W + r];
      keep += kept[(size_t)s * W + r];
    }
    plans[r].dropped = in - keep;
    if (!plans[r].dispatch.stages.empty())
      deliver(r, plans[r].dispatch.stages[0].group,
              plans[r].dispatch.stages[0].scope, std::move(side.records));
  }
  const size_t S = plans[0].dispatch.stages.size();
  if (S == 2) {
    std::vector<std::vector<std::vector<PairRecord>>> received(W);
    received.swap(inbox);
    inbox.assign(W, {});
    for (int r = 0; r < W; ++r) {
      received[r].resize(plans[r].dispatch.stages[0].group.size());
      auto out = buildRelaySide(topo, r, received[r], plans[r]);
      deliver(r, plans[r].dispatch.stages[1].group,
              plans[r].dispatch.stages[1].scope, std::move(out));
    }
  }
  if (S >= 1)
    for (int r = 0; r < W; ++r) {
      inbox[r].resize(plans[r].dispatch.stages.back().group.size());
      buildDestSide(topo, strategy, r, inbox[r], plans[r]);
    }
  for (RankPlan &plan : plans)
    padExpertSegments(align, plan);
  return "";
}

} // namespace moecomm
