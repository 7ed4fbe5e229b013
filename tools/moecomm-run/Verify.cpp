//===- Verify.cpp - check moecomm-run results against the reference -------===//

#include "Verify.h"

#include "moecomm/Workload/RoutingProblem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace llvm;
using namespace moecomm::workload;

namespace moecomm::run {

namespace {

/// |a - b|: 0 when equal (also equal infinities), infinite when either is
/// NaN: std::max ignores NaN, which would hide the worst error.
double absError(double a, double b) {
  if (a == b)
    return 0;
  const double e = std::fabs(a - b);
  return std::isnan(e) ? HUGE_VAL : e;
}

constexpr size_t kMaxFailures = 4;

/// Rows rank r receives when the layer runs as `chunks` token chunks with a
/// layout each (moecomm-schedule-overlap): chunk c of rank s's T tokens is
/// [c q + min(c, m), (c + 1) q + min(c + 1, m)) with q = T / chunks and
/// m = T % chunks, and every chunk's layout pads each local expert's segment
/// to a multiple of align rows. No capacity: the pass keeps a layer with one
/// whole.
int64_t chunkedRecvRows(const RoutingProblem &p, int r, int chunks) {
  const int64_t L = p.localExperts(), first = r * L, K = p.topk;
  int64_t rows = 0;
  std::vector<int64_t> perExpert(L);
  for (int64_t c = 0; c < chunks; ++c) {
    std::fill(perExpert.begin(), perExpert.end(), 0);
    for (int s = 0; s < p.ranks; ++s) {
      const int64_t q = p.numTokens[s] / chunks, m = p.numTokens[s] % chunks;
      const std::vector<int64_t> &ids = p.topkIdx[s];
      for (int64_t t = c * q + std::min(c, m),
                   end = (c + 1) * q + std::min(c + 1, m);
           t < end; ++t)
        for (int64_t k = 0; k < K; ++k)
          if (ids[t * K + k] >= first && ids[t * K + k] < first + L)
            ++perExpert[ids[t * K + k] - first];
    }
    for (int64_t n : perExpert)
      rows += static_cast<int64_t>(alignTo(n, p.align));
  }
  return rows;
}

} // namespace

void RankCheck::fail(std::string message) {
  ok = false;
  if (failures.size() < kMaxFailures)
    failures.push_back(std::move(message));
}

ref::Problem toReferenceProblem(const RoutingProblem &p) {
  ref::Problem q;
  q.ranks = p.ranks;
  q.ranksPerNode = p.ranksPerNode;
  q.numExperts = p.numExperts;
  q.topk = p.topk;
  q.hidden = p.hidden;
  q.dataType = hostType(p.dtype);
  q.wireType = wireType(p.dtype);
  q.capacity = p.capacity;
  q.align = p.align;
  q.slotExperts = p.slotExperts;
  q.replicaChoice = p.replicaChoice;
  q.routing.resize(p.ranks);
  for (int r = 0; r < p.ranks; ++r) {
    q.routing[r].numTokens = p.numTokens[r];
    q.routing[r].topkIdx = p.topkIdx[r];
    if (p.explicitWeights)
      q.routing[r].topkWeights = p.topkWeights[r];
  }
  return q;
}

ReferenceResult computeReference(const RoutingProblem &p,
                                 const ExpertSpec &experts, int onlyRank) {
  ReferenceResult r;
  r.experts = experts;
  r.problem = toReferenceProblem(p);
  r.layout = ref::layout(r.problem);
  r.kept = ref::keptSlots(r.problem, r.layout);
  r.x.resize(p.ranks);
  for (int rank = 0; rank < p.ranks; ++rank)
    r.x[rank] = ref::standardX(rank, p.numTokens[rank], p.hidden);
  r.dispatch = ref::dispatch(r.problem, r.layout, r.x);
  // Identity experts: y = the dispatched rows.
  r.combine = ref::combine(r.problem, r.layout, r.dispatch, /*weighted=*/true);
  r.combineAbsSum =
      ref::combineAbsSum(r.problem, r.layout, r.dispatch, /*weighted=*/true);
  r.dispatchRowBytes = ref::rowBytes(r.problem.wireType, p.hidden);
  r.combineRowBytes = ref::rowBytes(r.problem.dataType, p.hidden);
  r.dispatchLowerBound =
      ref::interNodeLowerBoundBytes(r.problem, r.layout, r.dispatchRowBytes);
  r.combineLowerBound =
      ref::interNodeLowerBoundBytes(r.problem, r.layout, r.combineRowBytes);
  if (!experts.ffn())
    return r;
  // The graph's experts on the rows dispatch delivers (checked bit for bit
  // when the graph returns them); grad_out = x, so its cached dispatch
  // delivers the same rows.
  const ref::ExpertRows y =
      ref::swigluForward(r.problem, r.layout, r.dispatch, experts.seed,
                         experts.intermediate, onlyRank);
  r.ffnCombine = ref::combine(r.problem, r.layout, y.rows, /*weighted=*/true);
  r.ffnCombineAbsSum =
      ref::combineAbsSum(r.problem, r.layout, y.rows, /*weighted=*/true);
  r.ffnCombineRowError =
      ref::combineAbsSum(r.problem, r.layout, y.error, /*weighted=*/true);
  if (!experts.training)
    return r;
  const ref::ExpertRows g =
      ref::swigluInputGrad(r.problem, r.layout, r.dispatch, r.dispatch,
                           experts.seed, experts.intermediate, onlyRank);
  r.ffnGradX = ref::combine(r.problem, r.layout, g.rows, /*weighted=*/false);
  r.ffnGradXAbsSum =
      ref::combineAbsSum(r.problem, r.layout, g.rows, /*weighted=*/false);
  r.ffnGradXRowError =
      ref::combineAbsSum(r.problem, r.layout, g.error, /*weighted=*/false);
  return r;
}

double ffnTolerance(const RoutingProblem &p, int roundings, double absSum,
                    double rowError) {
  return moecomm::ref::combineBound(hostType(p.dtype), 2 * p.topk,
                                    roundings + 2)
             .of(absSum) +
         1.01 * rowError;
}

int combineRoundings(moecommStrategy_t strategy, ArrayRef<StageInfo> stages) {
  const int dispatchStages =
      static_cast<int>(llvm::count_if(stages, [](const StageInfo &s) {
        return s.direction == moecommDirectionDispatch;
      }));
  return moecomm::ref::combineRoundings(strategy, dispatchStages);
}

namespace {

/// Checks rank r's [T][H] `values` against the reference weighted combine of
/// identity experts: bit for bit when `bitExact`, else within the bound.
void checkCombineLike(const RoutingProblem &p, const ReferenceResult &ref,
                      int r, StringRef what, const std::vector<float> &values,
                      int roundings, RankCheck &c) {
  const bool bitExact = roundings == 0;
  const int64_t T = p.numTokens[r], H = p.hidden;
  if (static_cast<int64_t>(values.size()) != T * H) {
    c.fail(formatv("rank {0}: {1} returned {2} values, expected {3}", r, what,
                   values.size(), T * H));
    return;
  }
  const moecomm::ref::CombineBound bound =
      moecomm::ref::combineBound(hostType(p.dtype), p.topk, roundings);
  const int K = p.topk;
  const std::vector<float> &x = ref.x[r];
  const std::vector<bool> &kept = ref.kept[r];
  bool reported = false;
  for (int64_t t = 0; t < T; ++t) {
    double weightSum = 0;
    for (int k = 0; k < K; ++k)
      if (kept[t * K + k])
        weightSum += p.topkWeights[r][t * K + k];
    for (int64_t h = 0; h < H; ++h) {
      const int64_t i = t * H + h;
      const double got = values[i];
      const double exact = static_cast<double>(x[i]) * weightSum;
      c.maxAbsErr = std::max(c.maxAbsErr, absError(got, exact));
      const double err = absError(got, ref.combine[r][i]);
      c.maxAbsErrVsReference = std::max(c.maxAbsErrVsReference, err);
      const double allowed = bound.of(ref.combineAbsSum[r][i]);
      const double ratio =
          err == 0 ? 0 : (allowed > 0 ? err / allowed : HUGE_VAL);
      c.worstBoundRatio = std::max(c.worstBoundRatio, ratio);
      if (!reported && (bitExact ? std::memcmp(&values[i], &ref.combine[r][i],
                                               sizeof(float)) != 0
                                 : !(err <= allowed))) {
        reported = true;
        c.fail(formatv(
            "rank {0}: {1} token {2} h={3} is {4}, reference {5} ({6})", r,
            what, t, h, got, ref.combine[r][i],
            bitExact
                ? std::string("per_expert and one rank must be bit-exact")
                : formatv("|err| {0:e} > bound {1:e}", err, allowed).str()));
      }
    }
  }
}

/// Checks rank r's [T][H] `values` against the combine of the reference's
/// SwiGLU experts `expected`, within ffnTolerance per element.
void checkFfnOutput(const RoutingProblem &p, int r, StringRef what,
                    const std::vector<float> &values,
                    const std::vector<float> &expected,
                    const std::vector<double> &absSum,
                    const std::vector<double> &rowError, int roundings,
                    RankCheck &c) {
  if (values.size() != expected.size()) {
    c.fail(formatv("rank {0}: {1} returned {2} values, expected {3}", r, what,
                   values.size(), expected.size()));
    return;
  }
  bool reported = false;
  for (size_t i = 0; i < values.size(); ++i) {
    const double err = absError(values[i], expected[i]);
    const double allowed = ffnTolerance(p, roundings, absSum[i], rowError[i]);
    c.maxAbsErr = std::max(c.maxAbsErr, err);
    c.maxAbsErrVsReference = std::max(c.maxAbsErrVsReference, err);
    c.worstBoundRatio = std::max(
        c.worstBoundRatio, err == 0 ? 0 : (allowed > 0 ? err / allowed
                                                       : HUGE_VAL));
    if (!reported && !(err <= allowed)) {
      reported = true;
      c.fail(formatv("rank {0}: {1} token {2} h={3} is {4}, reference SwiGLU "
                     "experts {5} (|err| {6:e} > tolerance {7:e})",
                     r, what, i / p.hidden, i % p.hidden, values[i],
                     expected[i], err, allowed));
    }
  }
}

} // namespace

json::Value errorToJson(double error) {
  return std::isfinite(error) ? json::Value(error) : json::Value(nullptr);
}

double errorFromJson(std::optional<double> value) {
  return value ? *value : HUGE_VAL;
}

RankCheck verifyRank(const RoutingProblem &p, const ReferenceResult &ref,
                     const LayerResult &res) {
  RankCheck c;
  const int r = res.rank;
  if (static_cast<int>(ref.layout.size()) != p.ranks) {
    // Only with --skip-input-checks: the reference rejected the routing, so
    // the runtime should have rejected it too.
    c.fail(formatv("rank {0}: the runtime accepted a routing the reference "
                   "rejects",
                   r));
    return c;
  }
  const int64_t H = p.hidden;
  const ref::RankLayout &want = ref.layout[r];
  const int64_t R = static_cast<int64_t>(want.rows.size());

  // 2. tokens_per_expert and drops.
  if (res.dispatchObserved && res.tokensPerExpert != want.tokensPerExpert) {
    std::string got, exp;
    for (size_t i = 0; i < res.tokensPerExpert.size(); ++i)
      got += (i ? "," : "") + std::to_string(res.tokensPerExpert[i]);
    for (size_t i = 0; i < want.tokensPerExpert.size(); ++i)
      exp += (i ? "," : "") + std::to_string(want.tokensPerExpert[i]);
    c.fail(formatv("rank {0}: tokens_per_expert [{1}], expected [{2}]", r, got,
                   exp));
  }
  if (res.dropped != want.dropped)
    c.fail(formatv("rank {0}: dropped {1} rows, expected {2}", r, res.dropped,
                   want.dropped));

  // 1. dispatch: row count, sources, weights, bits (rows only when the
  // path observes them).
  if (!res.dispatchObserved) {
    // Chunked, every chunk's layout pads its own segments.
    const int64_t rows = res.chunks > 1 && p.align > 1
                             ? chunkedRecvRows(p, r, res.chunks)
                             : R;
    if (res.recvRowsObserved && res.recvRows != rows)
      c.fail(formatv("rank {0}: received {1} rows, expected {2}", r,
                     res.recvRows, rows));
  } else if (res.recvRows != R ||
             static_cast<int64_t>(res.recv.size()) != R * H ||
             static_cast<int64_t>(res.sources.size()) != 2 * R ||
             static_cast<int64_t>(res.recvWeights.size()) != R) {
    c.fail(formatv("rank {0}: received {1} rows, expected {2}", r, res.recvRows,
                   R));
    c.dispatchRowMismatches = std::max(res.recvRows, R);
  } else {
    for (int64_t i = 0; i < R; ++i) {
      const ref::RecvRow &row = want.rows[i];
      if (res.sources[2 * i] != row.srcRank ||
          res.sources[2 * i + 1] != row.srcToken) {
        c.fail(formatv("rank {0}: row {1} comes from (rank {2}, token {3}), "
                       "expected (rank {4}, token {5})",
                       r, i, res.sources[2 * i], res.sources[2 * i + 1],
                       row.srcRank, row.srcToken));
        break;
      }
    }
    for (int64_t i = 0; i < R; ++i) {
      const float w = want.rows[i].weight;
      if (std::memcmp(&res.recvWeights[i], &w, sizeof(float)) != 0) {
        c.fail(formatv("rank {0}: row {1} has routing weight {2}, expected {3}",
                       r, i, res.recvWeights[i], w));
        break;
      }
    }
    const float *got = res.recv.data();
    const float *exp = ref.dispatch[r].data();
    for (int64_t i = 0; i < R; ++i) {
      if (std::memcmp(got + i * H, exp + i * H, sizeof(float) * H) == 0)
        continue;
      if (c.dispatchRowMismatches++ == 0) {
        int64_t h = 0;
        while (std::memcmp(got + i * H + h, exp + i * H + h, sizeof(float)) ==
               0)
          ++h;
        c.fail(formatv("rank {0}: dispatch row {1} (expert {2}, from rank {3} "
                       "token {4}) differs at h={5}: {6} vs expected {7}",
                       r, i, want.rows[i].localExpert, want.rows[i].srcRank,
                       want.rows[i].srcToken, h, got[i * H + h],
                       exp[i * H + h]));
      }
    }
    if (c.dispatchRowMismatches > 1)
      c.fail(formatv("rank {0}: {1} of {2} dispatch rows differ", r,
                     c.dispatchRowMismatches, R));
  }

  // 3. weighted combine of identity experts (and a training step's grad_x,
  // which equals it for grad_out = x; never bit-exact: the backward rounds
  // w * grad_out to the row dtype on the expert's rank before summing).
  const int roundings = combineRoundings(res.strategy, res.stages);
  if (ref.experts.ffn()) {
    checkFfnOutput(p, r, "combine", res.combine, ref.ffnCombine[r],
                   ref.ffnCombineAbsSum[r], ref.ffnCombineRowError[r],
                   roundings, c);
    if (ref.experts.training)
      checkFfnOutput(p, r, "grad_x", res.gradX, ref.ffnGradX[r],
                     ref.ffnGradXAbsSum[r], ref.ffnGradXRowError[r], roundings,
                     c);
    return c;
  }
  checkCombineLike(p, ref, r, "combine", res.combine, roundings, c);
  if (!res.gradX.empty())
    checkCombineLike(p, ref, r, "grad_x", res.gradX, roundings + 1, c);
  return c;
}

uint64_t interNodeBytes(const moecommTraffic_t &t, moecommDirection_t d) {
  uint64_t sum = 0;
  for (int s = 0; s < 3; ++s)
    sum += t.bytes[d][s][moecommLinkInterNode];
  return sum;
}

uint64_t intraNodeBytes(const moecommTraffic_t &t, moecommDirection_t d) {
  uint64_t sum = 0;
  for (int s = 0; s < 3; ++s)
    sum += t.bytes[d][s][moecommLinkIntraNode];
  return sum;
}

bool verifyLowerBound(int64_t dispatchBound, int64_t combineBound,
                      moecommStrategy_t strategy, bool layouts,
                      const moecommTraffic_t &global,
                      std::vector<std::string> &failures) {
  if (!layouts) {
    const uint64_t got = interNodeBytes(global, moecommDirectionAllToAll);
    const uint64_t bound = static_cast<uint64_t>(dispatchBound) +
                           static_cast<uint64_t>(combineBound);
    if (got >= bound)
      return true;
    failures.push_back(formatv("all_to_all sent {0} inter-node bytes, below "
                               "the dispatch + combine lower bound {1}",
                               got, bound));
    return false;
  }
  bool ok = true;
  const struct {
    moecommDirection_t direction;
    int64_t bound;
  } checks[] = {{moecommDirectionDispatch, dispatchBound},
                {moecommDirectionCombine, combineBound}};
  for (const auto &check : checks) {
    const uint64_t got = interNodeBytes(global, check.direction);
    const uint64_t bound = static_cast<uint64_t>(check.bound);
    if (strategy == moecommHierarchical && got != bound) {
      ok = false;
      failures.push_back(formatv("hierarchical {0} sent {1} inter-node bytes, "
                                 "the lower bound is {2}",
                                 directionName(check.direction), got, bound));
    } else if (got < bound) {
      ok = false;
      failures.push_back(formatv("{0} {1} sent {2} inter-node bytes, below the "
                                 "lower bound {3}",
                                 strategyName(strategy),
                                 directionName(check.direction), got, bound));
    }
  }
  return ok;
}

} // namespace moecomm::run
