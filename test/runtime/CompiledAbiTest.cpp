//===- CompiledAbiTest.cpp - moecomm_compiled.h as generated code calls it ===//
//
// Compiled graphs call the _mlir_ciface_moecomm_rt_* functions with memref
// descriptors and read no status; the host reads the thread's first error
// afterwards. These tests make the calls the way convert-moecomm-to-runtime
// emits them and check what the host sees: the failing call's own message
// and code, also for calls that need no communicator (layout queries, FP8
// helpers), and a system error for a buffer compiled code failed to
// allocate (malloc returned NULL).
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"
#include "moecomm/Model/WireFormat.h"
#include "moecomm/moecomm_compiled.h"

#include <gtest/gtest.h>

#include <climits>
#include <thread>

using namespace moecomm;
using namespace moecomm::test;

namespace {

moecommMemRef2D ref2(void *data, int64_t rows, int64_t cols) {
  return moecommMemRef2D{data, data, 0, {rows, cols}, {cols, 1}};
}
moecommMemRef1D ref1(void *data, int64_t n) {
  return moecommMemRef1D{data, data, 0, {n}, {1}};
}

/// What the host sees after a compiled call sequence.
struct Seen {
  moecommResult_t status;
  std::string message;
};
Seen seen() { return {moecommCompiledStatus(), moecommCompiledLastError()}; }

/// One token per rank, routed to expert `expert`, on the bound communicator.
struct OneToken {
  int64_t idx[1];
  float w[1] = {0.5f};
  moecommMemRef2D idxRef, wRef;
  explicit OneToken(int64_t expert) {
    idx[0] = expert;
    idxRef = ref2(idx, 1, 1);
    wRef = ref2(w, 1, 1);
  }
  void *layout(int64_t ranks, int64_t experts, int32_t strategy = 0,
               int32_t wire = 0, int64_t align = 1) {
    return _mlir_ciface_moecomm_rt_layout_i64(&idxRef, &wRef, ranks, 1, experts,
                                              strategy, 0, 0, wire, align, 0,
                                              nullptr, 0);
  }
};

TEST(CompiledAbi, LayoutQueryErrorKeepsItsMessage) {
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    ASSERT_EQ(moecommCompiledBind(comm), moecommSuccess);
    OneToken t(0);
    void *layout = t.layout(1, 2);
    ASSERT_NE(layout, nullptr) << moecommCompiledLastError();
    // W = 1 has no exchange stage: step 0 is out of range (a local call
    // without a communicator, moecommLayoutStage).
    EXPECT_EQ(moecomm_rt_rows(layout, 0, 0, 0), 0);
    Seen s = seen();
    EXPECT_EQ(s.status, moecommInvalidArgument);
    EXPECT_EQ(s.message, "stage 0 is out of range [0, 0)");
    moecomm_rt_layout_release(layout);
  });
}

TEST(CompiledAbi, Fp8HelperErrorKeepsItsMessage) {
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    ASSERT_EQ(moecommCompiledBind(comm), moecommSuccess);
    std::vector<float> x(2 * 8, 1.0f), scales(2);
    std::vector<uint8_t> q(3 * 8);
    moecommMemRef2D in = ref2(x.data(), 2, 8), qRef = ref2(q.data(), 3, 8),
                    sRef = ref2(scales.data(), 3, 1);
    _mlir_ciface_moecomm_rt_quantize_f32(&in, &qRef, &sRef);
    Seen s = seen();
    EXPECT_EQ(s.status, moecommInvalidArgument);
    EXPECT_EQ(s.message, "out has 3 rows, expected 2");
  });
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    ASSERT_EQ(moecommCompiledBind(comm), moecommSuccess);
    std::vector<float> out(8), scales(1);
    std::vector<uint8_t> q(8);
    moecommMemRef2D qRef = ref2(q.data(), 1, 8),
                    sRef = ref2(nullptr, 1, 1), // no scales for a row
        outRef = ref2(out.data(), 1, 8);
    _mlir_ciface_moecomm_rt_dequantize_f32(&qRef, &sRef, &outRef);
    Seen s = seen();
    EXPECT_EQ(s.status, moecommInvalidArgument);
    EXPECT_EQ(s.message, "in is FP8 but has NULL scales");
  });
}

