//===- TestUtil.h - Problems, rank runs and oracles for runtime tests -----===//
//
// Shared by the threads tests (in-process) and the MPI test program: a case
// spec -> a reference problem with generated routing; runRank() drives one
// rank through layout / dispatch / combine (one-shot, staged, start/wait) on
// any communicator; checkRank() compares one rank's results with the
// reference (DESIGN.md §5 oracles); checkGlobal() checks what needs every
// rank (adjointness, inter-node lower bound) from global sums.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TEST_RUNTIME_TESTUTIL_H
#define MOECOMM_TEST_RUNTIME_TESTUTIL_H

#include "moecomm/Model/CostModel.h"
#include "moecomm/Reference/Reference.h"
#include "moecomm/Model/Traffic.h"
#include "moecomm/moecomm.h"

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace moecomm {
namespace test {

enum class RoutingKind {
  Uniform,       ///< K distinct experts uniformly, no masks
  UniformMasked, ///< uniform, ~25% of slots masked (-1)
  Skewed,        ///< sampled without replacement by OLMoE/Mixtral loads
  OneExpert,     ///< every token: slot 0 -> one expert, other slots masked
  AllMasked,     ///< every slot -1
  EmptyRanks,    ///< odd ranks have T = 0; others uniform
};
const char *routingName(RoutingKind k);

/// An aggregate: tests build it as CaseSpec{W, G, E, K, H, data, wire,
/// routing, T, capacity, randomWeights, seed, align, slotExperts, choice}
/// (fields in this order).
struct CaseSpec {
  int W = 1, G = 1;
  int64_t E = 1;
  int K = 1;
  int64_t H = 1;
  moecommDataType_t data = moecommBfloat16;
  moecommDataType_t wire = moecommBfloat16;
  RoutingKind routing = RoutingKind::Uniform;
  int64_t T = 4; ///< base tokens per rank (varied per rank)
  int64_t capacity = 0;
  bool randomWeights = false; ///< f32 weights in (0,1) instead of k/64
  uint64_t seed = 1;
  int64_t align = 1; ///< expert segment alignment of recv (rows)
  /// Expert placement ([S] logical expert of each slot; empty = none) and
  /// its replica choice (ref::Problem's fields).
  std::vector<int64_t> slotExperts;
  moecommReplicaChoice_t choice = moecommReplicaLocality;
  std::string name() const;
};

/// Short names for the cell lists of the matrix tests.
namespace shorthand {
using RK = RoutingKind;
constexpr moecommDataType_t F32 = moecommFloat32, BF16 = moecommBfloat16,
                            FP8 = moecommFloat8E4M3,
                            UE8M0 = moecommFloat8E4M3UE8M0,
                            MXFP8 = moecommMxfp8;
} // namespace shorthand

/// A spec whose seed follows from its shape (W, G, K, H, T), so that the
/// cells of a test's list draw different routings.
CaseSpec seededCell(int W, int G, int64_t E, int K, int64_t H,
                    moecommDataType_t data, moecommDataType_t wire,
                    RoutingKind routing, int64_t T, int64_t capacity = 0,
                    bool randomWeights = false);

/// ThreadsMatrixTest's cells over W x G x K x H x wire dtype x routing
/// (chosen cells, not the full product; AlignTest reuses them).
std::vector<CaseSpec> matrixCells();

/// A parameterized test's case: a spec run with one strategy.
struct CaseParam {
  CaseSpec spec;
  moecommStrategy_t strategy;
};
/// gtest's printer of a CaseParam (found by argument-dependent lookup).
void PrintTo(const CaseParam &p, std::ostream *os);
/// A CaseParam's test name: the spec's name and the strategy's.
std::string caseParamName(const CaseParam &p);
/// Every spec of `specs` with per_expert, flat, hierarchical and auto, in
/// that order.
std::vector<CaseParam> withEveryStrategy(const std::vector<CaseSpec> &specs);

/// Per-expert loads from examples/data/expert_load_olmoe_mixtral.json
/// ("olmoe-1b-7b" 64 experts or "mixtral-8x7b" 8 experts; domain arxiv,
/// layer 7).
std::vector<double> loadExpertLoads(const std::string &model);

/// The problem of a spec, with generated routing (deterministic).
ref::Problem makeProblem(const CaseSpec &spec);
/// x of rank r: DESIGN.md §8's payload times 2^((r % 5) - 2) (exact in bf16).
std::vector<float> makeX(const ref::Problem &p, int rank);
/// y of rank d for combine: dyadic values from each received row's identity.
std::vector<float> makeY(const ref::Problem &p, int rank,
                         const ref::RankLayout &layout);

/// The layout desc of `rank` of `p` (int64 ids; pointers into p; the
/// placement's fields when p has one).
moecommLayoutDesc_t descFor(const ref::Problem &p, int rank,
                            moecommStrategy_t strategy);

/// A layout desc of one token with top-1 expert `*idx` (int64) and weight
/// `*w` over `numExperts` experts, f32 on the wire: the smallest valid
/// routing, for tests of one argument at a time.
moecommLayoutDesc_t oneTokenDesc(const int64_t *idx, const float *w,
                                 int64_t numExperts,
                                 moecommStrategy_t strategy);

/// The topology of `p` (ranks, ranks per node, experts; with a placement
/// pass ref::physicalProblem(p) for the slots').
Topology topologyOf(const ref::Problem &p);
/// Every rank's routing of `p` as the model library sees it (int64 ids;
/// pointers into p; weights nullptr where a rank has none).
std::vector<RoutingView> routingViewsOf(const ref::Problem &p);

/// Bytes of one element of `t` in a test's row storage (FP8 types: 1, scales not
/// included).
int64_t elemSize(moecommDataType_t t);

/// Row storage for moecommRows_t.
struct Rows {
  std::vector<uint8_t> data;
  std::vector<float> scales;
  moecommRows_t rows{};
  Rows() = default;
  Rows(int64_t n, int64_t hidden, moecommDataType_t type);
  Rows(const Rows &) = delete;
  Rows(Rows &&o) noexcept { *this = std::move(o); }
  Rows &operator=(Rows &&o) noexcept;
  moecommRows_t *view() { return &rows; }
  /// Values as f32 (f32 / bf16 only).
  std::vector<float> values() const;
  /// From f32 values (rounded to the type; f32 / bf16 only).
  static Rows fromValues(const std::vector<float> &v, int64_t hidden,
                         moecommDataType_t type);
};

/// Bitwise comparison of float vectors (NaNs equal by bits).
bool sameBits(const std::vector<float> &a, const std::vector<float> &b);

/// Everything the reference says about a problem.
struct Expected {
  ref::Problem problem;
  std::vector<ref::RankLayout> layout;
  std::vector<std::vector<float>> x, dispatch, y;
  std::vector<std::vector<float>> combineW, combineU;   ///< of y
  std::vector<std::vector<double>> absW, absU;          ///< of y
  std::vector<std::vector<float>> identityW, identityU; ///< y = dispatch
  std::vector<std::vector<double>> idAbsW, idAbsU;
  RoutingSummary summary; ///< of the physical routing (slot ids)
};
Expected computeExpected(const ref::Problem &p);

/// One rank's results.
struct RankRun {
  moecommResult_t result = moecommSuccess; ///< first failure, if any
  std::string error;
  moecommLayoutInfo_t info{};
  std::vector<moecommScope_t> dispatchScopes, combineScopes;
  std::vector<int64_t> tokensPerExpert, expertOffsets, sources;
  std::vector<float> weights;
  std::vector<float> dispatch, dispatchStaged, dispatchAsync;
  std::vector<float> combineW, combineU, combineStagedW, combineAsyncW;
  std::vector<float> identityW, identityU;
  moecommTraffic_t dispatchTraffic{}, combineTraffic{};
  moecommTraffic_t dispatchGlobal{}, combineGlobal{};
  moecommTraffic_t layoutTraffic{};
};

/// Runs one rank (collective: every rank of `comm` calls it).
RankRun runRank(moecommComm_t comm, const Expected &exp,
                moecommStrategy_t strategy, int rank);

/// Compares one rank's run with the reference (gtest EXPECTs).
void checkRank(const Expected &exp, moecommStrategy_t requested, int rank,
               const RankRun &run);

/// Inner products for adjointness, summed over this rank's rows:
/// <dispatch(x), y> and <x, combineU(y)> in f64.
void adjointParts(const Expected &exp, int rank, const RankRun &run,
                  double &lhs, double &rhs, double &scale);

/// Checks the inter-node lower bound for hierarchical from the global
/// traffic of one rank's run (every rank holds the same global sums).
void checkLowerBound(const Expected &exp, const RankRun &run);

/// The strategy moecommAuto must resolve to.
moecommStrategy_t resolvedStrategy(const Expected &exp,
                                   moecommStrategy_t requested);

/// runRank on every rank of `exp`'s problem, as threads (runOnThreads);
/// the runs indexed by rank.
std::vector<RankRun> runEveryRank(const Expected &exp,
                                  moecommStrategy_t strategy);

/// Runs fn(comm, rank) on W threads over a fresh thread group
/// (workload::runOnThreadGroup); a group, thread or communicator that cannot
/// be made is a test failure.
void runOnThreads(int W, int G,
                  const std::function<void(moecommComm_t, int)> &fn);

} // namespace test
} // namespace moecomm

#endif // MOECOMM_TEST_RUNTIME_TESTUTIL_H
