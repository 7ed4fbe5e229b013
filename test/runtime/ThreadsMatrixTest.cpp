//===- ThreadsMatrixTest.cpp - The oracle matrix on the threads backend ---===//
//
// A chosen (not full-product) set of cells over W x G x K x H x wire dtype x
// routing, each run with every strategy (and auto) on W threads and checked
// against the reference: DESIGN.md §5 oracles 1-5 (6 is in Fp8Test).
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"
#include "moecomm/Model/Traffic.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>

using namespace moecomm;
using namespace moecomm::test;

namespace {

using RK = RoutingKind;
constexpr moecommDataType_t F32 = moecommFloat32, BF16 = moecommBfloat16,
                            FP8 = moecommFloat8E4M3;

CaseSpec cell(int W, int G, int64_t E, int K, int64_t H, moecommDataType_t data,
              moecommDataType_t wire, RK routing, int64_t T,
              int64_t capacity = 0, bool randomWeights = false) {
  const uint64_t seed = W * 131 + G * 17 + K * 7 + H + T;
  return CaseSpec{
      W, G, E, K, H, data, wire, routing, T, capacity, randomWeights, seed};
}

// Every value of every axis appears; the cells pair them so that each
// strategy meets single- and two-stage topologies, every wire type and
// every routing kind. FP8 wire means bf16 data (DESIGN.md §8).
std::vector<CaseSpec> cells() {
  return {
      cell(1, 1, 4, 1, 1, F32, F32, RK::Uniform, 5),
      cell(1, 1, 8, 3, 300, BF16, FP8, RK::UniformMasked, 7),
      cell(2, 1, 8, 2, 7, BF16, BF16, RK::Uniform, 9),
      cell(2, 2, 8, 5, 24, BF16, FP8, RK::Skewed, 11),
      cell(2, 1, 16, 5, 129, BF16, FP8, RK::EmptyRanks, 6),
      cell(4, 2, 64, 3, 128, BF16, BF16, RK::Skewed, 16, 0, true),
      cell(4, 1, 32, 8, 24, F32, F32, RK::Uniform, 10, 0, true),
      cell(4, 4, 16, 2, 300, BF16, FP8, RK::OneExpert, 12),
      cell(4, 2, 8, 5, 7, BF16, BF16, RK::AllMasked, 6),
      cell(4, 2, 8, 2, 7168, BF16, FP8, RK::Skewed, 4),
      cell(4, 2, 12, 6, 24, F32, F32, RK::UniformMasked, 9),
      cell(4, 2, 28, 7, 7, BF16, BF16, RK::Uniform, 7, 0, true),
      cell(4, 2, 24, 3, 24, BF16, BF16, RK::OneExpert, 10, 13),
      cell(8, 2, 64, 8, 128, BF16, FP8, RK::Skewed, 12),
      cell(8, 4, 24, 3, 1, F32, F32, RK::EmptyRanks, 9),
      cell(8, 8, 8, 1, 7, BF16, FP8, RK::Uniform, 8),
      cell(8, 1, 40, 5, 24, BF16, BF16, RK::UniformMasked, 8, 0, true),
      cell(8, 4, 64, 8, 7168, BF16, BF16, RK::Uniform, 3, 0, true),
      cell(8, 2, 16, 2, 300, F32, F32, RK::Uniform, 20, 15, true),
      cell(8, 4, 72, 9, 24, BF16, FP8, RK::Skewed, 6),
  };
}

struct Param {
  CaseSpec spec;
  moecommStrategy_t strategy;
};


void PrintTo(const Param &p, std::ostream *os) {
  *os << p.spec.name() << " " << strategyName(p.strategy);
}

std::vector<Param> params() {
  std::vector<Param> ps;
  for (const CaseSpec &c : cells())
    for (moecommStrategy_t s :
         {moecommPerExpert, moecommFlat, moecommHierarchical, moecommAuto})
      ps.push_back({c, s});
  return ps;
}

const Expected &expectedFor(const CaseSpec &spec) {
  static std::map<std::string, std::unique_ptr<Expected>> cache;
  auto &slot = cache[spec.name()];
  if (!slot)
    slot = std::make_unique<Expected>(computeExpected(makeProblem(spec)));
  return *slot;
}

class ThreadsMatrix : public ::testing::TestWithParam<Param> {};

TEST_P(ThreadsMatrix, OraclesHold) {
  const Param &param = GetParam();
  const Expected &exp = expectedFor(param.spec);
  ASSERT_EQ(ref::validate(exp.problem), "");
  const int W = param.spec.W;
  std::vector<RankRun> runs(W);
  runOnThreads(W, param.spec.G, [&](moecommComm_t comm, int rank) {
    runs[rank] = runRank(comm, exp, param.strategy, rank);
  });
  double lhs = 0, rhs = 0, scale = 0;
  for (int r = 0; r < W; ++r) {
    checkRank(exp, param.strategy, r, runs[r]);
    double l, rr, s;
    adjointParts(exp, r, runs[r], l, rr, s);
    lhs += l;
    rhs += rr;
    scale += s;
    // Global counters are the same on every rank.
    EXPECT_EQ(std::memcmp(&runs[r].dispatchGlobal, &runs[0].dispatchGlobal,
                          sizeof(moecommTraffic_t)),
              0);
  }
  checkLowerBound(exp, runs[0]);
  // Oracle 4: <dispatch(x), y> == <x, combine(y)> (unweighted), in f64, up
  // to the combine's rounding to the data type.
  if (exp.problem.wireType != moecommFloat8E4M3) {
    double u =
        exp.problem.dataType == moecommBfloat16 ? 1.0 / 256 : 1.0 / 16777216;
    double tol = (4 * u + 3.0 * exp.problem.topk / 16777216) * scale + 1e-20;
    EXPECT_NEAR(lhs, rhs, tol) << "adjointness";
  }
}

INSTANTIATE_TEST_SUITE_P(Cells, ThreadsMatrix, ::testing::ValuesIn(params()),
                         [](const ::testing::TestParamInfo<Param> &info) {
                           return info.param.spec.name() + "_" +
                                  strategyName(info.param.strategy);
                         });

} // namespace