// The E8M0 formats' conversions of compiled code are the runtime's
// (moecommQuantizeFp8 / moecommDequantizeFp8 with that type, checked against
// an independent quantizer in Fp8FormatsTest), H = 300 (partial last
// blocks), and a scale buffer of another format's shape is refused.
TEST(CompiledAbi, E8M0ConversionsAreTheRuntimes) {
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    ASSERT_EQ(moecommCompiledBind(comm), moecommSuccess);
    constexpr int64_t n = 3, h = 300;
    std::vector<float> x(n * h);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = static_cast<float>((i * 37) % 101) * 0.173f - 8.0f;
    moecommMemRef2D in = ref2(x.data(), n, h);
    for (moecommDataType_t type : {moecommFloat8E4M3UE8M0, moecommMxfp8}) {
      const int64_t blocks = fp8Blocks(type, h);
      std::vector<uint8_t> q(n * h), s(n * blocks), qWant(n * h),
          sWant(n * blocks);
      moecommMemRef2D qRef = ref2(q.data(), n, h),
                      sRef = ref2(s.data(), n, blocks);
      const bool mx = type == moecommMxfp8;
      (mx ? _mlir_ciface_moecomm_rt_quantize_f32_mxfp8
          : _mlir_ciface_moecomm_rt_quantize_f32_ue8m0)(&in, &qRef, &sRef);
      ASSERT_EQ(moecommCompiledStatus(), moecommSuccess)
          << moecommCompiledLastError();
      moecommRows_t wide{x.data(), nullptr, n, h, moecommFloat32};
      moecommRows_t narrow{qWant.data(), sWant.data(), n, h, type};
      ASSERT_EQ(moecommQuantizeFp8(&wide, &narrow), moecommSuccess);
      EXPECT_EQ(q, qWant) << type;
      EXPECT_EQ(s, sWant) << type;

      std::vector<float> out(n * h), outWant(n * h);
      moecommMemRef2D outRef = ref2(out.data(), n, h);
      (mx ? _mlir_ciface_moecomm_rt_dequantize_f32_mxfp8
          : _mlir_ciface_moecomm_rt_dequantize_f32_ue8m0)(&qRef, &sRef,
                                                          &outRef);
      ASSERT_EQ(moecommCompiledStatus(), moecommSuccess)
          << moecommCompiledLastError();
      moecommRows_t back{outWant.data(), nullptr, n, h, moecommFloat32};
      ASSERT_EQ(moecommDequantizeFp8(&narrow, &back), moecommSuccess);
      EXPECT_EQ(out, outWant) << type;
    }
  });
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    ASSERT_EQ(moecommCompiledBind(comm), moecommSuccess);
    std::vector<float> x(2 * 300, 1.0f);
    std::vector<uint8_t> q(2 * 300), s(2 * 3);
    // fp8_e4m3_ue8m0's 3 scales per row where mxfp8 has 10.
    moecommMemRef2D in = ref2(x.data(), 2, 300), qRef = ref2(q.data(), 2, 300),
                    sRef = ref2(s.data(), 2, 3);
    _mlir_ciface_moecomm_rt_quantize_f32_mxfp8(&in, &qRef, &sRef);
    Seen seenNow = seen();
    EXPECT_EQ(seenNow.status, moecommInvalidArgument);
    EXPECT_EQ(seenNow.message, "compiled code passed scales [2][3] for rows "
                               "[2][300] (want [2][10])");
  });
}

TEST(CompiledAbi, CollectiveErrorKeepsItsMessage) {
  runOnThreads(2, 1, [&](moecommComm_t comm, int r) {
    ASSERT_EQ(moecommCompiledBind(comm), moecommSuccess);
    OneToken t(r == 1 ? 7 : 0);
    EXPECT_EQ(t.layout(2, 2), nullptr);
    Seen s = seen();
    EXPECT_EQ(s.status, moecommInvalidArgument);
    EXPECT_EQ(s.message,
              "rank 1 token 0 slot 0: expert id 7 out of range [-1, 2)");
  });
}

