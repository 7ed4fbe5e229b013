//===- CapacityTest.cpp - Capacity mode on one GPU ------------------------===//
//
// moecommCapacityPlan on a single-rank nccl communicator (its exchange is a
// fixed-size NCCL send/recv to self): dispatch and combine against the
// reference with the same capacity (Reference.h: drops, expert-major rows,
// tokens per expert, weights, sources; per_expert combine is bit-exact),
// FP8 on the wire, int32 ids, a small pair capacity, invalid / repeated ids
// (masked and flagged, no error possible without a host sync), and a CUDA
// graph captured once and replayed with new routing.
//
//===----------------------------------------------------------------------===//
#include "GpuTestUtil.h"

#include "moecomm/moecomm_nccl.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstring>

using namespace moecomm;
using namespace moecomm::test;

namespace {

constexpr moecommDataType_t F32 = moecommFloat32, BF16 = moecommBfloat16,
                            FP8 = moecommFloat8E4M3,
                            MXFP8 = moecommMxfp8;

class Capacity : public NcclSingleRankTest {};

/// What the plan's outputs hold after a dispatch (host copies).
struct Outputs {
  int64_t recvRows = -1, dropped = -1;
  int32_t flags = -1;
  std::vector<int64_t> tokensPerExpert, sources;
  std::vector<float> weights;
};

Outputs readOutputs(moecommCapacityPlan_t plan, int64_t L) {
  moecommCapacityOutputs_t o{};
  EXPECT_EQ(moecommCapacityPlanGetOutputs(plan, &o), moecommSuccess);
  Outputs r;
  cudaDeviceSynchronize();
  cudaMemcpy(&r.recvRows, o.recvRows, 8, cudaMemcpyDeviceToHost);
  cudaMemcpy(&r.dropped, o.dropped, 8, cudaMemcpyDeviceToHost);
  cudaMemcpy(&r.flags, o.flags, 4, cudaMemcpyDeviceToHost);
  r.tokensPerExpert.resize(L);
  cudaMemcpy(r.tokensPerExpert.data(), o.tokensPerExpert, L * 8,
             cudaMemcpyDeviceToHost);
  r.weights.resize(o.capacity);
  cudaMemcpy(r.weights.data(), o.recvWeights, o.capacity * 4,
             cudaMemcpyDeviceToHost);
  r.sources.resize(2 * o.capacity);
  cudaMemcpy(r.sources.data(), o.recvSources, o.capacity * 16,
             cudaMemcpyDeviceToHost);
  return r;
}

struct CapCase {
  int64_t E, T;
  int K;
  int64_t H, C, P;
  moecommDataType_t data, wire, idx;
  RoutingKind routing;
};

/// The reference for `p` with capacity `c` (the plan's effective rule when
/// W = 1 is capacity min(C, P)).
Expected expectedWithCapacity(ref::Problem p, int64_t c) {
  p.capacity = c;
  return computeExpected(p);
}

void runCase(moecommComm_t comm, cudaStream_t stream, const CapCase &c) {
  CaseSpec spec;
  spec.W = 1;
  spec.G = 1;
  spec.E = c.E;
  spec.K = c.K;
  spec.H = c.H;
  spec.data = c.data;
  spec.wire = c.wire;
  spec.routing = c.routing;
  spec.T = c.T;
  spec.randomWeights = true;
  spec.seed = (uint64_t)(c.E + c.T + c.K + c.H + c.C);
  ref::Problem p = makeProblem(spec);
  const int64_t T = p.routing[0].numTokens, H = p.hidden, K = p.topk;
  const int64_t effective = c.P > 0 ? std::min(c.C, c.P) : c.C;
  Expected exp = expectedWithCapacity(p, effective);
  const ref::RankLayout &L = exp.layout[0];
  SCOPED_TRACE(spec.name() + " C " + std::to_string(c.C) + " P " +
               std::to_string(c.P));

  moecommCapacityDesc_t d =
      capacityDesc(T, (int32_t)K, c.E, c.C, H, c.data, c.wire);
  d.pairCapacity = c.P;
  d.idxType = c.idx;
  moecommCapacityPlan_t plan = nullptr;
  ASSERT_EQ(moecommCapacityPlanCreate(comm, &d, &plan), moecommSuccess)
      << moecommCommGetLastError(comm);

  std::vector<int32_t> idx32(p.routing[0].topkIdx.begin(),
                             p.routing[0].topkIdx.end());
  DeviceArray<int64_t> idx64(p.routing[0].topkIdx);
  DeviceArray<int32_t> didx32(idx32);
  DeviceArray<float> w(p.routing[0].topkWeights);
  const void *idx = c.idx == moecommInt32 ? (const void *)didx32.data()
                                          : (const void *)idx64.data();
  Rows xh = Rows::fromValues(exp.x[0], H, c.data);
  xh.rows.rows = T;
  DeviceRows x = DeviceRows::from(xh), recv(c.C, H, c.data);
  ASSERT_EQ(moecommCapacityDispatch(plan, idx, w.data(), x.view(), recv.view(),
                                    stream),
            moecommSuccess)
      << moecommCommGetLastError(comm);
  Outputs o = readOutputs(plan, c.E);
  const int64_t R = (int64_t)L.rows.size();
  EXPECT_EQ(o.recvRows, R);
  EXPECT_EQ(o.dropped, L.dropped);
  EXPECT_EQ(o.flags, L.dropped > 0 ? MOECOMM_CAPACITY_OVERFLOW : 0);
  EXPECT_EQ(o.tokensPerExpert, L.tokensPerExpert);
  for (int64_t i = 0; i < R; ++i) {
    EXPECT_EQ(o.sources[2 * i], 0) << "row " << i;
    EXPECT_EQ(o.sources[2 * i + 1], L.rows[i].srcToken) << "row " << i;
    EXPECT_EQ(std::memcmp(&o.weights[i], &L.rows[i].weight, 4), 0)
        << "weight of row " << i;
  }
  for (int64_t i = R; i < c.C; ++i) {
    EXPECT_EQ(o.sources[2 * i], -1) << "padding row " << i;
    EXPECT_EQ(o.weights[i], 0.0f) << "padding row " << i;
  }
  std::vector<float> got = recv.values();
  std::vector<float> head(got.begin(), got.begin() + R * H);
  EXPECT_TRUE(sameBits(head, exp.dispatch[0])) << "recv rows [0, R)";
  for (int64_t i = R * H; i < c.C * H; ++i)
    ASSERT_EQ(got[i], 0.0f) << "padding element " << i;

  // Combine of y (rows past R are ignored: fill them with garbage).
  Rows yh = Rows::fromValues(exp.y[0], H, c.data);
  Rows yFull(c.C, H, c.data);
  std::memcpy(yFull.data.data(), yh.data.data(), yh.data.size());
  DeviceRows y = DeviceRows::from(yFull);
  for (int weighted : {1, 0}) {
    DeviceRows out(T, H, c.data);
    ASSERT_EQ(
        moecommCapacityCombine(plan, y.view(), weighted, out.view(), stream),
        moecommSuccess)
        << moecommCommGetLastError(comm);
    EXPECT_TRUE(
        sameBits(out.values(), weighted ? exp.combineW[0] : exp.combineU[0]))
        << (weighted ? "weighted" : "unweighted") << " combine";
  }
  EXPECT_EQ(moecommCapacityPlanDestroy(plan), moecommSuccess);
}

TEST_F(Capacity, MatchesTheReference) {
  using RK = RoutingKind;
  const CapCase cases[] = {
      // No drops: C holds everything.
      {16, 40, 4, 256, 1000, 0, BF16, BF16, moecommInt64, RK::Uniform},
      {8, 33, 3, 129, 200, 0, F32, F32, moecommInt32, RK::UniformMasked},
      {64, 20, 8, 7168, 400, 0, BF16, FP8, moecommInt64, RK::Skewed},
      // Drops at the destination (latest tokens first).
      {16, 40, 4, 24, 57, 0, BF16, BF16, moecommInt64, RK::Uniform},
      {8, 30, 5, 300, 41, 0, BF16, FP8, moecommInt32, RK::OneExpert},
      {8, 30, 5, 300, 41, 0, BF16, MXFP8, moecommInt64, RK::Skewed},
      // A pair capacity below the default also drops (at the source).
      {16, 40, 4, 24, 1000, 50, F32, F32, moecommInt64, RK::Uniform},
      // Nothing routed / no tokens.
      {8, 10, 2, 16, 8, 0, BF16, BF16, moecommInt64, RK::AllMasked},
      {8, 0, 2, 16, 8, 0, BF16, FP8, moecommInt64, RK::Uniform},
  };
  for (const CapCase &c : cases)
    runCase(comm_, stream_, c);
}

TEST_F(Capacity, BadAndRepeatedIdsAreMaskedAndFlagged) {
  const int64_t E = 8, T = 4, H = 16, C = 64;
  const int K = 3;
  // Row 1: an id out of range; row 2: a repeat; row 3: -2.
  std::vector<int64_t> ids = {0, 5, 7, 1, 9, 2, 3, 4, 3, -2, 6, -1};
  std::vector<float> w(T * K, 0.5f);
  moecommCapacityDesc_t d = capacityDesc(T, K, E, C, H, F32, F32);
  moecommCapacityPlan_t plan = nullptr;
  ASSERT_EQ(moecommCapacityPlanCreate(comm_, &d, &plan), moecommSuccess)
      << moecommCommGetLastError(comm_);
  DeviceArray<int64_t> didx(ids);
  DeviceArray<float> dw(w);
  std::vector<float> xv(T * H);
  for (size_t i = 0; i < xv.size(); ++i)
    xv[i] = (float)i;
  DeviceRows x = DeviceRows::from(Rows::fromValues(xv, H, F32)),
             recv(C, H, F32);
  ASSERT_EQ(moecommCapacityDispatch(plan, didx.data(), dw.data(), x.view(),
                                    recv.view(), stream_),
            moecommSuccess);
  Outputs o = readOutputs(plan, E);
  EXPECT_EQ(o.flags, MOECOMM_CAPACITY_BAD_EXPERT | MOECOMM_CAPACITY_DUPLICATE);
  // Kept: row0 {0,5,7}, row1 {1,2}, row2 {3,4}, row3 {6}: 8 rows.
  EXPECT_EQ(o.recvRows, 8);
  EXPECT_EQ(o.dropped, 0);
  EXPECT_EQ(o.tokensPerExpert, (std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 1}));
  // Expert-major: expert e's row comes from the token that routes to it.
  const int64_t tokenOfExpert[8] = {0, 1, 1, 2, 2, 0, 3, 0};
  for (int e = 0; e < 8; ++e)
    EXPECT_EQ(o.sources[2 * e + 1], tokenOfExpert[e]) << "expert " << e;
  // A clean dispatch afterwards resets the flags.
  std::vector<int64_t> good = {0, 5, 7, 1, 4, 2, 3, 4, 6, 0, 6, -1};
  DeviceArray<int64_t> dgood(good);
  ASSERT_EQ(moecommCapacityDispatch(plan, dgood.data(), dw.data(), x.view(),
                                    recv.view(), stream_),
            moecommSuccess);
  EXPECT_EQ(readOutputs(plan, E).flags, 0);
  EXPECT_EQ(moecommCapacityPlanDestroy(plan), moecommSuccess);
}

