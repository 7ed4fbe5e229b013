//===- NcclMpiTest.cpp - The nccl backend on several GPUs over MPI --------===//
//
// One process per GPU, launched by mpirun (one or several nodes):
//   mpirun -np 8 moecomm_nccl_mpi_tests                 # one 8-GPU node
//   mpirun -np 16 -H a:8,b:8 moecomm_nccl_mpi_tests     # two nodes
// Each rank drives the GPU of its node-local rank (MPI_COMM_TYPE_SHARED).
// Every rank computes the whole reference and checks its own results with
// the runtime tests' oracles (bit-exact dispatch, combine bound, traffic ==
// countTraffic, hierarchical inter-node bytes == the lower bound,
// adjointness summed over ranks), for each G dividing the world size, then
// the capacity mode against the reference with drops, then agreed errors.
// Without one CUDA device per local rank it prints "[  SKIPPED ]" on rank 0
// and exits 0 (ctest reports it as skipped).
//
//===----------------------------------------------------------------------===//
// <mpi.h> first: it makes moecomm_nccl.h declare moecommCommInitNccl.
#include <mpi.h>

#include "GpuTestUtil.h"
#include "MpiTestUtil.h"
#include "moecomm/moecomm_nccl.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

using namespace moecomm;
using namespace moecomm::test;

