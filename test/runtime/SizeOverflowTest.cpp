//===- SizeOverflowTest.cpp - Sizes whose products overflow are errors ----===//
//
// moecomm.h: "sizes whose byte count overflows are errors (InvalidArgument),
// not undefined". Each case below wrapped an int64 product before it was
// checked (a read past the caller's buffer, a UBSan trap or a giant
// allocation); run under the sanitize preset.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <climits>

using namespace moecomm;
using namespace moecomm::test;

namespace {

std::string lastError(moecommComm_t comm) {
  return moecommCommGetLastError(comm);
}

TEST(SizeOverflow, LayoutTokensTimesTopk) {
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    const int64_t idx[2] = {0, -1};
    const float w[2] = {1, 1};
    struct Case {
      int64_t tokens;
      int topk;
    } cases[] = {{int64_t(1) << 62, 2},       // T * K wraps to 2^63
                 {INT64_MAX, 1},              // T * K * 8 bytes wraps
                 {int64_t(1) << 40, INT_MAX}}; // T * K wraps
    for (const Case &c : cases) {
      moecommLayoutDesc_t d =
          oneTokenDesc(idx, w, /*numExperts=*/1, moecommPerExpert);
      d.numTokens = c.tokens;
      d.topk = c.topk;
      moecommLayout_t l = nullptr;
      EXPECT_EQ(moecommLayoutCreate(comm, &d, &l), moecommInvalidArgument);
      EXPECT_EQ(l, nullptr);
      EXPECT_NE(lastError(comm).find("more bytes than memory holds"),
                std::string::npos)
          << lastError(comm);
    }
  });
}

TEST(SizeOverflow, HiddenHint) {
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    const int64_t idx[1] = {0};
    const float w[1] = {1};
    for (int64_t hidden : {INT64_MAX, INT64_MAX / 4, INT64_MAX / 8 + 1}) {
      moecommLayoutDesc_t d =
          oneTokenDesc(idx, w, /*numExperts=*/1, moecommPerExpert);
      d.strategy = moecommAuto;
      d.hidden = hidden;
      moecommLayout_t l = nullptr;
      EXPECT_EQ(moecommLayoutCreate(comm, &d, &l), moecommInvalidArgument)
          << hidden;
      EXPECT_EQ(lastError(comm),
                "rank 0: hidden " + std::to_string(hidden) +
                    " is more bytes per row than memory holds");
    }
  });
}

// The largest hint the rule accepts still sizes rows whose traffic exceeds
// int64 when several rows go to one rank: auto's cost model saturates the
// byte counts instead of wrapping them.
TEST(SizeOverflow, HiddenHintTrafficSaturates) {
  runOnThreads(2, 1, [&](moecommComm_t comm, int r) {
    const int64_t idx[2] = {1 - r, 1 - r}; // both tokens to the other rank
    const float w[2] = {1, 1};
    moecommLayoutDesc_t d =
        oneTokenDesc(idx, w, /*numExperts=*/1, moecommPerExpert);
    d.numTokens = 2;
    d.numExperts = 2;
    d.strategy = moecommAuto;
    d.hidden = INT64_MAX / 8;
    moecommLayout_t l = nullptr;
    ASSERT_EQ(moecommLayoutCreate(comm, &d, &l), moecommSuccess)
        << lastError(comm);
    moecommLayoutInfo_t info;
    ASSERT_EQ(moecommLayoutGetInfo(l, &info), moecommSuccess);
    EXPECT_EQ(info.recvRows, 2);
    EXPECT_NE(info.strategy, moecommAuto);
    moecommLayoutDestroy(l);
  });
  RoutingSummary s;
  s.topo.ranks = 2;
  s.topo.ranksPerNode = 1;
  s.topo.numExperts = 2;
  s.pairs = {0, 3, 3, 0};
  s.tokenRanks = s.pairs;
  s.tokenNodes = s.pairs;
  StrategyTraffic t = countTraffic(s, moecommPerExpert, INT64_MAX / 2, 1);
  EXPECT_EQ(t.dispatch[0].ranks[0].bytesSent[moecommLinkInterNode],
            INT64_MAX);
  EXPECT_EQ(t.totalBytes(moecommDirectionDispatch, moecommLinkInterNode),
            INT64_MAX);
  EXPECT_EQ(t.totalBytes(moecommDirectionCombine, moecommLinkInterNode), 6);
  EXPECT_EQ(wireRowBytes(moecommFloat32, INT64_MAX), INT64_MAX);
  EXPECT_EQ(wireRowBytes(moecommFloat8E4M3, INT64_MAX), INT64_MAX);
  EXPECT_EQ(wireRowBytes(moecommFloat8E4M3, 129), 129 + 8);
  EXPECT_EQ(wireRowBytes(moecommFloat8E4M3UE8M0, INT64_MAX), INT64_MAX);
  EXPECT_EQ(wireRowBytes(moecommMxfp8, INT64_MAX), INT64_MAX);
  // ceil(H / block) of any int64 H, without forming H + block - 1.
  EXPECT_EQ(fp8Blocks(moecommFloat8E4M3, INT64_MAX), INT64_MAX / 128 + 1);
  EXPECT_EQ(fp8Blocks(moecommFloat8E4M3, 128), 1);
  EXPECT_EQ(fp8Blocks(moecommMxfp8, INT64_MAX), INT64_MAX / 32 + 1);
  EXPECT_EQ(fp8Blocks(moecommMxfp8, 33), 2);
}

