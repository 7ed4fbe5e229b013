//===- MpiTest.cpp - The oracles and faults on the MPI backend ------------===//
//
// Launched by ctest as `mpirun -np 4` and `mpirun -np 8 --oversubscribe`.
// Every process computes the whole reference (cheap) and checks its own
// rank; global quantities (adjointness) are summed with MPI_Allreduce.
// Tests never return early between collective calls, so a failing check on
// one rank cannot leave the others waiting.
//
//===----------------------------------------------------------------------===//
#include "CompiledDeviceRun.h"
#include "MpiTestUtil.h"
#include "ProgressCheck.h"
#include "TestUtil.h"

#include "moecomm/moecomm_mpi.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

using namespace moecomm;
using namespace moecomm::test;

namespace {

CaseSpec cell(int W, int G, int64_t E, int K, int64_t H, moecommDataType_t data,
              moecommDataType_t wire, RoutingKind rk, int64_t T,
              int64_t capacity = 0) {
  const uint64_t seed = W * 31 + G * 7 + K + H;
  return CaseSpec{W, G, E, K, H, data, wire, rk, T, capacity, true, seed};
}

/// Runs every strategy of `spec` on `mpiComm` (of spec.W ranks).
void runCell(MPI_Comm mpiComm, const CaseSpec &spec) {
  SCOPED_TRACE(spec.name());
  int rank = 0;
  MPI_Comm_rank(mpiComm, &rank);
  Expected exp = computeExpected(makeProblem(spec));
  moecommComm_t comm = nullptr;
  moecommResult_t init = moecommCommInitMpi(&comm, mpiComm, spec.G);
  EXPECT_EQ(init, moecommSuccess) << moecommCommGetLastError(nullptr);
  if (init != moecommSuccess)
    return; // every rank failed the same collective init
  moecommBackend_t backend;
  moecommCommBackend(comm, &backend);
  EXPECT_EQ(backend, moecommBackendMpi);
  // The default chunks, then the most: every block cut into
  // min(32 / members, rows) chunks that flow into the next stage one by one
  // (PipelinedOp.cpp).
  for (int64_t chunkBytes : {MOECOMM_DEFAULT_PIPELINE_CHUNK_BYTES, 1}) {
    EXPECT_EQ(moecommCommSetPipelineChunkBytes(comm, chunkBytes),
              moecommSuccess);
    for (moecommStrategy_t s :
         {moecommPerExpert, moecommFlat, moecommHierarchical, moecommAuto}) {
      SCOPED_TRACE("strategy " + std::to_string(s) + ", chunk bytes " +
                   std::to_string(chunkBytes));
      RankRun run = runRank(comm, exp, s, rank);
      checkRankOnMpi(exp, s, rank, run, mpiComm);
    }
  }
  EXPECT_EQ(moecommCommDestroy(comm), moecommSuccess);
}

TEST(Mpi, OracleMatrix) {
  const int W = worldSize();
  constexpr auto F32 = moecommFloat32, BF16 = moecommBfloat16,
                 FP8 = moecommFloat8E4M3;
  using RK = RoutingKind;
  std::vector<CaseSpec> cells;
  for (int G : {1, 2, 4, 8}) {
    if (G > W || W % G)
      continue;
    cells.push_back(cell(W, G, 8 * W, 3, 24, BF16, FP8, RK::Skewed, 7));
    cells.push_back(cell(W, G, 4 * W, 5, 7, F32, F32, RK::UniformMasked, 6));
  }
  cells.push_back(cell(W, 2, 2 * W, 2, 7168, BF16, BF16, RK::Uniform, 3));
  cells.push_back(cell(W, 2, 8 * W, 8, 128, BF16, FP8, RK::EmptyRanks, 5));
  cells.push_back(cell(W, W / 2, 2 * W, 2, 300, F32, F32, RK::OneExpert, 8, 9));
  for (const CaseSpec &c : cells)
    runCell(MPI_COMM_WORLD, c);
}

// The device form of the compiled ABI on the host device of an mpi
// communicator (CompiledDeviceRun.h): one-shot and staged dispatch and
// combine with device-allocated rows against the oracle, the combines
// bit-identical to the runtime's own.
TEST(Mpi, CompiledDeviceForm) {
  const int W = worldSize(), rank = worldRank();
  CaseSpec spec = cell(W, 2, 4 * W, 3, 40, moecommFloat32, moecommFloat32,
                       RoutingKind::UniformMasked, 6);
  Expected exp = computeExpected(makeProblem(spec));
  moecommComm_t comm = nullptr;
  moecommResult_t init = moecommCommInitMpi(&comm, MPI_COMM_WORLD, 2);
  ASSERT_EQ(init, moecommSuccess) << moecommCommGetLastError(nullptr);
  for (moecommStrategy_t s :
       {moecommPerExpert, moecommFlat, moecommHierarchical, moecommAuto}) {
    SCOPED_TRACE("strategy " + std::to_string(s));
    RankRun host = runRank(comm, exp, s, rank);
    CompiledDeviceRun run = runCompiledDevice(comm, exp, rank, s, nullptr);
    checkCompiledDeviceRun(exp, rank, run, host.combineW);
  }
  EXPECT_EQ(moecommCommDestroy(comm), moecommSuccess);
}

// Expert segments aligned to 16 and 128 rows (AlignTest.cpp's checks
// against the padded reference): T = 0 ranks, one expert for every token,
// masked slots, capacity drops, H not a multiple of 32 or 128, FP8 wire.
TEST(Mpi, AlignedSegments) {
  const int W = worldSize();
  using RK = RoutingKind;
  std::vector<CaseSpec> cells = {
      cell(W, 2, 8 * W, 8, 129, moecommBfloat16, moecommFloat8E4M3,
           RK::EmptyRanks, 5),
      cell(W, 2, 2 * W, 3, 33, moecommFloat32, moecommFloat32,
           RK::UniformMasked, 6, 7),
      cell(W, W / 2, 2 * W, 2, 300, moecommBfloat16, moecommFloat8E4M3,
           RK::OneExpert, 8),
  };
  for (int64_t align : {16, 128})
    for (CaseSpec c : cells) {
      c.align = align;
      runCell(MPI_COMM_WORLD, c);
    }
}

// The E8M0-scale wire formats (fp8_e4m3_ue8m0, mxfp8) against the oracle:
// T = 0 ranks, one expert for every token, masked slots, H not a multiple
// of 32 or 128, one and two stages, and aligned segments (padding rows with
// scale byte 127).
TEST(Mpi, E8M0WireFormats) {
  const int W = worldSize();
  using RK = RoutingKind;
  for (moecommDataType_t wire : {moecommFloat8E4M3UE8M0, moecommMxfp8}) {
    std::vector<CaseSpec> cells = {
        cell(W, 2, 8 * W, 8, 129, moecommBfloat16, wire, RK::EmptyRanks, 5),
        cell(W, W / 2, 2 * W, 2, 300, moecommBfloat16, wire, RK::OneExpert,
             8),
        cell(W, 1, 4 * W, 3, 40, moecommFloat32, wire, RK::UniformMasked, 6),
    };
    for (const CaseSpec &c : cells)
      runCell(MPI_COMM_WORLD, c);
    CaseSpec aligned = cells[0];
    aligned.align = 16;
    runCell(MPI_COMM_WORLD, aligned);
  }
}

/// A cell with an expert placement (Placement.h) of `S` slots: slot s < E
/// holds expert s, slot s >= E `spare(s)`.
CaseSpec placedCell(CaseSpec c, int64_t S, int64_t (*spare)(int64_t s,
                                                             int64_t E)) {
  c.slotExperts.resize(S);
  for (int64_t s = 0; s < S; ++s)
    c.slotExperts[s] = s < c.E ? s : spare(s, c.E);
  return c;
}

// Replicated experts (issue 16 part 3) against the oracle with both replica
// choices: every expert twice (the second copies mirrored onto other ranks
// and nodes), T = 0 ranks, masked slots, FP8 wire, H not a multiple of 32 or
// 128, align 16; and every token to one expert with W more replicas.
TEST(Mpi, ReplicatedExperts) {
  const int W = worldSize();
  using RK = RoutingKind;
  auto mirrored = [](int64_t s, int64_t E) { return 2 * E - 1 - s; };
  auto hot = [](int64_t, int64_t E) { return E - 1; };
  std::vector<CaseSpec> cells = {
      placedCell(cell(W, 2, 4 * W, 4, 129, moecommBfloat16, moecommFloat8E4M3,
                      RK::EmptyRanks, 5),
                 8 * W, mirrored),
      placedCell(cell(W, W / 2, 2 * W, 3, 33, moecommFloat32, moecommFloat32,
                      RK::UniformMasked, 6, 7),
                 4 * W, mirrored),
      placedCell(cell(W, 2, 2 * W, 1, 40, moecommFloat32, moecommFloat32,
                      RK::OneExpert, 8),
                 3 * W, hot),
  };
  cells[1].align = 16;
  for (moecommReplicaChoice_t choice :
       {moecommReplicaLocality, moecommReplicaLoadOnly})
    for (CaseSpec c : cells) {
      c.choice = choice;
      runCell(MPI_COMM_WORLD, c);
    }
}

TEST(Mpi, SubCommunicators) {
  // Two independent pairs of ranks (W = 2) next to each other.
  MPI_Comm pair;
  MPI_Comm_split(MPI_COMM_WORLD, worldRank() / 2, worldRank(), &pair);
  runCell(pair, cell(2, 1, 16, 5, 129, moecommBfloat16, moecommFloat8E4M3,
                     RoutingKind::Skewed, 9));
  runCell(pair, cell(2, 2, 4, 1, 1, moecommFloat32, moecommFloat32,
                     RoutingKind::AllMasked, 4));
  MPI_Comm_free(&pair);
}

TEST(Mpi, FaultsAreAgreedAndRecoverable) {
  const int W = worldSize(), r = worldRank();
  moecommComm_t comm = nullptr;
  ASSERT_EQ(moecommCommInitMpi(&comm, MPI_COMM_WORLD, 2), moecommSuccess);
  auto lastError = [&] { return std::string(moecommCommGetLastError(comm)); };
  // A bad expert id on rank 2.
  CaseSpec s = cell(W, 2, 256, 2, 16, moecommFloat32, moecommFloat32,
                    RoutingKind::Uniform, 6);
  Expected good = computeExpected(makeProblem(s));
  ref::Problem bad = good.problem;
  bad.routing[2].topkIdx[1] = 300;
  moecommLayoutDesc_t d = descFor(bad, r, moecommHierarchical);
  moecommLayout_t l = nullptr;
  EXPECT_EQ(moecommLayoutCreate(comm, &d, &l), moecommInvalidArgument);
  EXPECT_EQ(lastError(),
            "rank 2 token 0 slot 1: expert id 300 out of range [-1, 256)");
  // Ranks disagree on K.
  CaseSpec s4 = s;
  s4.K = 4;
  ref::Problem k4 = makeProblem(s4);
  d = descFor(r == W - 1 ? k4 : good.problem, r, moecommFlat);
  EXPECT_EQ(moecommLayoutCreate(comm, &d, &l), moecommMismatch);
  EXPECT_EQ(lastError(), "ranks disagree on topk: rank 0 has 2, rank " +
                             std::to_string(W - 1) + " has 4");
  // A bad align on the last rank, then ranks that disagree on align.
  d = descFor(good.problem, r, moecommHierarchical);
  d.align = r == W - 1 ? 24 : 1;
  EXPECT_EQ(moecommLayoutCreate(comm, &d, &l), moecommInvalidArgument);
  EXPECT_EQ(lastError(), "rank " + std::to_string(W - 1) +
                             ": align 24 is not a power of two in [1, 65536]");
  d.align = r == 1 ? 128 : 16;
  EXPECT_EQ(moecommLayoutCreate(comm, &d, &l), moecommMismatch);
  EXPECT_EQ(lastError(),
            "ranks disagree on align: rank 0 has 16, rank 1 has 128");
  // A placement missing an expert on the last rank, then ranks that
  // disagree on the placement.
  std::vector<int64_t> slots(512);
  for (int64_t e = 0; e < 512; ++e)
    slots[e] = e % 256;
  d = descFor(good.problem, r, moecommHierarchical);
  d.numSlots = 512;
  d.slotExperts = slots.data();
  if (r == W - 1)
    slots[7] = slots[263] = 0;
  EXPECT_EQ(moecommLayoutCreate(comm, &d, &l), moecommInvalidArgument);
  EXPECT_EQ(lastError(), "rank " + std::to_string(W - 1) +
                             ": placement: logical expert 7 has no slot");
  slots[7] = slots[263] = 7;
  if (r == 1)
    std::swap(slots[0], slots[1]);
  EXPECT_EQ(moecommLayoutCreate(comm, &d, &l), moecommMismatch);
  EXPECT_EQ(lastError().rfind("ranks disagree on the placement's slot_experts",
                              0),
            0u)
      << lastError();
  // all_to_all counts that are not a transpose: error before any payload.
  std::vector<int64_t> send(W, 1), recv(W, 1);
  if (r == 1)
    recv[2] = 5;
  std::vector<float> sb(W * 2, (float)r), rb(W * 2 + 4 * 2, -1.0f);
  moecommRows_t sv{sb.data(), nullptr, W, 2, moecommFloat32};
  moecommRows_t rv{rb.data(), nullptr, r == 1 ? W + 4 : W, 2, moecommFloat32};
  EXPECT_EQ(moecommAllToAll(comm, &sv, send.data(), &rv, recv.data(), nullptr),
            moecommMismatch);
  EXPECT_EQ(lastError(),
            "rank 1 expects 5 rows from rank 2 but rank 2 sends 1");
  for (float v : rb)
    EXPECT_EQ(v, -1.0f);
  // Different collectives.
  int64_t one = 1;
  moecommResult_t res =
      r == 0 ? moecommBarrier(comm) : moecommAllReduceSum(comm, &one, 1);
  EXPECT_EQ(res, moecommMismatch);
  // Ranks disagree on the pipeline chunk bytes (they would cut blocks into
  // different messages): every dispatch fails before any payload moves.
  {
    moecommLayout_t good0 = nullptr;
    d = descFor(good.problem, r, moecommHierarchical);
    EXPECT_EQ(moecommLayoutCreate(comm, &d, &good0), moecommSuccess);
    moecommLayoutInfo_t info{};
    moecommLayoutGetInfo(good0, &info);
    const ref::Problem &p = good.problem;
    Rows x = Rows::fromValues(good.x[r], p.hidden, p.dataType);
    Rows recvRows(info.recvRows, p.hidden, p.dataType);
    EXPECT_EQ(moecommCommSetPipelineChunkBytes(comm, r == 1 ? 4096 : 1 << 18),
              moecommSuccess);
    EXPECT_EQ(moecommDispatch(comm, good0, x.view(), p.wireType,
                              recvRows.view(), nullptr),
              moecommMismatch);
    EXPECT_EQ(lastError(), "ranks disagree on the pipeline chunk bytes: "
                           "rank 0 has 262144, rank 1 has 4096");
    // Started, the same disagreement is decided in flight (AgreedOp.h): the
    // start returns at once, the wait reports it, and no payload moved.
    std::vector<float> before = recvRows.values();
    moecommRequest_t q = nullptr;
    EXPECT_EQ(moecommDispatchStart(comm, good0, x.view(), p.wireType,
                                   recvRows.view(), nullptr, &q),
              moecommSuccess);
    EXPECT_EQ(moecommWait(q), moecommMismatch);
    EXPECT_EQ(lastError(), "ranks disagree on the pipeline chunk bytes: "
                           "rank 0 has 262144, rank 1 has 4096");
    EXPECT_TRUE(sameBits(recvRows.values(), before));
    EXPECT_EQ(moecommCommSetPipelineChunkBytes(comm, 1 << 18), moecommSuccess);
    // A blocking collective on rank 0 meets the others' started one in the
    // same agreement: Mismatch everywhere, no hang.
    if (r == 0) {
      EXPECT_EQ(moecommBarrier(comm), moecommMismatch);
    } else {
      EXPECT_EQ(moecommDispatchStart(comm, good0, x.view(), p.wireType,
                                     recvRows.view(), nullptr, &q),
                moecommSuccess);
      EXPECT_EQ(moecommWait(q), moecommMismatch);
    }
    EXPECT_EQ(lastError(), "ranks disagree on the collective: rank 0 calls "
                           "moecommBarrier, rank 1 calls moecommDispatch");
    EXPECT_EQ(moecommCommSetPipelineChunkBytes(comm, 0), moecommInvalidArgument);
    EXPECT_EQ(lastError(), "pipeline chunk bytes must be in [1, 2^40], got 0");
    EXPECT_EQ(moecommCommSetPipelineChunkBytes(
                  comm, MOECOMM_DEFAULT_PIPELINE_CHUNK_BYTES),
              moecommSuccess);
    moecommLayoutDestroy(good0);
  }
  // Still usable: a correct all_to_all and a full run.
  recv[2] = 1;
  rv.rows = W;
  EXPECT_EQ(moecommAllToAll(comm, &sv, send.data(), &rv, recv.data(), nullptr),
            moecommSuccess);
  for (int src = 0; src < W; ++src)
    EXPECT_EQ(rb[src * 2], (float)src);
  RankRun run = runRank(comm, good, moecommHierarchical, r);
  checkRank(good, moecommHierarchical, r, run);
  EXPECT_EQ(moecommCommDestroy(comm), moecommSuccess);
}

// A block above the transport's 1 MiB message bound travels as several
// messages of one tag (MpiTransport.cpp); every byte lands where it belongs,
// started and blocking, with intra- and inter-node peers.
TEST(Mpi, BlocksAboveOneMessage) {
  const int W = worldSize(), r = worldRank();
  moecommComm_t comm = nullptr;
  ASSERT_EQ(moecommCommInitMpi(&comm, MPI_COMM_WORLD, 2), moecommSuccess);
  // 700 rows of 1000 f32: 2.8 MB per peer, pieces of 1 MiB, 1 MiB, rest.
  const int64_t n = 700, H = 1000;
  // Exact in f32 (below 2^23) and different for every element of a block.
  auto value = [&](int src, int dst, int64_t i) {
    return static_cast<float>((7 * i + 131 * src + 17 * dst) % (1 << 23));
  };
  std::vector<int64_t> counts(W, n);
  std::vector<float> sb(W * n * H), rb(W * n * H, -1.0f);
  for (int dst = 0; dst < W; ++dst)
    for (int64_t i = 0; i < n * H; ++i)
      sb[dst * n * H + i] = value(r, dst, i);
  moecommRows_t sv{sb.data(), nullptr, W * n, H, moecommFloat32};
  moecommRows_t rv{rb.data(), nullptr, W * n, H, moecommFloat32};
  for (bool started : {false, true}) {
    std::fill(rb.begin(), rb.end(), -1.0f);
    if (started) {
      moecommRequest_t q = nullptr;
      ASSERT_EQ(moecommAllToAllStart(comm, &sv, counts.data(), &rv,
                                     counts.data(), nullptr, &q),
                moecommSuccess);
      ASSERT_EQ(moecommWait(q), moecommSuccess);
    } else {
      ASSERT_EQ(moecommAllToAll(comm, &sv, counts.data(), &rv, counts.data(),
                                nullptr),
                moecommSuccess);
    }
    int64_t wrong = 0;
    for (int src = 0; src < W; ++src)
      for (int64_t i = 0; i < n * H; ++i)
        wrong += rb[src * n * H + i] != value(src, r, i);
    EXPECT_EQ(wrong, 0) << (started ? "started" : "blocking");
  }
  EXPECT_EQ(moecommCommDestroy(comm), moecommSuccess);
}

TEST(Mpi, InitErrors) {
  const int r = worldRank();
  moecommComm_t comm = nullptr;
  EXPECT_EQ(moecommCommInitMpi(&comm, MPI_COMM_WORLD, 3),
            moecommInvalidArgument);
  EXPECT_EQ(moecommCommInitMpi(&comm, MPI_COMM_WORLD, r == 0 ? 1 : 2),
            moecommMismatch);
  EXPECT_EQ(comm, nullptr);
  EXPECT_EQ(moecommCommInitMpi(&comm, MPI_COMM_NULL, 1),
            moecommInvalidArgument);
}

TEST(Mpi, StartWaitOutOfOrder) {
  const int W = worldSize(), r = worldRank();
  moecommComm_t comm = nullptr;
  ASSERT_EQ(moecommCommInitMpi(&comm, MPI_COMM_WORLD, 2), moecommSuccess);
  CaseSpec s = cell(W, 2, 4 * W, 3, 40, moecommBfloat16, moecommFloat8E4M3,
                    RoutingKind::Uniform, 8);
  Expected exp = computeExpected(makeProblem(s));
  const ref::Problem &p = exp.problem;
  moecommLayoutDesc_t d = descFor(p, r, moecommHierarchical);
  moecommLayout_t l = nullptr;
  EXPECT_EQ(moecommLayoutCreate(comm, &d, &l), moecommSuccess);
  moecommLayoutInfo_t info{};
  moecommLayoutGetInfo(l, &info);
  Rows x = Rows::fromValues(exp.x[r], p.hidden, p.dataType);
  Rows y = Rows::fromValues(exp.y[r], p.hidden, p.dataType);
  y.rows.rows = info.recvRows;
  Rows r1(info.recvRows, p.hidden, p.dataType),
      r2(info.recvRows, p.hidden, p.dataType),
      o1(p.routing[r].numTokens, p.hidden, p.dataType),
      o2(p.routing[r].numTokens, p.hidden, p.dataType);
  moecommRequest_t q[3] = {};
  EXPECT_EQ(moecommDispatchStart(comm, l, x.view(), p.wireType, r1.view(),
                                 nullptr, &q[0]),
            moecommSuccess);
  // The next requests are cut into the most chunks; the outstanding one
  // keeps the size it started with.
  EXPECT_EQ(moecommCommSetPipelineChunkBytes(comm, 1), moecommSuccess);
  EXPECT_EQ(
      moecommCombineStart(comm, l, y.view(), 1, o1.view(), nullptr, &q[1]),
      moecommSuccess);
  EXPECT_EQ(moecommDispatchStart(comm, l, x.view(), p.wireType, r2.view(),
                                 nullptr, &q[2]),
            moecommSuccess);
  for (int i = 2; i >= 0; --i)
    EXPECT_EQ(moecommWait(q[i]), moecommSuccess);
  EXPECT_TRUE(sameBits(r1.values(), exp.dispatch[r]));
  EXPECT_TRUE(sameBits(r2.values(), exp.dispatch[r]));
  EXPECT_EQ(moecommCombine(comm, l, y.view(), 1, o2.view(), nullptr),
            moecommSuccess);
  EXPECT_TRUE(sameBits(o1.values(), o2.values()));
  moecommLayoutDestroy(l);
  EXPECT_EQ(moecommCommDestroy(comm), moecommSuccess);
}

/// Runs body(comm, rank) on a communicator over each group of `size`
/// consecutive ranks (`ranksPerNode` per node), then destroys it.
template <typename Body>
void onGroups(int size, int ranksPerNode, const Body &body) {
  const int world = worldRank();
  MPI_Comm group;
  MPI_Comm_split(MPI_COMM_WORLD, world / size, world, &group);
  int rank = 0;
  MPI_Comm_rank(group, &rank);
  moecommComm_t comm = nullptr;
  moecommResult_t init = moecommCommInitMpi(&comm, group, ranksPerNode);
  EXPECT_EQ(init, moecommSuccess) << moecommCommGetLastError(nullptr);
  if (init == moecommSuccess) { // the same on every rank of the group
    body(comm, rank);
    EXPECT_EQ(moecommCommDestroy(comm), moecommSuccess);
  }
  MPI_Comm_free(&group);
}

/// The body of MoreOutstandingRequestsThanTags (below) on `comm`, 2 ranks on
/// 2 nodes, as rank r.
void checkRequestsKeepTheirRows(moecommComm_t comm, int r) {
  const ref::Problem p =
      makeProblem(cell(2, 1, 4, 2, 64, moecommFloat32, moecommFloat32,
                       RoutingKind::Uniform, 64));
  moecommLayoutDesc_t d = descFor(p, r, moecommFlat);
  moecommLayout_t l = nullptr;
  EXPECT_EQ(moecommLayoutCreate(comm, &d, &l), moecommSuccess);
  moecommLayoutInfo_t info{};
  moecommLayoutGetInfo(l, &info);
  // Three rows per piece: several pieces per block.
  EXPECT_EQ(moecommCommSetPipelineChunkBytes(comm, 3 * 64 * 4), moecommSuccess);
  const int n = 1600;
  const int64_t T = p.routing[r].numTokens, H = p.hidden;
  // Small integers: the top-k copies sum exactly, and requests differ.
  auto x = [&](int i) {
    std::vector<float> v(T * H);
    for (int64_t e = 0; e < T * H; ++e)
      v[e] = static_cast<float>(1000 * i + (e * 7 + r * 131) % 1000);
    return v;
  };
  std::vector<Rows> xs, recv;
  std::vector<moecommRequest_t> q(n, nullptr);
  for (int i = 0; i < n; ++i) {
    xs.push_back(Rows::fromValues(x(i), H, moecommFloat32));
    recv.emplace_back(info.recvRows, H, moecommFloat32);
  }
  if (r == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(moecommDispatchStart(comm, l, xs[i].view(), moecommFloat32,
                                   recv[i].view(), nullptr, &q[i]),
              moecommSuccess);
  if (r == 0)
    std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(moecommBarrier(comm), moecommSuccess);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(moecommWait(q[i]), moecommSuccess) << "request " << i;
  int wrong = 0;
  Rows out(T, H, moecommFloat32);
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(moecommCombine(comm, l, recv[i].view(), 0, out.view(), nullptr),
              moecommSuccess);
    std::vector<float> want = x(i);
    for (float &v : want)
      v *= static_cast<float>(p.topk);
    wrong += !sameBits(out.values(), want);
  }
  EXPECT_EQ(wrong, 0) << "requests whose rows came back wrong, of " << n;
  moecommLayoutDestroy(l);
}

// More started collectives than the MPI tags tell apart (they repeat every
// 32000 sequence numbers, some 490 collectives, MpiTransport.cpp): every
// request still receives its own rows. In pairs of ranks (on two nodes),
// rank 1 starts its requests and blocks in a barrier; rank 0 starts late,
// so its progress thread begins all of its requests and sends their pieces
// before rank 1 posts any receive; then rank 1's progress thread begins its
// requests, each posting a piece's receive as the earlier ones arrive.
// Before Comm::reserveSeqs completed the oldest requests first, request
// i + 1477's first pieces (tags 5 above request i's first) took request i's
// later pieces on rank 1 (246 of 1600 requests wrong).
TEST(Mpi, MoreOutstandingRequestsThanTags) {
  onGroups(2, 1, checkRequestsKeepTheirRows);
}

// Groups of 4 ranks (2 nodes x 2): a started hierarchical dispatch and
// combine complete, relay and unpack included, while every caller sleeps
// (the progress thread drives MPI and the pipelined stages).
TEST(Mpi, RequestCompletesWithoutTheCaller) {
  const Expected exp = computeExpected(makeProblem(largeExchangeSpec(4, 2)));
  onGroups(4, 2, [&](moecommComm_t comm, int rank) {
    checkCompletesUnattended(comm, exp, rank);
  });
}

// A bound on waste, not a timing: a spinning progress thread would use
// about the whole second.
TEST(Mpi, IdleCommunicatorUsesNoCpu) {
  moecommComm_t comm = nullptr;
  moecommResult_t init = moecommCommInitMpi(&comm, MPI_COMM_WORLD, 2);
  EXPECT_EQ(init, moecommSuccess) << moecommCommGetLastError(nullptr);
  if (init != moecommSuccess)
    return; // every rank failed the same collective init
  EXPECT_EQ(moecommBarrier(comm), moecommSuccess);
  const double before = progressThreadCpuSeconds();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double used = progressThreadCpuSeconds() - before;
  EXPECT_LT(used, 0.05) << "progress thread's CPU seconds in 1 s with an idle communicator";
  EXPECT_EQ(moecommBarrier(comm), moecommSuccess);
  EXPECT_EQ(moecommCommDestroy(comm), moecommSuccess);
}

} // namespace

int main(int argc, char **argv) {
  // moecomm's mpi backend needs MPI_THREAD_MULTIPLE (docs/runtime.md).
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  const int worst = runAllTestsOnEveryRank();
  MPI_Finalize();
  return worst;
}