// A rank that stops (here a later layout fails) still sizes the rows of a
// layout it made before with that layout's counts, which its
// tokens_per_expert gave: expert loops slicing rows by them stay in bounds.
TEST(CompiledAbi, RowsOfAnEarlierLayoutAfterAStop) {
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    ASSERT_EQ(moecommCompiledBind(comm), moecommSuccess);
    OneToken t(1);
    void *layout = t.layout(1, 2);
    ASSERT_NE(layout, nullptr) << moecommCompiledLastError();
    int64_t tpe[2] = {-1, -1};
    moecommMemRef1D tpeRef = ref1(tpe, 2);
    _mlir_ciface_moecomm_rt_tokens_per_expert(layout, &tpeRef);
    EXPECT_EQ(std::vector<int64_t>(tpe, tpe + 2), (std::vector<int64_t>{0, 1}));
    OneToken bad(5);
    EXPECT_EQ(bad.layout(1, 2), nullptr);
    EXPECT_EQ(seen().status, moecommInvalidArgument);
    EXPECT_EQ(moecomm_rt_rows(layout, moecommDirectionDispatch, -1, 0), 1);
    EXPECT_EQ(moecomm_rt_rows(layout, moecommDirectionCombine, -1, 0), 1);
    EXPECT_EQ(moecomm_rt_rows(nullptr, moecommDirectionDispatch, -1, 0), 0);
    // The first error stays the one the host reads.
    EXPECT_NE(seen().message.find("expert id 5 out of range"),
              std::string::npos)
        << seen().message;
    moecomm_rt_layout_release(layout);
  });
}

// The layout's align reaches the runtime: expert segments padded to it, the
// offsets as the runtime gives them, the align in the stats; a bad align is
// the runtime's error.
TEST(CompiledAbi, AlignedLayoutAndItsOffsets) {
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    ASSERT_EQ(moecommCompiledBind(comm), moecommSuccess);
    OneToken t(1); // token 0 -> expert 1 of 4
    void *layout = t.layout(1, 4, 0, 0, 8);
    ASSERT_NE(layout, nullptr) << moecommCompiledLastError();
    EXPECT_EQ(moecomm_rt_rows(layout, moecommDirectionDispatch, -1, 0), 8);
    int64_t offsets[5] = {-1, -1, -1, -1, -1};
    moecommMemRef1D ref = ref1(offsets, 5);
    _mlir_ciface_moecomm_rt_expert_offsets(layout, &ref);
    EXPECT_EQ(moecommCompiledStatus(), moecommSuccess)
        << moecommCompiledLastError();
    EXPECT_EQ(std::vector<int64_t>(offsets, offsets + 5),
              (std::vector<int64_t>{0, 0, 8, 8, 8}));
    moecommCompiledStats_t stats{};
    EXPECT_EQ(moecommCompiledGetStats(&stats), moecommSuccess);
    EXPECT_EQ(stats.align, 8);
    moecommMemRef1D missing = ref1(nullptr, 5);
    _mlir_ciface_moecomm_rt_expert_offsets(layout, &missing);
    EXPECT_EQ(seen().message, "out of memory: compiled code could not "
                              "allocate expert_offsets [5]");
    moecomm_rt_layout_release(layout);
  });
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    ASSERT_EQ(moecommCompiledBind(comm), moecommSuccess);
    OneToken t(0);
    EXPECT_EQ(t.layout(1, 4, 0, 0, 12), nullptr);
    EXPECT_EQ(seen().status, moecommInvalidArgument);
    EXPECT_EQ(seen().message,
              "rank 0: align 12 is not a power of two in [1, 65536]");
  });
}

