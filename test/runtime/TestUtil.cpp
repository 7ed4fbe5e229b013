//===- TestUtil.cpp - Problems, rank runs and oracles for runtime tests ---===//
#include "TestUtil.h"
#include "RunRankWith.h"

#include "moecomm/Reference/CombineBound.h"
#include "moecomm/Workload/ExpertLoad.h"
#include "moecomm/Workload/RankLauncher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <sstream>

#ifndef MOECOMM_EXAMPLES_DATA
#error "MOECOMM_EXAMPLES_DATA must point at examples/data"
#endif

namespace moecomm {
namespace test {

const char *routingName(RoutingKind k) {
  switch (k) {
  case RoutingKind::Uniform:
    return "uniform";
  case RoutingKind::UniformMasked:
    return "masked";
  case RoutingKind::Skewed:
    return "skewed";
  case RoutingKind::OneExpert:
    return "oneexpert";
  case RoutingKind::AllMasked:
    return "allmasked";
  case RoutingKind::EmptyRanks:
    return "emptyranks";
  }
  return "?";
}

static const char *typeName(moecommDataType_t t) {
  switch (t) {
  case moecommFloat32:
    return "f32";
  case moecommBfloat16:
    return "bf16";
  case moecommFloat8E4M3:
    return "fp8";
  case moecommFloat8E4M3UE8M0:
    return "fp8ue8m0";
  case moecommMxfp8:
    return "mxfp8";
  default:
    return "int";
  }
}

std::string CaseSpec::name() const {
  std::ostringstream os;
  os << "W" << W << "_G" << G << "_E" << E << "_K" << K << "_H" << H << "_"
     << typeName(data) << "_" << typeName(wire) << "_" << routingName(routing)
     << "_T" << T;
  if (capacity)
    os << "_cap" << capacity;
  if (align != 1)
    os << "_align" << align;
  if (!slotExperts.empty())
    os << "_S" << slotExperts.size()
       << (choice == moecommReplicaLoadOnly ? "_loadonly" : "_locality");
  return os.str();
}

CaseSpec seededCell(int W, int G, int64_t E, int K, int64_t H,
                    moecommDataType_t data, moecommDataType_t wire,
                    RoutingKind routing, int64_t T, int64_t capacity,
                    bool randomWeights) {
  const uint64_t seed = W * 131 + G * 17 + K * 7 + H + T;
  return CaseSpec{
      W, G, E, K, H, data, wire, routing, T, capacity, randomWeights, seed};
}

// Every value of every axis appears; the cells pair them so that each
// strategy meets single- and two-stage topologies, every wire type and
// every routing kind. FP8 wire means bf16 data (DESIGN.md §8).
std::vector<CaseSpec> matrixCells() {
  using namespace shorthand;
  return {
      seededCell(1, 1, 4, 1, 1, F32, F32, RK::Uniform, 5),
      seededCell(1, 1, 8, 3, 300, BF16, FP8, RK::UniformMasked, 7),
      seededCell(2, 1, 8, 2, 7, BF16, BF16, RK::Uniform, 9),
      seededCell(2, 2, 8, 5, 24, BF16, FP8, RK::Skewed, 11),
      seededCell(2, 1, 16, 5, 129, BF16, FP8, RK::EmptyRanks, 6),
      seededCell(4, 2, 64, 3, 128, BF16, BF16, RK::Skewed, 16, 0, true),
      seededCell(4, 1, 32, 8, 24, F32, F32, RK::Uniform, 10, 0, true),
      seededCell(4, 4, 16, 2, 300, BF16, FP8, RK::OneExpert, 12),
      seededCell(4, 2, 8, 5, 7, BF16, BF16, RK::AllMasked, 6),
      seededCell(4, 2, 8, 2, 7168, BF16, FP8, RK::Skewed, 4),
      seededCell(4, 2, 12, 6, 24, F32, F32, RK::UniformMasked, 9),
      seededCell(4, 2, 28, 7, 7, BF16, BF16, RK::Uniform, 7, 0, true),
      seededCell(4, 2, 24, 3, 24, BF16, BF16, RK::OneExpert, 10, 13),
      seededCell(8, 2, 64, 8, 128, BF16, FP8, RK::Skewed, 12),
      seededCell(8, 4, 24, 3, 1, F32, F32, RK::EmptyRanks, 9),
      seededCell(8, 8, 8, 1, 7, BF16, FP8, RK::Uniform, 8),
      seededCell(8, 1, 40, 5, 24, BF16, BF16, RK::UniformMasked, 8, 0, true),
      seededCell(8, 4, 64, 8, 7168, BF16, BF16, RK::Uniform, 3, 0, true),
      seededCell(8, 2, 16, 2, 300, F32, F32, RK::Uniform, 20, 15, true),
      seededCell(8, 4, 72, 9, 24, BF16, FP8, RK::Skewed, 6),
      // The E8M0-scale wire formats: one rank (quantized without an
      // exchange), T = 0 ranks, all tokens to one expert, masked slots, one
      // and two stages, H below, between and above the 32 / 128 blocks.
      seededCell(1, 1, 4, 2, 40, BF16, UE8M0, RK::UniformMasked, 5),
      seededCell(1, 1, 4, 2, 40, F32, MXFP8, RK::Uniform, 5),
      seededCell(2, 1, 16, 5, 129, BF16, UE8M0, RK::EmptyRanks, 6),
      seededCell(2, 1, 16, 5, 129, BF16, MXFP8, RK::EmptyRanks, 6),
      seededCell(4, 2, 16, 3, 300, BF16, UE8M0, RK::OneExpert, 8),
      seededCell(4, 2, 16, 3, 300, BF16, MXFP8, RK::OneExpert, 8),
      seededCell(4, 2, 8, 2, 7168, BF16, MXFP8, RK::Skewed, 4),
      seededCell(8, 2, 32, 4, 7, BF16, UE8M0, RK::UniformMasked, 9),
      seededCell(8, 4, 32, 4, 33, F32, MXFP8, RK::UniformMasked, 9),
      seededCell(8, 8, 8, 1, 1, BF16, MXFP8, RK::Uniform, 8),
  };
}

void PrintTo(const CaseParam &p, std::ostream *os) {
  *os << p.spec.name() << " " << strategyName(p.strategy);
}

std::string caseParamName(const CaseParam &p) {
  return p.spec.name() + "_" + strategyName(p.strategy);
}

std::vector<CaseParam> withEveryStrategy(const std::vector<CaseSpec> &specs) {
  std::vector<CaseParam> ps;
  for (const CaseSpec &c : specs)
    for (moecommStrategy_t s :
         {moecommPerExpert, moecommFlat, moecommHierarchical, moecommAuto})
      ps.push_back({c, s});
  return ps;
}

std::vector<double> loadExpertLoads(const std::string &model) {
  llvm::Expected<std::vector<double>> loads = workload::readTraceLoads(
      std::string(MOECOMM_EXAMPLES_DATA) + "/expert_load_olmoe_mixtral.json",
      model, "arxiv", 7);
  if (!loads) {
    llvm::consumeError(loads.takeError());
    return {};
  }
  return std::move(*loads);
}

ref::Problem makeProblem(const CaseSpec &spec) {
  ref::Problem p;
  p.ranks = spec.W;
  p.ranksPerNode = spec.G;
  p.numExperts = spec.E;
  p.topk = spec.K;
  p.hidden = spec.H;
  p.dataType = spec.data;
  p.wireType = spec.wire;
  p.capacity = spec.capacity;
  p.align = spec.align;
  p.slotExperts = spec.slotExperts;
  p.replicaChoice = spec.choice;
  p.routing.resize(spec.W);
  std::vector<double> loads;
  if (spec.routing == RoutingKind::Skewed) {
    std::vector<double> src =
        loadExpertLoads(spec.E % 64 == 0 ? "olmoe-1b-7b" : "mixtral-8x7b");
    if (src.empty())
      ADD_FAILURE() << "cannot read the expert loads";
    for (int64_t e = 0; e < spec.E; ++e)
      loads.push_back(src.empty() ? 1.0 : src[e % src.size()]);
  }
  for (int r = 0; r < spec.W; ++r) {
    std::mt19937_64 rng(spec.seed * 1000003 + r * 7919 + 17);
    ref::RankRouting &rr = p.routing[r];
    int64_t T = std::max<int64_t>(0, spec.T + (r * 7) % 5 - 2);
    if (spec.routing == RoutingKind::EmptyRanks && r % 2 == 1)
      T = 0;
    rr.numTokens = T;
    rr.topkIdx.assign(T * spec.K, -1);
    rr.topkWeights.assign(T * spec.K, 0.0f);
    for (int64_t t = 0; t < T; ++t) {
      std::vector<int64_t> chosen;
      switch (spec.routing) {
      case RoutingKind::Uniform:
      case RoutingKind::UniformMasked:
      case RoutingKind::EmptyRanks: {
        std::vector<int64_t> all(spec.E);
        for (int64_t e = 0; e < spec.E; ++e)
          all[e] = e;
        for (int k = 0; k < spec.K && k < spec.E; ++k) {
          std::uniform_int_distribution<int64_t> d(k, spec.E - 1);
          std::swap(all[k], all[d(rng)]);
          chosen.push_back(all[k]);
        }
        break;
      }
      case RoutingKind::Skewed: {
        std::vector<double> w = loads;
        for (int k = 0; k < spec.K && k < spec.E; ++k) {
          double total = 0;
          for (double v : w)
            total += v;
          double u = std::uniform_real_distribution<double>(0, total)(rng);
          int64_t e = 0;
          for (; e < spec.E - 1; ++e) {
            if (u < w[e] && w[e] > 0)
              break;
            u -= w[e];
          }
          while (w[e] <= 0) // never pick twice
            e = (e + 1) % spec.E;
          chosen.push_back(e);
          w[e] = 0;
        }
        break;
      }
      case RoutingKind::OneExpert:
        chosen.push_back(spec.E - 1);
        break;
      case RoutingKind::AllMasked:
        break;
      }
      for (size_t k = 0; k < chosen.size() && (int)k < spec.K; ++k) {
        bool mask = spec.routing == RoutingKind::UniformMasked &&
                    std::uniform_int_distribution<int>(0, 3)(rng) == 0;
        if (!mask)
          rr.topkIdx[t * spec.K + k] = chosen[k];
      }
      for (int k = 0; k < spec.K; ++k) {
        float w =
            spec.randomWeights
                ? std::uniform_real_distribution<float>(0.01f, 1.0f)(rng)
                : (float)std::uniform_int_distribution<int>(1, 64)(rng) / 64.0f;
        rr.topkWeights[t * spec.K + k] = w;
      }
    }
  }
  return p;
}

std::vector<float> makeX(const ref::Problem &p, int rank) {
  std::vector<float> x =
      ref::standardX(rank, p.routing[rank].numTokens, p.hidden);
  float scale = std::ldexp(1.0f, rank % 5 - 2);
  for (float &v : x)
    v *= scale;
  return x;
}

std::vector<float> makeY(const ref::Problem &p, int rank,
                         const ref::RankLayout &layout) {
  const int64_t H = p.hidden, L = p.localExperts();
  std::vector<float> y(layout.rows.size() * H);
  for (size_t i = 0; i < layout.rows.size(); ++i) {
    const ref::RecvRow &r = layout.rows[i];
    for (int64_t h = 0; h < H; ++h) {
      int64_t v = (r.srcRank * 131 + r.srcToken * 71 +
                   (rank * L + r.localExpert) * 37 + h * 13) %
                      61 -
                  30;
      y[i * H + h] = (float)v / 16.0f;
    }
  }
  return y;
}

moecommLayoutDesc_t descFor(const ref::Problem &p, int rank,
                            moecommStrategy_t strategy) {
  const ref::RankRouting &rr = p.routing[rank];
  moecommLayoutDesc_t desc{};
  desc.numTokens = rr.numTokens;
  desc.topk = p.topk;
  desc.numExperts = p.numExperts;
  desc.idxType = moecommInt64;
  desc.topkIdx = rr.topkIdx.data();
  desc.topkWeights = rr.topkWeights.empty() ? nullptr : rr.topkWeights.data();
  desc.capacity = p.capacity;
  desc.strategy = strategy;
  desc.hidden = p.hidden;
  desc.wireType = p.wireType;
  desc.align = p.align;
  desc.numSlots = (int64_t)p.slotExperts.size();
  desc.slotExperts = p.hasPlacement() ? p.slotExperts.data() : nullptr;
  desc.replicaChoice = p.replicaChoice;
  return desc;
}

moecommLayoutDesc_t oneTokenDesc(const int64_t *idx, const float *w,
                                 int64_t numExperts,
                                 moecommStrategy_t strategy) {
  moecommLayoutDesc_t d{};
  d.numTokens = 1;
  d.topk = 1;
  d.numExperts = numExperts;
  d.idxType = moecommInt64;
  d.topkIdx = idx;
  d.topkWeights = w;
  d.strategy = strategy;
  d.wireType = moecommFloat32;
  return d;
}

//===--- Rows -------------------------------------------------------------===//

Topology topologyOf(const ref::Problem &p) {
  Topology t;
  t.ranks = p.ranks;
  t.ranksPerNode = p.ranksPerNode;
  t.numExperts = p.numExperts;
  return t;
}

std::vector<RoutingView> routingViewsOf(const ref::Problem &p) {
  std::vector<RoutingView> v(p.ranks);
  for (int r = 0; r < p.ranks; ++r) {
    const ref::RankRouting &rr = p.routing[r];
    v[r].numTokens = rr.numTokens;
    v[r].topk = p.topk;
    v[r].topkIdx = rr.topkIdx.data();
    v[r].idxType = moecommInt64;
    v[r].topkWeights = rr.topkWeights.empty() ? nullptr : rr.topkWeights.data();
  }
  return v;
}

int64_t elemSize(moecommDataType_t t) {
  return t == moecommInt64                          ? 8
         : t == moecommFloat32 || t == moecommInt32 ? 4
         : t == moecommBfloat16                     ? 2
                                                    : 1;
}

Rows::Rows(int64_t n, int64_t hidden, moecommDataType_t type) {
  data.assign(std::max<int64_t>(1, n * hidden * elemSize(type)), 0xCD);
  // The scales' bytes (ref::rowBytes: independent of the runtime's sizes),
  // in f32 words so that fp8_e4m3's scales read as floats.
  const int64_t scaleBytes =
      ref::isFp8Wire(type) ? n * (ref::rowBytes(type, hidden) - hidden) : 0;
  if (ref::isFp8Wire(type))
    scales.assign(std::max<int64_t>(1, (scaleBytes + 3) / 4), -7.0f);
  rows.data = data.data();
  rows.scales = ref::isFp8Wire(type) ? scales.data() : nullptr;
  rows.rows = n;
  rows.hidden = hidden;
  rows.type = type;
}

Rows &Rows::operator=(Rows &&o) noexcept {
  data = std::move(o.data);
  scales = std::move(o.scales);
  rows = o.rows;
  rows.data = data.data();
  rows.scales = ref::isFp8Wire(rows.type) ? scales.data() : nullptr;
  return *this;
}

std::vector<float> Rows::values() const {
  int64_t n = rows.rows * rows.hidden;
  std::vector<float> v(n);
  if (n == 0)
    return v;
  if (rows.type == moecommFloat32) {
    std::memcpy(v.data(), data.data(), n * 4);
  } else if (rows.type == moecommBfloat16) {
    for (int64_t i = 0; i < n; ++i) {
      uint32_t u = (uint32_t)(data[2 * i] | (data[2 * i + 1] << 8)) << 16;
      std::memcpy(&v[i], &u, 4);
    }
  }
  return v;
}

Rows Rows::fromValues(const std::vector<float> &v, int64_t hidden,
                      moecommDataType_t type) {
  Rows r((int64_t)v.size() / std::max<int64_t>(1, hidden), hidden, type);
  for (size_t i = 0; i < v.size(); ++i) {
    float f = ref::roundTo(v[i], type);
    if (type == moecommFloat32) {
      std::memcpy(&r.data[4 * i], &f, 4);
    } else {
      uint32_t u;
      std::memcpy(&u, &f, 4);
      uint16_t b = (uint16_t)(u >> 16);
      std::memcpy(&r.data[2 * i], &b, 2);
    }
  }
  return r;
}

bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
}

//===--- Expected ---------------------------------------------------------===//

Expected computeExpected(const ref::Problem &p) {
  Expected e;
  e.problem = p;
  e.layout = ref::layout(p);
  for (int r = 0; r < p.ranks; ++r) {
    e.x.push_back(makeX(p, r));
    e.y.push_back(makeY(p, r, e.layout[r]));
  }
  e.dispatch = ref::dispatch(p, e.layout, e.x);
  e.combineW = ref::combine(p, e.layout, e.y, true);
  e.combineU = ref::combine(p, e.layout, e.y, false);
  e.absW = ref::combineAbsSum(p, e.layout, e.y, true);
  e.absU = ref::combineAbsSum(p, e.layout, e.y, false);
  e.identityW = ref::combine(p, e.layout, e.dispatch, true);
  e.identityU = ref::combine(p, e.layout, e.dispatch, false);
  e.idAbsW = ref::combineAbsSum(p, e.layout, e.dispatch, true);
  e.idAbsU = ref::combineAbsSum(p, e.layout, e.dispatch, false);
  const ref::Problem physical = ref::physicalProblem(p);
  e.summary = summarizeRouting(topologyOf(physical), p.capacity,
                               routingViewsOf(physical));
  return e;
}

moecommStrategy_t resolvedStrategy(const Expected &exp,
                                   moecommStrategy_t requested) {
  if (requested != moecommAuto)
    return requested;
  const ref::Problem &p = exp.problem;
  return chooseStrategy(exp.summary, wireRowBytes(p.wireType, p.hidden),
                        wireRowBytes(p.dataType, p.hidden), defaultLinkModel());
}

//===--- Running one rank -------------------------------------------------===//

namespace {

/// runRankWith()'s Space for host rows and host calls (no stream).
struct HostSpace {
  using RowsType = Rows;
  Rows upload(const std::vector<float> &values, int64_t n, int64_t hidden,
              moecommDataType_t type) {
    Rows r = Rows::fromValues(values, hidden, type);
    r.rows.rows = n; // also when n == 0
    return r;
  }
  moecommResult_t quantizeFp8(moecommComm_t, moecommRows_t *in,
                              moecommRows_t *out) {
    return moecommQuantizeFp8(in, out);
  }
  moecommStream_t stream() { return nullptr; }
  void finish() {}
};

} // namespace

RankRun runRank(moecommComm_t comm, const Expected &exp,
                moecommStrategy_t strategy, int rank) {
  const ref::Problem &p = exp.problem;
  RankRun run;
  int G = 0, W = 0;
  moecommCommRanksPerNode(comm, &G);
  moecommCommSize(comm, &W);
  if (G != p.ranksPerNode || W != p.ranks) {
    run.result = moecommInternalError;
    run.error = "the communicator's topology differs from the problem's";
  }
  HostSpace space;
  return runRankWith(comm, exp, descFor(p, rank, strategy), rank, space,
                     std::move(run));
}

//===--- Checks -----------------------------------------------------------===//

namespace {

/// L of the combine bound (moecomm/Reference/CombineBound.h) for strategy
/// `s` on the problem's topology.
int roundingLevels(const Expected &exp, moecommStrategy_t s) {
  const ref::Problem &p = exp.problem;
  return ref::combineRoundings(
      s, static_cast<int>(
             stageScopes(p.ranks, p.ranksPerNode, s, moecommDirectionDispatch)
                 .size()));
}

/// |got - want| <= ((levels + 1) u + 3 K 2^-24) * abs + (levels + 1 + 3 K) eta
/// per element, eta the output type's smallest subnormal (docs/runtime.md).
void expectWithinBound(const std::vector<float> &got,
                       const std::vector<float> &want,
                       const std::vector<double> &abs, int levels,
                       const Expected &exp, const std::string &what) {
  const ref::Problem &p = exp.problem;
  ASSERT_EQ(got.size(), want.size()) << what;
  if (levels == 0) {
    EXPECT_TRUE(sameBits(got, want)) << what << " is not bit-exact";
    return;
  }
  const ref::CombineBound allowed =
      ref::combineBound(p.dataType, p.topk, levels);
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double err = std::fabs((double)got[i] - (double)want[i]);
    double bound = allowed.of(abs[i]);
    if (!(err <= bound)) {
      if (bad++ < 3)
        ADD_FAILURE() << what << "[" << i << "] = " << got[i] << ", reference "
                      << want[i] << ", error " << err << " > bound " << bound;
    }
  }
  EXPECT_EQ(bad, 0) << what << ": elements outside the bound";
}

} // namespace

