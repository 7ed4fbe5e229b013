//===- AlignTest.cpp - Aligned expert segments on the threads backend -----===//
//
// moecommLayoutDesc_t::align (issue 16): every local expert's segment of
// dispatch's recv starts at a multiple of align rows, padded with zero rows
// of weight 0 and sources (-1, -1) that the receiver makes itself. Each cell
// runs every strategy against the padded reference (the oracles of
// ThreadsMatrixTest), checks the padding rows directly, and checks that the
// traffic counters equal align 1's exactly (padding never travels).
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <utility>

using namespace moecomm;
using namespace moecomm::test;
using namespace moecomm::test::shorthand;

namespace {

/// The oracle matrix's cells (T = 0 ranks, all tokens to one expert, all
/// slots masked, masked slots, capacity drops, H not a multiple of 32 or
/// 128, the FP8 wire types; one rank, one and two stages) aligned to 16 and
/// to 128 rows; H = 7168 left out, to keep the padded rows small.
std::vector<CaseSpec> alignedCells() {
  std::vector<CaseSpec> specs;
  for (const CaseSpec &c : matrixCells())
    for (int64_t align : {16, 128})
      if (c.H < 7168) {
        specs.push_back(c);
        specs.back().align = align;
      }
  return specs;
}

/// The padding rows of one rank's run, checked without the reference:
/// segments start at multiples of align and hold tokensPerExpert real rows
/// then zero rows of weight 0 and sources (-1, -1), fewer than align of them.
void expectPadding(const RankRun &run, int64_t align, int64_t H) {
  const int64_t L = run.info.localExperts;
  ASSERT_EQ((int64_t)run.expertOffsets.size(), L + 1);
  EXPECT_EQ(run.expertOffsets[0], 0);
  EXPECT_EQ(run.expertOffsets[L], run.info.recvRows);
  for (int64_t e = 0; e < L; ++e) {
    const int64_t b = run.expertOffsets[e], end = run.expertOffsets[e + 1];
    EXPECT_EQ(b % align, 0) << "expert " << e;
    const int64_t pad = end - b - run.tokensPerExpert[e];
    EXPECT_GE(pad, 0) << "expert " << e;
    EXPECT_LT(pad, align) << "expert " << e;
    for (int64_t i = b + run.tokensPerExpert[e]; i < end; ++i) {
      EXPECT_EQ(run.weights[i], 0.0f) << "row " << i;
      EXPECT_EQ(run.sources[2 * i], -1) << "row " << i;
      EXPECT_EQ(run.sources[2 * i + 1], -1) << "row " << i;
      for (int64_t h = 0; h < H; ++h)
        ASSERT_EQ(run.dispatch[i * H + h], 0.0f) << "row " << i << " h " << h;
    }
  }
}

class AlignedSegments : public ::testing::TestWithParam<CaseParam> {};

TEST_P(AlignedSegments, OraclesHoldAndPaddingNeverTravels) {
  const CaseParam &param = GetParam();
  const Expected exp = computeExpected(makeProblem(param.spec));
  ASSERT_EQ(ref::validate(exp.problem), "");
  CaseSpec unaligned = param.spec;
  unaligned.align = 1;
  const Expected exp1 = computeExpected(makeProblem(unaligned));
  std::vector<RankRun> runs = runEveryRank(exp, param.strategy);
  std::vector<RankRun> runs1 = runEveryRank(exp1, param.strategy);
  for (int r = 0; r < exp.problem.ranks; ++r) {
    checkRank(exp, param.strategy, r, runs[r]);
    expectPadding(runs[r], param.spec.align, param.spec.H);
    // The same real rows as align 1, and exactly its traffic.
    EXPECT_EQ(runs[r].tokensPerExpert, runs1[r].tokensPerExpert);
    EXPECT_EQ(runs[r].info.dropped, runs1[r].info.dropped);
    EXPECT_TRUE(sameBits(runs[r].combineW, runs1[r].combineW)) << "rank " << r;
    const std::pair<const moecommTraffic_t *, const moecommTraffic_t *>
        traffic[] = {{&runs[r].layoutTraffic, &runs1[r].layoutTraffic},
                     {&runs[r].dispatchTraffic, &runs1[r].dispatchTraffic},
                     {&runs[r].combineTraffic, &runs1[r].combineTraffic},
                     {&runs[r].dispatchGlobal, &runs1[r].dispatchGlobal},
                     {&runs[r].combineGlobal, &runs1[r].combineGlobal}};
    for (const auto &[got, want] : traffic)
      EXPECT_EQ(std::memcmp(got, want, sizeof(moecommTraffic_t)), 0)
          << "traffic of rank " << r << " differs from align 1's";
  }
  checkLowerBound(exp, runs[0]);
}

INSTANTIATE_TEST_SUITE_P(Cells, AlignedSegments,
                         ::testing::ValuesIn(withEveryStrategy(alignedCells())),
                         [](const ::testing::TestParamInfo<CaseParam> &info) {
                           return caseParamName(info.param);
                         });

// A staged dispatch unpacked into FP8 rows hands the scales over, for each
// FP8 wire type: padding rows are zero codes with scale 1 (f32 1.0, or E8M0
// byte 127; the buffers start as 0xCD / -7, so an unwritten row shows), real
// rows are the sender's quantized rows.
class AlignedSegmentsFp8 : public ::testing::TestWithParam<moecommDataType_t> {};

TEST_P(AlignedSegmentsFp8, UnpackedFp8PaddingHasScaleOne) {
  const moecommDataType_t wire = GetParam();
  CaseSpec spec = seededCell(4, 2, 8, 3, 200, BF16, wire, RK::UniformMasked, 7);
  spec.align = 16;
  const Expected exp = computeExpected(makeProblem(spec));
  const ref::Problem &p = exp.problem;
  const int64_t H = p.hidden;
  // One row's scale bytes for scale 1.
  std::vector<uint8_t> one;
  if (wire == moecommFloat8E4M3) {
    const float f = 1.0f;
    for (int64_t b = 0; b < (H + 127) / 128; ++b)
      one.insert(one.end(), reinterpret_cast<const uint8_t *>(&f),
                 reinterpret_cast<const uint8_t *>(&f) + 4);
  } else {
    one.assign(wire == moecommMxfp8 ? (H + 31) / 32 : (H + 127) / 128, 127);
  }
  const int64_t sb = (int64_t)one.size();
  runOnThreads(4, 2, [&](moecommComm_t comm, int r) {
    moecommLayoutDesc_t d = descFor(p, r, moecommHierarchical);
    moecommLayout_t l = nullptr;
    ASSERT_EQ(moecommLayoutCreate(comm, &d, &l), moecommSuccess);
    moecommLayoutInfo_t info{};
    moecommLayoutGetInfo(l, &info);
    std::vector<int64_t> offsets(info.localExperts + 1), tpe(info.localExperts);
    EXPECT_EQ(moecommLayoutExpertOffsets(l, offsets.data()), moecommSuccess);
    EXPECT_EQ(moecommLayoutTokensPerExpert(l, tpe.data()), moecommSuccess);
    Rows x = Rows::fromValues(exp.x[r], H, p.dataType);
    x.rows.rows = p.routing[r].numTokens;
    std::deque<Rows> keep;
    moecommRows_t *in = x.view();
    for (int st = 0; st < info.numStages; ++st) {
      int64_t sendRows = 0, recvRows = 0;
      moecommLayoutStage(l, moecommDirectionDispatch, st, nullptr, &sendRows,
                         &recvRows);
      keep.emplace_back(sendRows, H, wire);
      EXPECT_EQ(moecommPack(comm, l, moecommDirectionDispatch, st, in, 0,
                            keep.back().view(), nullptr),
                moecommSuccess);
      keep.emplace_back(recvRows, H, wire);
      EXPECT_EQ(moecommExchange(comm, l, moecommDirectionDispatch, st,
                                keep[keep.size() - 2].view(),
                                keep.back().view(), nullptr),
                moecommSuccess);
      in = keep.back().view();
    }
    Rows q(info.recvRows, H, wire);
    EXPECT_EQ(moecommUnpack(comm, l, moecommDirectionDispatch, in, 0, q.view(),
                            nullptr),
              moecommSuccess);
    Rows deq(info.recvRows, H, p.dataType);
    EXPECT_EQ(moecommDequantizeFp8(q.view(), deq.view()), moecommSuccess);
    EXPECT_TRUE(sameBits(deq.values(), exp.dispatch[r])) << "rank " << r;
    for (int64_t e = 0; e < info.localExperts; ++e)
      for (int64_t i = offsets[e] + tpe[e]; i < offsets[e + 1]; ++i) {
        for (int64_t h = 0; h < H; ++h)
          ASSERT_EQ(q.data[i * H + h], 0) << "rank " << r << " row " << i;
        const uint8_t *scales =
            reinterpret_cast<const uint8_t *>(q.scales.data()) + i * sb;
        ASSERT_TRUE(std::equal(one.begin(), one.end(), scales))
            << "rank " << r << " row " << i;
      }
    EXPECT_EQ(moecommLayoutDestroy(l), moecommSuccess);
  });
}

INSTANTIATE_TEST_SUITE_P(WireTypes, AlignedSegmentsFp8,
                         ::testing::Values(moecommFloat8E4M3,
                                           moecommFloat8E4M3UE8M0,
                                           moecommMxfp8));

// A zero-initialised align is 1: the layout of an older caller's desc.
TEST(AlignedSegmentsDesc, ZeroMeansOneAndOffsetsNeedAnArray) {
  CaseSpec spec = seededCell(4, 2, 16, 3, 8, F32, F32, RK::Uniform, 6);
  const ref::Problem p = makeProblem(spec);
  const std::vector<ref::RankLayout> want = ref::layout(p);
  runOnThreads(4, 2, [&](moecommComm_t comm, int r) {
    moecommLayoutDesc_t d = descFor(p, r, moecommFlat);
    d.align = 0;
    moecommLayout_t l = nullptr;
    ASSERT_EQ(moecommLayoutCreate(comm, &d, &l), moecommSuccess);
    moecommLayoutInfo_t info{};
    moecommLayoutGetInfo(l, &info);
    EXPECT_EQ(info.recvRows, (int64_t)want[r].rows.size());
    std::vector<int64_t> offsets(info.localExperts + 1, -1);
    EXPECT_EQ(moecommLayoutExpertOffsets(l, offsets.data()), moecommSuccess);
    EXPECT_EQ(offsets, want[r].expertOffsets);
    EXPECT_EQ(moecommLayoutExpertOffsets(l, nullptr), moecommInvalidArgument);
    EXPECT_EQ(moecommLayoutExpertOffsets(nullptr, offsets.data()),
              moecommInvalidArgument);
    EXPECT_EQ(moecommLayoutDestroy(l), moecommSuccess);
  });
}

// The reference's padded layout, by hand: 2 ranks, 4 experts, align 4.
TEST(AlignedSegmentsReference, PaddedLayoutByHand) {
  // Rank 0: token 0 -> experts 0, 3; token 1 -> 0. Rank 1: token 0 -> 1, 0.
  // 2 ranks of one node, E = 4, K = 2, H = 1, bf16, no capacity, align 4.
  const ref::Problem p{2,          1, 4,
                       2,          1, BF16,
                       BF16,       0, {{2, {0, 3, 0, -1}, {}}, {1, {1, 0}, {}}},
                       /*align=*/4};
  ASSERT_EQ(ref::validate(p), "");
  std::vector<ref::RankLayout> l = ref::layout(p);
  // Rank 0 holds experts 0 (3 rows) and 1 (1 row): segments [0, 4), [4, 8).
  EXPECT_EQ(l[0].tokensPerExpert, (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(l[0].expertOffsets, (std::vector<int64_t>{0, 4, 8}));
  ASSERT_EQ(l[0].rows.size(), 8u);
  EXPECT_EQ(l[0].rows[2].srcRank, 1);
  EXPECT_TRUE(l[0].rows[3].isPadding());
  EXPECT_EQ(l[0].rows[3].localExpert, 0);
  EXPECT_EQ(l[0].rows[3].weight, 0.0f);
  EXPECT_EQ(l[0].rows[4].srcRank, 1);
  for (int i = 5; i < 8; ++i)
    EXPECT_TRUE(l[0].rows[i].isPadding()) << i;
  // Rank 1: expert 2 has no row (an empty segment), expert 3 one.
  EXPECT_EQ(l[1].expertOffsets, (std::vector<int64_t>{0, 0, 4}));
  std::vector<std::vector<float>> x = {{1.0f, 2.0f}, {3.0f}};
  std::vector<std::vector<float>> got = ref::dispatch(p, l, x);
  EXPECT_EQ(got[1], (std::vector<float>{1.0f, 0.0f, 0.0f, 0.0f}));
  EXPECT_EQ(got[0], (std::vector<float>{1.0f, 2.0f, 3.0f, 0.0f, 3.0f, 0.0f,
                                        0.0f, 0.0f}));
  // keptSlots and combine ignore the padding.
  auto kept = ref::keptSlots(p, l);
  EXPECT_EQ(kept[0], (std::vector<bool>{true, true, true, false}));
  std::vector<std::vector<float>> y = {{10, 20, 30, 99, 40, 99, 99, 99},
                                       {50, 99, 99, 99}};
  std::vector<std::vector<float>> out = ref::combine(p, l, y, false);
  EXPECT_EQ(out[0], (std::vector<float>{60.0f, 20.0f}));
  EXPECT_EQ(out[1], (std::vector<float>{70.0f}));
}

} // namespace