TEST_F(Capacity, ArgumentErrors) {
  moecommCapacityDesc_t d =
      capacityDesc(4, 2, 8, /*capacity (bad)=*/0, 16, BF16, BF16);
  moecommCapacityPlan_t plan = nullptr;
  EXPECT_EQ(moecommCapacityPlanCreate(comm_, &d, &plan),
            moecommInvalidArgument);
  EXPECT_EQ(std::string(moecommCommGetLastError(comm_)),
            "rank 0: capacity must be in [1, 2^31), got 0");
  d.capacity = 16;
  d.wireType = F32;
  EXPECT_EQ(moecommCapacityPlanCreate(comm_, &d, &plan),
            moecommInvalidArgument);
  // Sizes whose products overflow int64 are errors, not wrapped sizes.
  d.wireType = BF16;
  d.hidden = INT64_MAX;
  EXPECT_EQ(moecommCapacityPlanCreate(comm_, &d, &plan),
            moecommInvalidArgument);
  EXPECT_EQ(std::string(moecommCommGetLastError(comm_)),
            "rank 0: hidden 9223372036854775807 is more bytes per row than "
            "memory holds");
  d.hidden = 16;
  d.numTokens = int64_t(1) << 62;
  EXPECT_EQ(moecommCapacityPlanCreate(comm_, &d, &plan),
            moecommInvalidArgument);
  EXPECT_NE(std::string(moecommCommGetLastError(comm_)).find("below 2^31"),
            std::string::npos);
  d.numTokens = 4;
  d.wireType = FP8;
  ASSERT_EQ(moecommCapacityPlanCreate(comm_, &d, &plan), moecommSuccess);
  // Host x, wrong row counts and types are refused before anything moves.
  Rows hostX(4, 16, BF16);
  DeviceRows recv(16, 16, BF16), x(4, 16, BF16), shortRecv(15, 16, BF16);
  DeviceArray<int64_t> idx(std::vector<int64_t>(8, 1));
  EXPECT_EQ(moecommCapacityDispatch(plan, idx.data(), nullptr, hostX.view(),
                                    recv.view(), stream_),
            moecommInvalidArgument);
  EXPECT_EQ(std::string(moecommCommGetLastError(comm_)),
            "rank 0: x is host memory; the nccl backend needs device "
            "pointers");
  EXPECT_EQ(moecommCapacityDispatch(plan, idx.data(), nullptr, x.view(),
                                    shortRecv.view(), stream_),
            moecommInvalidArgument);
  EXPECT_EQ(std::string(moecommCommGetLastError(comm_)),
            "rank 0: recv has 15 rows, expected 16");
  EXPECT_EQ(moecommCapacityPlanDestroy(plan), moecommSuccess);
}