namespace {

int gLocalRank = 0;

CaseSpec cell(int W, int G, int64_t E, int K, int64_t H, moecommDataType_t data,
              moecommDataType_t wire, RoutingKind rk, int64_t T,
              int64_t capacity = 0) {
  const uint64_t seed = W * 37 + G * 3 + K + H;
  return CaseSpec{W, G, E, K, H, data, wire, rk, T, capacity, true, seed};
}

/// A communicator of backend nccl over MPI_COMM_WORLD with G ranks per
/// (logical) node, or nullptr after a failed EXPECT.
moecommComm_t makeComm(int G) {
  moecommComm_t comm = nullptr;
  moecommResult_t r = moecommCommInitNccl(&comm, MPI_COMM_WORLD, G, gLocalRank);
  EXPECT_EQ(r, moecommSuccess) << moecommCommGetLastError(nullptr);
  return r == moecommSuccess ? comm : nullptr;
}

void runCell(const CaseSpec &spec, cudaStream_t stream) {
  SCOPED_TRACE(spec.name());
  const int rank = worldRank();
  Expected exp = computeExpected(makeProblem(spec));
  moecommComm_t comm = makeComm(spec.G);
  if (!comm)
    return; // every rank failed the same collective creation
  for (moecommStrategy_t s :
       {moecommPerExpert, moecommFlat, moecommHierarchical, moecommAuto}) {
    SCOPED_TRACE("strategy " + std::to_string(s));
    RankRun run = runRankDevice(comm, exp, s, rank, stream, rank % 2 == 1);
    checkRankOnMpi(exp, s, rank, run, MPI_COMM_WORLD);
  }
  EXPECT_EQ(moecommCommDestroy(comm), moecommSuccess);
}

class NcclMpi : public ::testing::Test {
protected:
  void SetUp() override {
    CUDA_OK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  void TearDown() override {
    if (stream_)
      cudaStreamDestroy(stream_);
  }
  cudaStream_t stream_ = nullptr;
};

TEST_F(NcclMpi, OracleMatrix) {
  const int W = worldSize();
  constexpr auto F32 = moecommFloat32, BF16 = moecommBfloat16,
                 FP8 = moecommFloat8E4M3, UE8M0 = moecommFloat8E4M3UE8M0,
                 MXFP8 = moecommMxfp8;
  using RK = RoutingKind;
  std::vector<CaseSpec> cells;
  for (int G : {1, 2, 4, 8}) {
    if (G > W || W % G)
      continue;
    cells.push_back(cell(W, G, 8 * W, 3, 24, BF16, FP8, RK::Skewed, 7));
    cells.push_back(cell(W, G, 4 * W, 5, 7, F32, F32, RK::UniformMasked, 6));
  }
  cells.push_back(cell(W, 1, 8 * W, 3, 300, BF16, UE8M0, RK::Skewed, 11));
  cells.push_back(cell(W, W, 8 * W, 3, 300, BF16, MXFP8, RK::Uniform, 12));
  cells.push_back(cell(W, W, 32 * W, 8, 7168, BF16, FP8, RK::Uniform, 64));
  if (W % 2 == 0) {
    cells.push_back(cell(W, 2, 8 * W, 8, 128, BF16, FP8, RK::EmptyRanks, 5));
    cells.push_back(
        cell(W, W / 2, 2 * W, 2, 300, F32, F32, RK::OneExpert, 8, 9));
  }
  for (const CaseSpec &c : cells)
    runCell(c, stream_);
}

TEST_F(NcclMpi, CapacityModeMatchesTheReference) {
  const int W = worldSize(), r = worldRank();
  for (int64_t C : {(int64_t)100000, (int64_t)37}) {
    SCOPED_TRACE("capacity " + std::to_string(C));
    CaseSpec spec = cell(W, W, 8 * W, 4, 256, moecommBfloat16,
                         moecommFloat8E4M3, RoutingKind::Skewed, 40, C);
    Expected exp = computeExpected(makeProblem(spec));
    const ref::Problem &p = exp.problem;
    const ref::RankLayout &L = exp.layout[r];
    const int64_t T = p.routing[r].numTokens, H = p.hidden;
    moecommComm_t comm = makeComm(W);
    if (!comm)
      return;
    moecommCapacityDesc_t d =
        capacityDesc(T, p.topk, p.numExperts, C, H, p.dataType, p.wireType);
    moecommCapacityPlan_t plan = nullptr;
    ASSERT_EQ(moecommCapacityPlanCreate(comm, &d, &plan), moecommSuccess)
        << moecommCommGetLastError(comm);
    DeviceArray<int64_t> idx(p.routing[r].topkIdx);
    DeviceArray<float> w(p.routing[r].topkWeights);
    Rows xh = Rows::fromValues(exp.x[r], H, p.dataType);
    xh.rows.rows = T;
    DeviceRows x = DeviceRows::from(xh), recv(C, H, p.dataType);
    EXPECT_EQ(moecommCapacityDispatch(plan, idx.data(), w.data(), x.view(),
                                      recv.view(), stream_),
              moecommSuccess)
        << moecommCommGetLastError(comm);
    moecommCapacityOutputs_t o{};
    moecommCapacityPlanGetOutputs(plan, &o);
    CUDA_OK(cudaStreamSynchronize(stream_));
    int64_t R = -1, dropped = -1;
    cudaMemcpy(&R, o.recvRows, 8, cudaMemcpyDeviceToHost);
    cudaMemcpy(&dropped, o.dropped, 8, cudaMemcpyDeviceToHost);
    EXPECT_EQ(R, (int64_t)L.rows.size());
    EXPECT_EQ(dropped, L.dropped);
    std::vector<int64_t> src(2 * C), tpe(p.localExperts());
    cudaMemcpy(src.data(), o.recvSources, 16 * C, cudaMemcpyDeviceToHost);
    cudaMemcpy(tpe.data(), o.tokensPerExpert, 8 * tpe.size(),
               cudaMemcpyDeviceToHost);
    EXPECT_EQ(tpe, L.tokensPerExpert);
    for (size_t i = 0; i < L.rows.size() && (int64_t)i < R; ++i) {
      EXPECT_EQ(src[2 * i], L.rows[i].srcRank) << "row " << i;
      EXPECT_EQ(src[2 * i + 1], L.rows[i].srcToken) << "row " << i;
    }
    std::vector<float> got = recv.values();
    got.resize(std::max<int64_t>(0, R) * H);
    EXPECT_TRUE(sameBits(got, exp.dispatch[r])) << "capacity dispatch";
    Rows yh = Rows::fromValues(exp.y[r], H, p.dataType);
    Rows yFull(C, H, p.dataType);
    std::memcpy(yFull.data.data(), yh.data.data(), yh.data.size());
    DeviceRows y = DeviceRows::from(yFull), out(T, H, p.dataType);
    EXPECT_EQ(moecommCapacityCombine(plan, y.view(), 1, out.view(), stream_),
              moecommSuccess)
        << moecommCommGetLastError(comm);
    EXPECT_TRUE(sameBits(out.values(), exp.combineW[r]))
        << "capacity combine (per_expert: bit-exact)";
    EXPECT_EQ(moecommCapacityPlanDestroy(plan), moecommSuccess);
    EXPECT_EQ(moecommCommDestroy(comm), moecommSuccess);
  }
}

TEST_F(NcclMpi, FaultsAreAgreed) {
  const int W = worldSize(), r = worldRank();
  moecommComm_t comm = makeComm(W);
  if (!comm)
    return;
  CaseSpec s = cell(W, W, 4 * W, 2, 16, moecommFloat32, moecommFloat32,
                    RoutingKind::Uniform, 6);
  Expected good = computeExpected(makeProblem(s));
  ref::Problem bad = good.problem;
  bad.routing[W - 1].topkIdx[1] = 1000;
  moecommLayoutDesc_t d = descFor(bad, r, moecommFlat);
  moecommLayout_t l = nullptr;
  EXPECT_EQ(moecommLayoutCreate(comm, &d, &l), moecommInvalidArgument);
  EXPECT_EQ(std::string(moecommCommGetLastError(comm)),
            "rank " + std::to_string(W - 1) +
                " token 0 slot 1: expert id 1000 out of range [-1, " +
                std::to_string(4 * W) + ")");
  // Still usable.
  RankRun run = runRankDevice(comm, good, moecommFlat, r, stream_, false);
  checkRank(good, moecommFlat, r, run);
  EXPECT_EQ(moecommCommDestroy(comm), moecommSuccess);
}

} // namespace

int main(int argc, char **argv) {
  // moecomm's mpi backend needs MPI_THREAD_MULTIPLE (docs/runtime.md).
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  const int rank = worldRank();
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL,
                      &local);
  int localRank = 0, localSize = 1;
  MPI_Comm_rank(local, &localRank);
  MPI_Comm_size(local, &localSize);
  MPI_Comm_free(&local);
  gLocalRank = localRank;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess)
    devices = 0;
  int enough = devices >= localSize ? 1 : 0, all = 0;
  MPI_Allreduce(&enough, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    if (rank == 0)
      printf("[  SKIPPED ] moecomm_nccl_mpi_tests needs one CUDA device per "
             "rank of a node (%d ranks on this node, %d devices: %s)\n",
             localSize, devices, noDeviceReason().c_str());
    MPI_Finalize();
    return 0;
  }
  const int worst = runAllTestsOnEveryRank();
  MPI_Finalize();
  return worst;
}