// A NULL output buffer with elements is a malloc that failed in compiled
// code: a system error naming the buffer, not an invalid argument.
TEST(CompiledAbi, FailedAllocationIsASystemError) {
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    ASSERT_EQ(moecommCompiledBind(comm), moecommSuccess);
    OneToken t(1);
    void *layout = t.layout(1, 4);
    ASSERT_NE(layout, nullptr) << moecommCompiledLastError();
    moecommMemRef1D counts = ref1(nullptr, 4);
    _mlir_ciface_moecomm_rt_tokens_per_expert(layout, &counts);
    Seen s = seen();
    EXPECT_EQ(s.status, moecommSystemError);
    EXPECT_EQ(s.message, "out of memory: compiled code could not allocate "
                         "tokens_per_expert [4]");
    moecomm_rt_layout_release(layout);
  });
  // The other outputs compiled code writes.
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    ASSERT_EQ(moecommCompiledBind(comm), moecommSuccess);
    OneToken t(0);
    void *layout = t.layout(1, 1);
    ASSERT_NE(layout, nullptr) << moecommCompiledLastError();
    float x[4] = {1, 2, 3, 4};
    moecommMemRef2D xRef = ref2(x, 1, 4), recv = ref2(nullptr, 1, 4);
    _mlir_ciface_moecomm_rt_dispatch_f32(layout, 0, &xRef, &recv);
    EXPECT_EQ(seen().status, moecommSystemError);
    EXPECT_EQ(seen().message, "out of memory: compiled code could not "
                              "allocate output rows [1][4]");
    moecomm_rt_layout_release(layout);
  });
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    ASSERT_EQ(moecommCompiledBind(comm), moecommSuccess);
    std::vector<float> x(8, 1.0f), scales(1);
    moecommMemRef2D in = ref2(x.data(), 1, 8), q = ref2(nullptr, 1, 8),
                    sRef = ref2(scales.data(), 1, 1);
    _mlir_ciface_moecomm_rt_quantize_f32(&in, &q, &sRef);
    EXPECT_EQ(seen().status, moecommSystemError);
    EXPECT_EQ(seen().message, "out of memory: compiled code could not "
                              "allocate quantized rows [1][8]");
  });
  // An empty buffer may well be NULL.
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    ASSERT_EQ(moecommCompiledBind(comm), moecommSuccess);
    OneToken t(-1);
    void *layout = t.layout(1, 1);
    ASSERT_NE(layout, nullptr) << moecommCompiledLastError();
    moecommMemRef1D weights = ref1(nullptr, 0);
    _mlir_ciface_moecomm_rt_recv_weights(layout, &weights);
    EXPECT_EQ(seen().status, moecommSuccess) << seen().message;
    moecomm_rt_layout_release(layout);
  });
}

TEST(CompiledAbi, MalformedRoutingDescriptors) {
  runOnThreads(2, 1, [&](moecommComm_t comm, int r) {
    ASSERT_EQ(moecommCompiledBind(comm), moecommSuccess);
    int64_t idx[2] = {0, 1};
    float w[1] = {1};
    moecommMemRef2D idxRef = ref2(idx, 1, 2), wRef = ref2(w, 1, 1);
    // Rank 1's weights do not match its ids; rank 0 is told, at the same
    // call, rank 1's error.
    if (r == 0)
      wRef = ref2(idx, 1, 2);
    EXPECT_EQ(_mlir_ciface_moecomm_rt_layout_i64(&idxRef, &wRef, 2, 1, 2, 0, 0,
                                                 0, 0, 1, 0, nullptr, 0),
              nullptr);
    Seen s = seen();
    if (r == 1) {
      EXPECT_EQ(s.status, moecommInvalidArgument);
      EXPECT_EQ(s.message, "compiled code passed topk_weights [1][1] for "
                           "topk_idx [1][2]");
    } else {
      EXPECT_EQ(s.status, moecommInvalidArgument);
      EXPECT_EQ(s.message, "rank 1: compiled code passed topk_weights [1][1] "
                           "for topk_idx [1][2]");
    }
  });
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    ASSERT_EQ(moecommCompiledBind(comm), moecommSuccess);
    int64_t idx[1] = {0};
    float w[1] = {1};
    // K = 2^32 + 1 would be K = 1 as int32: never read.
    const int64_t K = (int64_t(1) << 32) + 1;
    moecommMemRef2D idxRef = ref2(idx, 0, K), wRef = ref2(w, 0, K);
    EXPECT_EQ(_mlir_ciface_moecomm_rt_layout_i64(&idxRef, &wRef, 1, 1, 1, 0, 0,
                                                 0, 0, 1, 0, nullptr, 0),
              nullptr);
    EXPECT_EQ(seen().status, moecommInvalidArgument);
    EXPECT_EQ(seen().message, "topk_idx [0][4294967297] has more than 2^31 - "
                              "1 columns (top-k)");
  });
}