// An empty block still has rows of its hidden size: their byte and FP8
// scale counts must fit.
TEST(SizeOverflow, EmptyRowsOfHugeHidden) {
  for (int64_t hidden : {INT64_MAX, INT64_MAX - 100, INT64_MAX / 8 + 1}) {
    moecommRows_t in{nullptr, nullptr, 0, hidden, moecommFloat32};
    moecommRows_t q{nullptr, nullptr, 0, hidden, moecommFloat8E4M3};
    EXPECT_EQ(moecommQuantizeFp8(&in, &q), moecommInvalidArgument) << hidden;
    EXPECT_NE(std::string(moecommCommGetLastError(nullptr))
                  .find("more bytes than memory holds"),
              std::string::npos);
    EXPECT_EQ(moecommDequantizeFp8(&q, &in), moecommInvalidArgument) << hidden;
  }
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    moecommLayoutDesc_t d = oneTokenDesc(nullptr, nullptr, /*numExperts=*/1,
                                         moecommPerExpert);
    d.numTokens = 0;
    moecommLayout_t l = nullptr;
    ASSERT_EQ(moecommLayoutCreate(comm, &d, &l), moecommSuccess);
    moecommRows_t x{nullptr, nullptr, 0, INT64_MAX, moecommFloat32};
    moecommRows_t recv = x;
    EXPECT_EQ(moecommDispatch(comm, l, &x, moecommFloat8E4M3, &recv, nullptr),
              moecommInvalidArgument);
    EXPECT_EQ(moecommCombine(comm, l, &recv, 1, &x, nullptr),
              moecommInvalidArgument);
    int64_t zero[1] = {0};
    EXPECT_EQ(moecommAllToAll(comm, &x, zero, &recv, zero, nullptr),
              moecommInvalidArgument);
    EXPECT_NE(lastError(comm).find("more bytes than memory holds"),
              std::string::npos)
        << lastError(comm);
    moecommLayoutDestroy(l);
  });
}

// Hierarchical: relay rank 2 receives two rows in the inter-node stage
// (rank 0's token for rank 3, and its own token) although it receives one
// row in the end: the stage block is checked like the caller's blocks, on
// every rank before anything moves.
TEST(SizeOverflow, StageBlockOfRelay) {
  const int64_t H = int64_t(1) << 59; // 1 row: 2^62 bytes; 2 rows: too many
  std::vector<moecommResult_t> results(4);
  std::vector<std::string> messages(4);
  runOnThreads(4, 2, [&](moecommComm_t comm, int r) {
    // Rank 0's token -> expert 3 (node 1, through relay 2); rank 2's token
    // -> expert 2 (itself); ranks 1 and 3 have no tokens.
    const int64_t idx[1] = {r == 0 ? 3 : 2};
    const float w[1] = {1};
    moecommLayoutDesc_t d =
        oneTokenDesc(idx, w, /*numExperts=*/1, moecommPerExpert);
    d.numTokens = r % 2 == 0 ? 1 : 0;
    d.numExperts = 4;
    d.strategy = moecommHierarchical;
    moecommLayout_t l = nullptr;
    ASSERT_EQ(moecommLayoutCreate(comm, &d, &l), moecommSuccess)
        << lastError(comm);
    moecommLayoutInfo_t info;
    ASSERT_EQ(moecommLayoutGetInfo(l, &info), moecommSuccess);
    ASSERT_EQ(info.recvRows, r >= 2 ? 1 : 0);
    // Never read or written: every rank rejects the call first.
    float dummy[1] = {0};
    moecommRows_t x{dummy, nullptr, d.numTokens, H, moecommFloat32};
    moecommRows_t recv{dummy, nullptr, info.recvRows, H, moecommFloat32};
    results[r] = moecommDispatch(comm, l, &x, moecommFloat32, &recv, nullptr);
    messages[r] = lastError(comm);
    moecommLayoutDestroy(l);
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(results[r], moecommInvalidArgument) << r;
    EXPECT_EQ(messages[r], "rank 2: stage 0 of dispatch moves 2 rows of "
                           "hidden size 576460752303423488: more bytes than "
                           "memory holds")
        << r;
  }
}

TEST(SizeOverflow, AllReduceSum) {
  std::vector<std::vector<int64_t>> values(2);
  std::vector<moecommResult_t> results(2);
  runOnThreads(2, 1, [&](moecommComm_t comm, int r) {
    values[r] = {1, INT64_MAX - r};
    results[r] = moecommAllReduceSum(comm, values[r].data(), 2);
    EXPECT_EQ(lastError(comm),
              "the sum of values[1] over all ranks overflows int64");
    int64_t low[1] = {INT64_MIN + 1};
    EXPECT_EQ(moecommAllReduceSum(comm, low, 1), moecommInvalidArgument);
    int64_t fine[1] = {r == 0 ? INT64_MAX : INT64_MIN};
    EXPECT_EQ(moecommAllReduceSum(comm, fine, 1), moecommSuccess);
    EXPECT_EQ(fine[0], -1);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(results[r], moecommInvalidArgument);
    EXPECT_EQ(values[r], (std::vector<int64_t>{1, INT64_MAX - r}));
  }
}

} // namespace