void checkRank(const Expected &exp, moecommStrategy_t requested, int rank,
               const RankRun &run) {
  const ref::Problem &p = exp.problem;
  const ref::RankLayout &L = exp.layout[rank];
  const int64_t H = p.hidden;
  SCOPED_TRACE("rank " + std::to_string(rank));
  ASSERT_EQ(run.result, moecommSuccess) << run.error;
  moecommStrategy_t s = resolvedStrategy(exp, requested);
  EXPECT_EQ(run.info.strategy, s);
  std::vector<moecommScope_t> ds =
      stageScopes(p.ranks, p.ranksPerNode, s, moecommDirectionDispatch);
  std::vector<moecommScope_t> cs =
      stageScopes(p.ranks, p.ranksPerNode, s, moecommDirectionCombine);
  EXPECT_EQ(run.info.numStages, (int)ds.size());
  EXPECT_EQ(run.dispatchScopes, ds);
  EXPECT_EQ(run.combineScopes, cs);
  ASSERT_EQ(run.info.recvRows, (int64_t)L.rows.size());
  EXPECT_EQ(run.info.localExperts, p.localExperts());
  EXPECT_EQ(run.info.numTokens, p.routing[rank].numTokens);
  EXPECT_EQ(run.info.dropped, L.dropped);
  // Oracle 2: tokens per expert = histogram minus drops; the segments start
  // at multiples of align.
  EXPECT_EQ(run.tokensPerExpert, L.tokensPerExpert);
  EXPECT_EQ(run.expertOffsets, L.expertOffsets);
  for (size_t i = 0; i < L.rows.size(); ++i) {
    EXPECT_EQ(run.sources[2 * i], L.rows[i].srcRank) << "row " << i;
    EXPECT_EQ(run.sources[2 * i + 1], L.rows[i].srcToken) << "row " << i;
    EXPECT_EQ(std::memcmp(&run.weights[i], &L.rows[i].weight, 4), 0)
        << "weight of row " << i;
  }
  // Oracle 1: dispatch is bit-exact (every path).
  EXPECT_TRUE(sameBits(run.dispatch, exp.dispatch[rank])) << "dispatch";
  EXPECT_TRUE(sameBits(run.dispatchStaged, exp.dispatch[rank]))
      << "staged dispatch";
  EXPECT_TRUE(sameBits(run.dispatchAsync, exp.dispatch[rank]))
      << "start/wait dispatch";
  // Combine: per_expert bit-exact, others within the documented bound.
  int levels = roundingLevels(exp, s);
  expectWithinBound(run.combineW, exp.combineW[rank], exp.absW[rank], levels,
                    exp, "weighted combine");
  expectWithinBound(run.combineU, exp.combineU[rank], exp.absU[rank], levels,
                    exp, "unweighted combine");
  EXPECT_TRUE(sameBits(run.combineStagedW, run.combineW)) << "staged combine";
  EXPECT_TRUE(sameBits(run.combineAsyncW, run.combineW))
      << "start/wait combine";
  // Oracle 3: identity experts.
  expectWithinBound(run.identityW, exp.identityW[rank], exp.idAbsW[rank],
                    levels, exp, "identity weighted combine");
  expectWithinBound(run.identityU, exp.identityU[rank], exp.idAbsU[rank],
                    levels, exp, "identity unweighted combine");
  if (!ref::isFp8Wire(p.wireType)) {
    // ... and against x * sum of kept weights (x * count), independently of
    // the reference's combine.
    auto kept = ref::keptSlots(p, exp.layout);
    const ref::RankRouting &rr = p.routing[rank];
    // One rounding more than the reference comparison: x * sum(w) is not
    // rounded to the data type.
    double rel = ref::combineBound(p.dataType, p.topk, levels + 1).relative;
    int bad = 0;
    for (int64_t t = 0; t < rr.numTokens; ++t) {
      double sw = 0, sa = 0;
      int count = 0;
      for (int k = 0; k < p.topk; ++k)
        if (kept[rank][t * p.topk + k]) {
          sw += rr.topkWeights[t * p.topk + k];
          sa += std::fabs(rr.topkWeights[t * p.topk + k]);
          ++count;
        }
      for (int64_t h = 0; h < H; ++h) {
        double xv = exp.x[rank][t * H + h];
        double ew = xv * sw, eu = xv * count;
        if (std::fabs(run.identityW[t * H + h] - ew) >
                rel * std::fabs(xv) * sa + 1e-30 ||
            std::fabs(run.identityU[t * H + h] - eu) >
                rel * std::fabs(xv) * count + 1e-30)
          ++bad;
      }
    }
    EXPECT_EQ(bad, 0) << "identity combine differs from x * sum(w)";
  }
  // Traffic: exactly what countTraffic says, per rank, stage scope and link,
  // with the model's row sizes equal to the reference's (per wire format).
  EXPECT_EQ(wireRowBytes(p.wireType, H), ref::rowBytes(p.wireType, H));
  EXPECT_EQ(wireRowBytes(p.dataType, H), ref::rowBytes(p.dataType, H));
  StrategyTraffic tr = countTraffic(exp.summary, s, wireRowBytes(p.wireType, H),
                                    wireRowBytes(p.dataType, H));
  for (int dir = 0; dir < 2; ++dir) {
    const auto &stages = dir == 0 ? tr.dispatch : tr.combine;
    const moecommTraffic_t &got =
        dir == 0 ? run.dispatchTraffic : run.combineTraffic;
    uint64_t bytes[3][2] = {}, msgs[3][2] = {};
    for (const StageTraffic &st : stages)
      for (int l = 0; l < 2; ++l) {
        bytes[st.scope][l] += st.ranks[rank].bytesSent[l];
        msgs[st.scope][l] += st.ranks[rank].messagesSent[l];
      }
    for (int sc = 0; sc < 3; ++sc)
      for (int l = 0; l < 2; ++l) {
        EXPECT_EQ(got.bytes[dir][sc][l], bytes[sc][l])
            << "bytes dir " << dir << " scope " << sc << " link " << l;
        EXPECT_EQ(got.messages[dir][sc][l], msgs[sc][l])
            << "messages dir " << dir << " scope " << sc << " link " << l;
        EXPECT_EQ(got.bytes[1 - dir][sc][l], 0u) << "other direction";
        EXPECT_EQ(got.bytes[2][sc][l], 0u) << "all_to_all";
      }
  }
  // Metadata travels whenever there is more than one rank.
  if (p.ranks > 1)
    EXPECT_GT(run.layoutTraffic.metadataBytes[0] +
                  run.layoutTraffic.metadataBytes[1],
              0u);
  else
    EXPECT_EQ(run.layoutTraffic.metadataBytes[0] +
                  run.layoutTraffic.metadataBytes[1],
              0u);
}

