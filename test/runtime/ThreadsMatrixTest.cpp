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

const Expected &expectedFor(const CaseSpec &spec) {
  static std::map<std::string, std::unique_ptr<Expected>> cache;
  auto &slot = cache[spec.name()];
  if (!slot)
    slot = std::make_unique<Expected>(computeExpected(makeProblem(spec)));
  return *slot;
}

class ThreadsMatrix : public ::testing::TestWithParam<CaseParam> {};

TEST_P(ThreadsMatrix, OraclesHold) {
  const CaseParam &param = GetParam();
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
  if (!ref::isFp8Wire(exp.problem.wireType)) {
    double u =
        exp.problem.dataType == moecommBfloat16 ? 1.0 / 256 : 1.0 / 16777216;
    double tol = (4 * u + 3.0 * exp.problem.topk / 16777216) * scale + 1e-20;
    EXPECT_NEAR(lhs, rhs, tol) << "adjointness";
  }
}

INSTANTIATE_TEST_SUITE_P(Cells, ThreadsMatrix,
                         ::testing::ValuesIn(withEveryStrategy(matrixCells())),
                         [](const ::testing::TestParamInfo<CaseParam> &info) {
                           return caseParamName(info.param);
                         });

} // namespace
