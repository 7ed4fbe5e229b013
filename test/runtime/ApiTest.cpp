//===- ApiTest.cpp - C API: communicators, all_to_all, requests, reuse ----===//
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace moecomm;
using namespace moecomm::test;

namespace {

TEST(Api, CommunicatorQueries) {
  runOnThreads(6, 3, [&](moecommComm_t comm, int r) {
    int rank = -1, size = -1, g = -1;
    moecommBackend_t b;
    EXPECT_EQ(moecommCommRank(comm, &rank), moecommSuccess);
    EXPECT_EQ(moecommCommSize(comm, &size), moecommSuccess);
    EXPECT_EQ(moecommCommRanksPerNode(comm, &g), moecommSuccess);
    EXPECT_EQ(moecommCommBackend(comm, &b), moecommSuccess);
    EXPECT_EQ(rank, r);
    EXPECT_EQ(size, 6);
    EXPECT_EQ(g, 3);
    EXPECT_EQ(b, moecommBackendThreads);
    EXPECT_STREQ(moecommCommGetLastError(comm), "");
    EXPECT_EQ(moecommCommRank(comm, nullptr), moecommInvalidArgument);
    EXPECT_STREQ(moecommCommGetLastError(comm), "rank is NULL");
    int64_t v[2] = {r, 1};
    EXPECT_EQ(moecommAllReduceSum(comm, v, 2), moecommSuccess);
    EXPECT_EQ(v[0], 15);
    EXPECT_EQ(v[1], 6);
    EXPECT_EQ(moecommBarrier(comm), moecommSuccess);
  });
  for (int c = 0; c < moecommNumResults; ++c)
    EXPECT_NE(moecommGetErrorString((moecommResult_t)c), nullptr);
  EXPECT_STREQ(moecommGetErrorString(moecommMismatch), "ranks disagree");
}

// Rows rank s sends to rank d in the all_to_all tests.
int64_t a2aCount(int s, int d) { return (s + 2 * d) % 3; }

// One all_to_all of `sb` into `rb` with the counts given, and the traffic it
// alone made.
void allToAllCounted(moecommComm_t comm, Rows &sb,
                     const std::vector<int64_t> &send, Rows &rb,
                     const std::vector<int64_t> &recv,
                     moecommTraffic_t &traffic) {
  moecommCommResetTraffic(comm);
  EXPECT_EQ(moecommAllToAll(comm, sb.view(), send.data(), rb.view(),
                            recv.data(), nullptr),
            moecommSuccess)
      << moecommCommGetLastError(comm);
  moecommCommGetTraffic(comm, 0, &traffic);
}

TEST(Api, AllToAllMovesRaggedRowsWithScales) {
  const int W = 4;
  const int64_t H = 130; // two FP8 blocks, the last partial
  std::vector<moecommTraffic_t> traffic(W);
  runOnThreads(W, 2, [&](moecommComm_t comm, int r) {
    std::vector<int64_t> send(W), recv(W, -1);
    for (int d = 0; d < W; ++d)
      send[d] = a2aCount(r, d);
    EXPECT_EQ(moecommAllToAllCounts(comm, send.data(), recv.data()),
              moecommSuccess);
    for (int s = 0; s < W; ++s)
      EXPECT_EQ(recv[s], a2aCount(s, r));
    int64_t ns = 0, nr = 0;
    for (int i = 0; i < W; ++i) {
      ns += send[i];
      nr += recv[i];
    }
    // FP8 rows: data byte = (s * 16 + d * 4 + j), scale = s * 100 + j.
    Rows sb(ns, H, moecommFloat8E4M3), rb(nr, H, moecommFloat8E4M3);
    int64_t row = 0;
    for (int d = 0; d < W; ++d)
      for (int64_t j = 0; j < send[d]; ++j, ++row) {
        std::memset(&sb.data[row * H], (int)(r * 16 + d * 4 + j), H);
        sb.scales[row * 2] = (float)(r * 100 + j);
        sb.scales[row * 2 + 1] = (float)d;
      }
    allToAllCounted(comm, sb, send, rb, recv, traffic[r]);
    row = 0;
    for (int s = 0; s < W; ++s)
      for (int64_t j = 0; j < recv[s]; ++j, ++row) {
        EXPECT_EQ(rb.data[row * H], (uint8_t)(s * 16 + r * 4 + j));
        EXPECT_EQ(rb.data[row * H + H - 1], (uint8_t)(s * 16 + r * 4 + j));
        EXPECT_EQ(rb.scales[row * 2], (float)(s * 100 + j));
        EXPECT_EQ(rb.scales[row * 2 + 1], (float)r);
      }
  });
  const int64_t rowBytes = H + 8;
  for (int r = 0; r < W; ++r) {
    uint64_t intra = 0, inter = 0, mi = 0, me = 0;
    for (int d = 0; d < W; ++d) {
      if (d == r || a2aCount(r, d) == 0)
        continue;
      if (d / 2 == r / 2) {
        intra += a2aCount(r, d) * rowBytes;
        ++mi;
      } else {
        inter += a2aCount(r, d) * rowBytes;
        ++me;
      }
    }
    const auto &t = traffic[r];
    EXPECT_EQ(t.bytes[moecommDirectionAllToAll][moecommScopeGlobal][0], intra);
    EXPECT_EQ(t.bytes[moecommDirectionAllToAll][moecommScopeGlobal][1], inter);
    EXPECT_EQ(t.messages[moecommDirectionAllToAll][moecommScopeGlobal][0], mi);
    EXPECT_EQ(t.messages[moecommDirectionAllToAll][moecommScopeGlobal][1], me);
  }
}

// i64 rows (metadata such as Megatron-Core's per-expert counts, one row per
// peer) arrive bit for bit, values beyond 2^53 included, and count 8 bytes
// an element.
TEST(Api, AllToAllMovesInt64Rows) {
  const int W = 4;
  const int64_t H = 3;
  auto value = [](int s, int d, int64_t j, int64_t h) -> int64_t {
    return (int64_t{1} << 60) + s * 1000000 + d * 10000 + j * 100 + h;
  };
  std::vector<moecommTraffic_t> traffic(W);
  runOnThreads(W, 2, [&](moecommComm_t comm, int r) {
    std::vector<int64_t> send(W), recv(W);
    int64_t ns = 0, nr = 0;
    for (int d = 0; d < W; ++d) {
      send[d] = a2aCount(r, d);
      recv[d] = a2aCount(d, r);
      ns += send[d];
      nr += recv[d];
    }
    Rows sb(ns, H, moecommInt64), rb(nr, H, moecommInt64);
    auto *out = reinterpret_cast<int64_t *>(sb.data.data());
    for (int d = 0; d < W; ++d)
      for (int64_t j = 0; j < send[d]; ++j)
        for (int64_t h = 0; h < H; ++h)
          *out++ = value(r, d, j, h);
    allToAllCounted(comm, sb, send, rb, recv, traffic[r]);
    const auto *in = reinterpret_cast<const int64_t *>(rb.data.data());
    for (int s = 0; s < W; ++s)
      for (int64_t j = 0; j < recv[s]; ++j)
        for (int64_t h = 0; h < H; ++h)
          EXPECT_EQ(*in++, value(s, r, j, h));
  });
  for (int r = 0; r < W; ++r) {
    uint64_t bytes[2] = {0, 0};
    for (int d = 0; d < W; ++d)
      if (d != r)
        bytes[d / 2 == r / 2 ? 0 : 1] += a2aCount(r, d) * H * 8;
    const auto &t = traffic[r];
    EXPECT_EQ(t.bytes[moecommDirectionAllToAll][moecommScopeGlobal][0],
              bytes[0]);
    EXPECT_EQ(t.bytes[moecommDirectionAllToAll][moecommScopeGlobal][1],
              bytes[1]);
  }
}

// Several layouts on one communicator, used over and over in interleaved
// order, give identical (and correct) results every time.
TEST(Api, RepeatedCallsAndSeveralLiveLayouts) {
  CaseSpec a;
  a.W = 4;
  a.G = 2;
  a.E = 16;
  a.K = 3;
  a.H = 24;
  a.T = 9;
  a.routing = RoutingKind::Skewed;
  a.randomWeights = true;
  CaseSpec b = a;
  b.E = 8;
  b.K = 5;
  b.routing = RoutingKind::UniformMasked;
  b.seed = 99;
  Expected ea = computeExpected(makeProblem(a));
  Expected eb = computeExpected(makeProblem(b));
  struct Use {
    const Expected *exp;
    moecommStrategy_t strategy;
  };
  std::vector<Use> uses = {{&ea, moecommPerExpert},
                           {&ea, moecommHierarchical},
                           {&eb, moecommFlat},
                           {&eb, moecommHierarchical}};
  // results[rank][iteration][use] = dispatch ++ combine values
  std::vector<std::vector<std::vector<std::vector<float>>>> results(4);
  runOnThreads(4, 2, [&](moecommComm_t comm, int r) {
    std::vector<moecommLayout_t> layouts;
    for (const Use &u : uses) {
      moecommLayoutDesc_t d = descFor(u.exp->problem, r, u.strategy);
      moecommLayout_t l = nullptr;
      EXPECT_EQ(moecommLayoutCreate(comm, &d, &l), moecommSuccess);
      layouts.push_back(l);
    }
    for (int it = 0; it < 3; ++it) {
      results[r].emplace_back();
      // Reverse the order every other iteration.
      for (size_t k = 0; k < uses.size(); ++k) {
        size_t i = it % 2 ? uses.size() - 1 - k : k;
        const ref::Problem &p = uses[i].exp->problem;
        moecommLayoutInfo_t info;
        moecommLayoutGetInfo(layouts[i], &info);
        Rows x = Rows::fromValues(uses[i].exp->x[r], p.hidden, p.dataType);
        Rows recv(info.recvRows, p.hidden, p.dataType);
        EXPECT_EQ(moecommDispatch(comm, layouts[i], x.view(), p.wireType,
                                  recv.view(), nullptr),
                  moecommSuccess);
        Rows y = Rows::fromValues(uses[i].exp->y[r], p.hidden, p.dataType);
        y.rows.rows = info.recvRows;
        Rows out(p.routing[r].numTokens, p.hidden, p.dataType);
        EXPECT_EQ(
            moecommCombine(comm, layouts[i], y.view(), 1, out.view(), nullptr),
            moecommSuccess);
        std::vector<float> v = recv.values(), o = out.values();
        v.insert(v.end(), o.begin(), o.end());
        results[r].back().resize(uses.size());
        results[r].back()[i] = v;
      }
    }
    for (moecommLayout_t l : layouts)
      moecommLayoutDestroy(l);
  });
  for (int r = 0; r < 4; ++r)
    for (size_t i = 0; i < uses.size(); ++i) {
      const Expected &e = *uses[i].exp;
      std::vector<float> d = e.dispatch[r];
      ASSERT_GE(results[r][0][i].size(), d.size());
      EXPECT_TRUE(
          sameBits(std::vector<float>(results[r][0][i].begin(),
                                      results[r][0][i].begin() + d.size()),
                   d))
          << "rank " << r << " use " << i;
      if (uses[i].strategy == moecommPerExpert)
        EXPECT_TRUE(
            sameBits(std::vector<float>(results[r][0][i].begin() + d.size(),
                                        results[r][0][i].end()),
                     e.combineW[r]));
      for (int it = 1; it < 3; ++it)
        EXPECT_TRUE(sameBits(results[r][it][i], results[r][0][i]))
            << "rank " << r << " use " << i << " iteration " << it;
    }
}

// Several requests outstanding at once, waited in reverse order; each
// equals its blocking counterpart.
TEST(Api, StartWaitWithSeveralOutstandingRequests) {
  CaseSpec a;
  a.W = 8;
  a.G = 2;
  a.E = 32;
  a.K = 4;
  a.H = 40;
  a.T = 11;
  a.data = moecommBfloat16;
  a.wire = moecommFloat8E4M3;
  a.routing = RoutingKind::Uniform;
  CaseSpec b = a;
  b.wire = moecommBfloat16;
  b.K = 2;
  b.seed = 5;
  Expected ea = computeExpected(makeProblem(a));
  Expected eb = computeExpected(makeProblem(b));
  std::vector<int> ok(8, 0);
  runOnThreads(8, 2, [&](moecommComm_t comm, int r) {
    const ref::Problem &pa = ea.problem, &pb = eb.problem;
    moecommLayoutDesc_t da = descFor(pa, r, moecommHierarchical);
    moecommLayoutDesc_t db = descFor(pb, r, moecommFlat);
    moecommLayout_t la = nullptr, lb = nullptr;
    EXPECT_EQ(moecommLayoutCreate(comm, &da, &la), moecommSuccess);
    EXPECT_EQ(moecommLayoutCreate(comm, &db, &lb), moecommSuccess);
    moecommLayoutInfo_t ia, ib;
    moecommLayoutGetInfo(la, &ia);
    moecommLayoutGetInfo(lb, &ib);
    Rows xa = Rows::fromValues(ea.x[r], pa.hidden, pa.dataType);
    Rows xb = Rows::fromValues(eb.x[r], pb.hidden, pb.dataType);
    Rows ya = Rows::fromValues(ea.y[r], pa.hidden, pa.dataType);
    ya.rows.rows = ia.recvRows;
    Rows ra(ia.recvRows, pa.hidden, pa.dataType),
        rb(ib.recvRows, pb.hidden, pb.dataType),
        oa(pa.routing[r].numTokens, pa.hidden, pa.dataType);
    // A staged exchange of layout b's stage 0 as a request too.
    int64_t sRows = 0, rRows = 0;
    moecommLayoutStage(lb, moecommDirectionDispatch, 0, nullptr, &sRows,
                       &rRows);
    Rows sendB(sRows, pb.hidden, pb.dataType),
        recvB(rRows, pb.hidden, pb.dataType);
    EXPECT_EQ(moecommPack(comm, lb, moecommDirectionDispatch, 0, xb.view(), 0,
                          sendB.view(), nullptr),
              moecommSuccess);
    moecommRequest_t q[4] = {};
    EXPECT_EQ(moecommDispatchStart(comm, la, xa.view(), pa.wireType, ra.view(),
                                   nullptr, &q[0]),
              moecommSuccess);
    EXPECT_EQ(moecommDispatchStart(comm, lb, xb.view(), pb.wireType, rb.view(),
                                   nullptr, &q[1]),
              moecommSuccess);
    EXPECT_EQ(
        moecommCombineStart(comm, la, ya.view(), 1, oa.view(), nullptr, &q[2]),
        moecommSuccess);
    EXPECT_EQ(moecommExchangeStart(comm, lb, moecommDirectionDispatch, 0,
                                   sendB.view(), recvB.view(), nullptr, &q[3]),
              moecommSuccess);
    for (int i = 3; i >= 0; --i)
      EXPECT_EQ(moecommWait(q[i]), moecommSuccess)
          << moecommCommGetLastError(comm);
    Rows ub(ib.recvRows, pb.hidden, pb.dataType);
    EXPECT_EQ(moecommUnpack(comm, lb, moecommDirectionDispatch, recvB.view(), 0,
                            ub.view(), nullptr),
              moecommSuccess);
    bool good = sameBits(ra.values(), ea.dispatch[r]) &&
                sameBits(rb.values(), eb.dispatch[r]) &&
                sameBits(ub.values(), eb.dispatch[r]);
    // Blocking combine for comparison.
    Rows ob(pa.routing[r].numTokens, pa.hidden, pa.dataType);
    EXPECT_EQ(moecommCombine(comm, la, ya.view(), 1, ob.view(), nullptr),
              moecommSuccess);
    good = good && sameBits(oa.values(), ob.values());
    ok[r] = good;
    moecommLayoutDestroy(la);
    moecommLayoutDestroy(lb);
  });
  for (int r = 0; r < 8; ++r)
    EXPECT_TRUE(ok[r]) << "rank " << r;
}

TEST(Api, OutstandingRequestsBlockDestroy) {
  runOnThreads(2, 1, [&](moecommComm_t comm, int r) {
    std::vector<int64_t> counts(2, 1);
    float s[2] = {(float)r, (float)r}, d[2] = {-1, -1};
    moecommRows_t sv{s, nullptr, 2, 1, moecommFloat32};
    moecommRows_t dv{d, nullptr, 2, 1, moecommFloat32};
    moecommRequest_t q = nullptr;
    EXPECT_EQ(moecommAllToAllStart(comm, &sv, counts.data(), &dv, counts.data(),
                                   nullptr, &q),
              moecommSuccess);
    EXPECT_EQ(moecommCommDestroy(comm), moecommInvalidArgument);
    EXPECT_EQ(moecommWait(q), moecommSuccess);
    EXPECT_EQ(d[0], 0.0f);
    EXPECT_EQ(d[1], 1.0f);
  });
}

TEST(Api, AutoFollowsTheLinkModel) {
  CaseSpec s;
  s.W = 4;
  s.G = 2;
  s.E = 16;
  s.K = 4;
  s.T = 40;
  s.H = 7168;
  s.routing = RoutingKind::Uniform;
  Expected exp = computeExpected(makeProblem(s));
  const int64_t row = wireRowBytes(moecommBfloat16, 7168);
  moecommLinkModel_t slow{1.0, 450e9, 0.0, 50e9};
  moecommStrategy_t byDefault =
      chooseStrategy(exp.summary, row, row, defaultLinkModel());
  moecommStrategy_t bySlow = chooseStrategy(exp.summary, row, row, slow);
  ASSERT_NE(byDefault, bySlow);
  std::vector<moecommLayoutInfo_t> a(4), b(4);
  std::vector<moecommResult_t> mis(4);
  runOnThreads(4, 2, [&](moecommComm_t comm, int r) {
    moecommLayoutDesc_t d = descFor(exp.problem, r, moecommAuto);
    moecommLayout_t l = nullptr;
    EXPECT_EQ(moecommLayoutCreate(comm, &d, &l), moecommSuccess);
    moecommLayoutGetInfo(l, &a[r]);
    moecommLayoutDestroy(l);
    EXPECT_EQ(moecommCommSetLinkModel(comm, &slow), moecommSuccess);
    EXPECT_EQ(moecommLayoutCreate(comm, &d, &l), moecommSuccess);
    moecommLayoutGetInfo(l, &b[r]);
    moecommLayoutDestroy(l);
    // Ranks with different models would pick differently: refused.
    if (r == 0)
      moecommCommSetLinkModel(comm, &slow);
    else {
      moecommLinkModel_t m = defaultLinkModel();
      moecommCommSetLinkModel(comm, &m);
    }
    mis[r] = moecommLayoutCreate(comm, &d, &l);
    moecommLinkModel_t bad{1.0, 0.0, 1.0, 1.0};
    EXPECT_EQ(moecommCommSetLinkModel(comm, &bad), moecommInvalidArgument);
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(a[r].strategy, byDefault);
    EXPECT_EQ(b[r].strategy, bySlow);
    EXPECT_EQ(mis[r], moecommMismatch);
  }
}

TEST(Api, Int32IndicesMatchInt64) {
  CaseSpec s;
  s.W = 4;
  s.G = 2;
  s.E = 16;
  s.K = 3;
  s.T = 8;
  s.routing = RoutingKind::UniformMasked;
  Expected exp = computeExpected(makeProblem(s));
  std::vector<std::vector<int64_t>> src(4);
  runOnThreads(4, 2, [&](moecommComm_t comm, int r) {
    const ref::RankRouting &rr = exp.problem.routing[r];
    std::vector<int32_t> idx(rr.topkIdx.begin(), rr.topkIdx.end());
    moecommLayoutDesc_t d = descFor(exp.problem, r, moecommHierarchical);
    d.idxType = moecommInt32;
    d.topkIdx = idx.data();
    moecommLayout_t l = nullptr;
    EXPECT_EQ(moecommLayoutCreate(comm, &d, &l), moecommSuccess);
    moecommLayoutInfo_t info;
    moecommLayoutGetInfo(l, &info);
    src[r].resize(2 * info.recvRows);
    moecommLayoutRecvSources(l, src[r].data());
    moecommLayoutDestroy(l);
  });
  for (int r = 0; r < 4; ++r) {
    ASSERT_EQ(src[r].size(), 2 * exp.layout[r].rows.size());
    for (size_t i = 0; i < exp.layout[r].rows.size(); ++i)
      EXPECT_EQ(src[r][2 * i], exp.layout[r].rows[i].srcRank);
  }
}

TEST(Api, GlobalTrafficIsTheSumOfRanks) {
  CaseSpec s;
  s.W = 4;
  s.G = 2;
  s.E = 8;
  s.K = 2;
  s.T = 6;
  s.H = 16;
  Expected exp = computeExpected(makeProblem(s));
  std::vector<RankRun> runs(4);
  runOnThreads(4, 2, [&](moecommComm_t comm, int r) {
    runs[r] = runRank(comm, exp, moecommFlat, r);
  });
  moecommTraffic_t sum;
  std::memset(&sum, 0, sizeof(sum));
  for (const RankRun &run : runs)
    for (int d = 0; d < 3; ++d)
      for (int sc = 0; sc < 3; ++sc)
        for (int l = 0; l < 2; ++l) {
          sum.bytes[d][sc][l] += run.dispatchTraffic.bytes[d][sc][l];
          sum.messages[d][sc][l] += run.dispatchTraffic.messages[d][sc][l];
        }
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(
        std::memcmp(sum.bytes, runs[r].dispatchGlobal.bytes, sizeof(sum.bytes)),
        0);
}

} // namespace