TEST_F(Capacity, CapturedGraphReplaysWithNewRouting) {
  const int64_t E = 32, T = 64, H = 512, C = 300;
  const int K = 4;
  CaseSpec spec;
  spec.W = 1;
  spec.G = 1;
  spec.E = E;
  spec.K = K;
  spec.H = H;
  spec.data = BF16;
  spec.wire = FP8;
  spec.routing = RoutingKind::Uniform;
  spec.T = T;
  spec.randomWeights = true;
  spec.seed = 5;
  ref::Problem first = makeProblem(spec);
  spec.seed = 6;
  spec.routing = RoutingKind::Skewed;
  ref::Problem second = makeProblem(spec);
  second.routing[0].numTokens = first.routing[0].numTokens; // same shape
  Expected e1 = expectedWithCapacity(first, C),
           e2 = expectedWithCapacity(second, C);
  const int64_t Tr = first.routing[0].numTokens;
  ASSERT_EQ(second.routing[0].topkIdx.size(), first.routing[0].topkIdx.size());

  moecommCapacityDesc_t d = capacityDesc(Tr, K, E, C, H, BF16, FP8);
  moecommCapacityPlan_t plan = nullptr;
  ASSERT_EQ(moecommCapacityPlanCreate(comm_, &d, &plan), moecommSuccess);
  DeviceArray<int64_t> idx(first.routing[0].topkIdx);
  DeviceArray<float> w(first.routing[0].topkWeights);
  DeviceRows x = DeviceRows::from(Rows::fromValues(e1.x[0], H, BF16));
  DeviceRows recv(C, H, BF16), out(Tr, H, BF16);

  // One run outside the graph first: NCCL sets up its connections on first
  // use, which must not happen inside a capture.
  ASSERT_EQ(moecommCapacityDispatch(plan, idx.data(), w.data(), x.view(),
                                    recv.view(), stream_),
            moecommSuccess)
      << moecommCommGetLastError(comm_);
  ASSERT_EQ(moecommCapacityCombine(plan, recv.view(), 1, out.view(), stream_),
            moecommSuccess)
      << moecommCommGetLastError(comm_);
  CUDA_OK(cudaStreamSynchronize(stream_));
  // Capture dispatch + weighted combine of identity experts (y = recv).
  cudaGraph_t graph = nullptr;
  CUDA_OK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal));
  moecommResult_t rd = moecommCapacityDispatch(plan, idx.data(), w.data(),
                                               x.view(), recv.view(), stream_);
  moecommResult_t rc =
      moecommCapacityCombine(plan, recv.view(), 1, out.view(), stream_);
  CUDA_OK(cudaStreamEndCapture(stream_, &graph));
  ASSERT_EQ(rd, moecommSuccess) << moecommCommGetLastError(comm_);
  ASSERT_EQ(rc, moecommSuccess) << moecommCommGetLastError(comm_);
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));

  for (const Expected *e : {&e1, &e2, &e1}) {
    const ref::RankRouting &rr = e->problem.routing[0];
    CUDA_OK(cudaMemcpy(idx.data(), rr.topkIdx.data(), rr.topkIdx.size() * 8,
                       cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(w.data(), rr.topkWeights.data(),
                       rr.topkWeights.size() * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaGraphLaunch(exec, stream_));
    CUDA_OK(cudaStreamSynchronize(stream_));
    const int64_t R = (int64_t)e->layout[0].rows.size();
    EXPECT_EQ(readOutputs(plan, E).recvRows, R);
    std::vector<float> got = recv.values();
    std::vector<float> head(got.begin(), got.begin() + R * H);
    EXPECT_TRUE(sameBits(head, e->dispatch[0])) << "replayed dispatch";
    EXPECT_TRUE(sameBits(out.values(), e->identityW[0]))
        << "replayed identity combine";
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  EXPECT_EQ(moecommCapacityPlanDestroy(plan), moecommSuccess);
}

} // namespace