void adjointParts(const Expected &exp, int rank, const RankRun &run,
                  double &lhs, double &rhs, double &scale) {
  lhs = rhs = scale = 0;
  const std::vector<float> &y = exp.y[rank];
  for (size_t i = 0; i < run.dispatch.size() && i < y.size(); ++i)
    lhs += (double)run.dispatch[i] * (double)y[i];
  const std::vector<float> &x = exp.x[rank];
  for (size_t i = 0; i < x.size() && i < run.combineU.size(); ++i) {
    rhs += (double)x[i] * (double)run.combineU[i];
    scale += std::fabs((double)x[i]) * exp.absU[rank][i];
  }
}

void checkLowerBound(const Expected &exp, const RankRun &run) {
  const ref::Problem &p = exp.problem;
  if (run.result != moecommSuccess)
    return;
  int64_t dRow = wireRowBytes(p.wireType, p.hidden);
  int64_t cRow = wireRowBytes(p.dataType, p.hidden);
  int64_t lbD = ref::interNodeLowerBoundBytes(p, exp.layout, dRow);
  int64_t lbC = ref::interNodeLowerBoundBytes(p, exp.layout, cRow);
  uint64_t gotD = 0, gotC = 0;
  for (int sc = 0; sc < 3; ++sc) {
    gotD += run.dispatchGlobal.bytes[0][sc][moecommLinkInterNode];
    gotC += run.combineGlobal.bytes[1][sc][moecommLinkInterNode];
  }
  if (run.info.strategy == moecommHierarchical) {
    // Oracle 5: exactly the lower bound.
    EXPECT_EQ(gotD, (uint64_t)lbD) << "hierarchical dispatch inter-node bytes";
    EXPECT_EQ(gotC, (uint64_t)lbC) << "hierarchical combine inter-node bytes";
  } else {
    EXPECT_GE(gotD, (uint64_t)lbD);
    EXPECT_GE(gotC, (uint64_t)lbC);
  }
}

void runOnThreads(int W, int G,
                  const std::function<void(moecommComm_t, int)> &fn) {
  if (llvm::Error e = workload::runOnThreadGroup(W, G, fn))
    ADD_FAILURE() << llvm::toString(std::move(e));
}

std::vector<RankRun> runEveryRank(const Expected &exp,
                                  moecommStrategy_t strategy) {
  const ref::Problem &p = exp.problem;
  std::vector<RankRun> runs(p.ranks);
  runOnThreads(p.ranks, p.ranksPerNode, [&](moecommComm_t comm, int rank) {
    runs[rank] = runRank(comm, exp, strategy, rank);
  });
  return runs;
}

} // namespace test
} // namespace moecomm