TEST(CompiledAbi, AllToAllCountTotalOverflow) {
  const int64_t big = int64_t(3) << 61; // two of them exceed INT64_MAX
  runOnThreads(2, 1, [&](moecommComm_t comm, int r) {
    ASSERT_EQ(moecommCompiledBind(comm), moecommSuccess);
    int64_t send[2] = {big, 0}, recv[2] = {-1, -1};
    moecommMemRef1D sendRef = ref1(send, 2), recvRef = ref1(recv, 2);
    int64_t total = _mlir_ciface_moecomm_rt_all_to_all_counts_i64(
        2, 1, &sendRef, &recvRef);
    Seen s = seen();
    if (r == 0) {
      EXPECT_EQ(total, 0);
      EXPECT_EQ(s.status, moecommInvalidArgument);
      EXPECT_EQ(s.message,
                "all_to_all receives more than 2^63 - 1 rows in total");
    } else {
      EXPECT_EQ(total, 0);
      EXPECT_EQ(s.status, moecommSuccess) << s.message;
    }
  });
}

// moecomm_rt_check (the imported ragged all-to-all's checks): a failed check
// records its rank's message with the values in place and keeps the first
// one; the stopped rank's next collective call stops its peer there too.
TEST(CompiledAbi, CheckRecordsItsMessageAndStopsThePeers) {
  runOnThreads(2, 1, [&](moecommComm_t comm, int r) {
    ASSERT_EQ(moecommCompiledBind(comm), moecommSuccess);
    moecomm_rt_check(1, "op at f.mlir:1:2", "never {}", 5, 0, 0, 0);
    EXPECT_EQ(seen().status, moecommSuccess) << seen().message;
    if (r == 1) {
      moecomm_rt_check(0, "op at f.mlir:1:2", "x[j] (j = {}: {} + {}) {}", 3,
                       -7, INT64_MAX, 0);
      moecomm_rt_check(0, "op at f.mlir:3:4", "second", 0, 0, 0, 0);
      EXPECT_EQ(seen().status, moecommInvalidArgument);
      EXPECT_EQ(seen().message, "op at f.mlir:1:2: rank 1: x[j] (j = 3: -7 + " +
                                    std::to_string(INT64_MAX) + ") 0");
    }
    int64_t send[2] = {0, 0}, recv[2] = {-1, -1};
    moecommMemRef1D sendRef = ref1(send, 2), recvRef = ref1(recv, 2);
    EXPECT_EQ(_mlir_ciface_moecomm_rt_all_to_all_counts_i64(2, 1, &sendRef,
                                                            &recvRef),
              0);
    // Both ranks stop with rank 1's check, the cause.
    EXPECT_EQ(seen().status, moecommInvalidArgument);
    EXPECT_EQ(seen().message.rfind("op at f.mlir:1:2: rank 1: x[j]", 0), 0u)
        << seen().message;
  });
  // Likewise when the stopped rank's next call is a layout or an exchange
  // of rows (each shares its error in that collective's agreement).
  for (bool layout : {true, false})
    runOnThreads(2, 1, [&](moecommComm_t comm, int r) {
      ASSERT_EQ(moecommCompiledBind(comm), moecommSuccess);
      if (r == 1)
        moecomm_rt_check(0, "op at f.mlir:5:6", "bad {}", 9, 0, 0, 0);
      if (layout) {
        OneToken t(0);
        EXPECT_EQ(t.layout(2, 2), nullptr);
      } else {
        float rows[2] = {1, 2}, got[2] = {0, 0};
        int64_t send[2] = {1, 0}, recv[2] = {1, 0};
        moecommMemRef2D sendRef = ref2(rows, 1, 2), recvRef = ref2(got, 1, 2);
        moecommMemRef1D countsRef = ref1(send, 2), recvCounts = ref1(recv, 2);
        _mlir_ciface_moecomm_rt_all_to_all_f32_i64(2, 1, &sendRef, &countsRef,
                                                   &recvRef, &recvCounts);
      }
      EXPECT_EQ(seen().status, moecommInvalidArgument);
      EXPECT_EQ(seen().message, "op at f.mlir:5:6: rank 1: bad 9")
          << (layout ? "layout" : "all_to_all");
    });
  // Without a bound communicator (a fresh thread): no rank in the message;
  // a "{}" beyond the four values stays.
  std::thread([] {
    moecomm_rt_check(0, "w", "{} {} {} {} {}", 1, 2, 3, 4);
    EXPECT_EQ(seen().message, "w: 1 2 3 4 {}");
  }).join();
}

