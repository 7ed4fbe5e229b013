//===- MpiTestUtil.cpp - What the MPI test programs share -----------------===//
#include "MpiTestUtil.h"

#include <gtest/gtest.h>

#include <cstdio>

namespace moecomm {
namespace test {

int worldRank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int worldSize() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

void checkRankOnMpi(const Expected &exp, moecommStrategy_t requested, int rank,
                    const RankRun &run, MPI_Comm mpiComm) {
  checkRank(exp, requested, rank, run);
  checkLowerBound(exp, run);
  double part[3], sum[3];
  adjointParts(exp, rank, run, part[0], part[1], part[2]);
  MPI_Allreduce(part, sum, 3, MPI_DOUBLE, MPI_SUM, mpiComm);
  if (!ref::isFp8Wire(exp.problem.wireType)) {
    double u =
        exp.problem.dataType == moecommBfloat16 ? 1.0 / 256 : 1.0 / 16777216;
    EXPECT_NEAR(sum[0], sum[1],
                (4 * u + 3.0 * exp.problem.topk / 16777216) * sum[2] + 1e-20)
        << "adjointness";
  }
}

namespace {

/// On ranks other than 0, print only failures (prefixed with the rank).
class FailurePrinter : public ::testing::EmptyTestEventListener {
public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult &r) override {
    if (r.failed())
      fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
              r.file_name() ? r.file_name() : "?", r.line_number(),
              r.summary());
  }

private:
  int rank_;
};

} // namespace

int runAllTestsOnEveryRank() {
  const int rank = worldRank();
  if (rank != 0) {
    auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(rank));
  }
  int rc = RUN_ALL_TESTS();
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

} // namespace test
} // namespace moecomm