// Any int32 a graph passes for an enum is checked (moecomm.h's enums).
TEST(CompiledAbi, EnumArguments) {
  for (int32_t v : {INT32_MIN, -1, 4, INT32_MAX}) {
    runOnThreads(1, 1, [&](moecommComm_t comm, int) {
      ASSERT_EQ(moecommCompiledBind(comm), moecommSuccess);
      OneToken t(0);
      EXPECT_EQ(t.layout(1, 1, /*strategy=*/v), nullptr);
      EXPECT_EQ(seen().status, moecommInvalidArgument);
      EXPECT_EQ(seen().message, "rank 0: unknown strategy " + std::to_string(v));
    });
    runOnThreads(1, 1, [&](moecommComm_t comm, int) {
      ASSERT_EQ(moecommCompiledBind(comm), moecommSuccess);
      OneToken t(0);
      EXPECT_EQ(t.layout(1, 1, 0, /*wire=*/v), nullptr);
      EXPECT_EQ(seen().status, moecommInvalidArgument);
      EXPECT_NE(seen().message.find("wire type"), std::string::npos);
    });
    runOnThreads(1, 1, [&](moecommComm_t comm, int) {
      ASSERT_EQ(moecommCompiledBind(comm), moecommSuccess);
      OneToken t(0);
      void *layout = t.layout(1, 1);
      ASSERT_NE(layout, nullptr) << moecommCompiledLastError();
      EXPECT_EQ(moecomm_rt_rows(layout, /*direction=*/v, 0, 0), 0);
      EXPECT_EQ(seen().status, moecommInvalidArgument);
      EXPECT_EQ(seen().message, "direction " + std::to_string(v) +
                                    " is neither dispatch nor combine");
      ASSERT_EQ(moecommCompiledBind(comm), moecommSuccess);
      float x[2] = {1, 2}, y[2];
      moecommMemRef2D in = ref2(x, 1, 2), out = ref2(y, 1, 2);
      _mlir_ciface_moecomm_rt_gather_f32_f32(layout, v, -1, 0, &in, &out);
      EXPECT_EQ(seen().status, moecommInvalidArgument);
      EXPECT_EQ(seen().message, "rank 0: direction " + std::to_string(v) +
                                    " is neither dispatch nor combine");
      ASSERT_EQ(moecommCompiledBind(comm), moecommSuccess);
      _mlir_ciface_moecomm_rt_dispatch_f32(layout, /*wire=*/v, &in, &out);
      EXPECT_EQ(seen().status, moecommInvalidArgument);
      EXPECT_EQ(seen().message, "rank 0: wire type " + std::to_string(v) +
                                    " is neither x's type nor FP8");
      moecomm_rt_layout_release(layout);
    });
  }
}

} // namespace
