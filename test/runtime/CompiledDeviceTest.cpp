//===- CompiledDeviceTest.cpp - The device form on the host device --------===//
//
// moecomm_compiled.h's device form on threads communicators, whose device is
// the host device: buffer calls on strided descriptors, a dispatch + combine
// through the compiled entries with device-allocated rows against the
// oracle, and the checks the registry makes (a buffer freed under a started
// exchange, an exchange never waited, host rows on a device-bound thread,
// unknown frees). The same layer runs on a CUDA device in
// test/gpu/CompiledDeviceGpuTest.cpp.
//
//===----------------------------------------------------------------------===//
#include "CompiledDeviceRun.h"
#include "TestUtil.h"
#include "moecomm/moecomm_compiled.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <numeric>
#include <sstream>
#include <vector>

using namespace moecomm;
using namespace moecomm::test;

namespace {

moecommMemRef2D ref2(void *data, int64_t rows, int64_t cols) {
  return moecommMemRef2D{data, data, 0, {rows, cols}, {cols, 1}};
}

/// A ranked descriptor as compiled code passes it unranked.
template <int N> struct Desc {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes[N];
  int64_t strides[N];
  moecommUnrankedMemRef unranked() { return {N, this}; }
};

/// moecomm_rt_alloc's buffer of `bytes` on the device (or host: device 0).
void *alloc(int64_t bytes, int32_t device = 1) {
  moecommMemRef1D m;
  _mlir_ciface_moecomm_rt_alloc(&m, bytes, device);
  EXPECT_EQ(m.allocated, m.aligned);
  EXPECT_EQ(m.offset, 0);
  EXPECT_EQ(m.sizes[0], bytes);
  return m.aligned;
}

/// Whether `text` contains `part` (the messages name run-time addresses).
::testing::AssertionResult contains(const std::string &text,
                                    const std::string &part) {
  if (text.find(part) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "\"" << text << "\" lacks \"" << part << "\"";
}

std::string addressOf(const void *p) {
  std::ostringstream os;
  os << p;
  return os.str();
}

/// One token per rank to expert `expert` (int64 ids) in device buffers; its
/// layout over `experts` experts, f32 wire.
struct DeviceToken {
  void *idx, *w;
  explicit DeviceToken(int64_t expert) {
    const float weight = 0.5f;
    EXPECT_EQ(moecommCompiledDeviceAlloc(8, &idx), moecommSuccess);
    EXPECT_EQ(moecommCompiledDeviceAlloc(4, &w), moecommSuccess);
    moecommCompiledDeviceCopy(idx, &expert, 8);
    moecommCompiledDeviceCopy(w, &weight, 4);
  }
  ~DeviceToken() {
    moecommCompiledFree(idx);
    moecommCompiledFree(w);
  }
  void *layout(int64_t ranks, int64_t experts, int32_t strategy = 1) {
    moecommMemRef2D i = ref2(idx, 1, 1), wr = ref2(w, 1, 1);
    return _mlir_ciface_moecomm_rt_layout_i64(&i, &wr, ranks, 1, experts,
                                              strategy, 0, 0, moecommFloat32, 1,
                                              0, nullptr, 0);
  }
};

// Alloc / copy / fill / free round trips with strided rank-1 and rank-2
// descriptors; host metadata (device 0) is plain host memory.
TEST(CompiledDevice, BufferRoundTrips) {
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    ASSERT_EQ(moecommCompiledBindDevice(comm, nullptr), moecommSuccess);
    // [4][6] f32 holding 0..23.
    std::vector<float> values(24);
    std::iota(values.begin(), values.end(), 0.0f);
    auto *a = static_cast<float *>(alloc(24 * 4));
    auto *b = static_cast<float *>(alloc(6 * 4));
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 256, 0u);
    ASSERT_EQ(moecommCompiledDeviceCopy(a, values.data(), 24 * 4),
              moecommSuccess);
    // a[1:3][0:6:2] (rows 1 and 2, every other column) -> b [2][3].
    Desc<2> src{a, a, 6, {2, 3}, {6, 2}}, dst{b, b, 0, {2, 3}, {3, 1}};
    moecommUnrankedMemRef s = src.unranked(), d = dst.unranked();
    _mlir_ciface_moecomm_rt_copy_f32(&s, &d);
    std::vector<float> got(6);
    ASSERT_EQ(moecommCompiledDeviceCopy(got.data(), b, 24), moecommSuccess);
    EXPECT_EQ(got, (std::vector<float>{6, 8, 10, 12, 14, 16}));
    // Rank 1: column 5 of a (stride 6) -> b[0:4].
    Desc<1> col{a, a, 5, {4}, {6}}, head{b, b, 0, {4}, {1}};
    s = col.unranked();
    d = head.unranked();
    _mlir_ciface_moecomm_rt_copy_f32(&s, &d);
    ASSERT_EQ(moecommCompiledDeviceCopy(got.data(), b, 16), moecommSuccess);
    EXPECT_EQ(std::vector<float>(got.begin(), got.begin() + 4),
              (std::vector<float>{5, 11, 17, 23}));
    // Zero a[1:3][1:5] (contiguous rows at pitch 6) and a[3][0:6:3].
    Desc<2> block{a, a, 7, {2, 4}, {6, 1}};
    Desc<1> every3{a, a, 18, {2}, {3}};
    d = block.unranked();
    _mlir_ciface_moecomm_rt_fill_zero_f32(&d);
    d = every3.unranked();
    _mlir_ciface_moecomm_rt_fill_zero_f32(&d);
    ASSERT_EQ(moecommCompiledDeviceCopy(values.data(), a, 24 * 4),
              moecommSuccess);
    EXPECT_EQ(values, (std::vector<float>{0,  1,  2,  3, 4,  5,  //
                                          6,  0,  0,  0, 0,  11, //
                                          12, 0,  0,  0, 0,  17, //
                                          0,  19, 20, 0, 22, 23}));
    // Host metadata: i64 copied from a device buffer, read on the host.
    auto *meta = static_cast<int64_t *>(alloc(3 * 8, 0));
    int64_t init[3] = {7, 8, 9};
    auto *dev = static_cast<int64_t *>(alloc(3 * 8));
    moecommCompiledDeviceCopy(dev, init, sizeof init);
    Desc<1> from{dev, dev, 0, {3}, {1}}, to{meta, meta, 0, {3}, {1}};
    s = from.unranked();
    d = to.unranked();
    _mlir_ciface_moecomm_rt_copy_i64(&s, &d);
    EXPECT_EQ(std::vector<int64_t>(meta, meta + 3),
              (std::vector<int64_t>{7, 8, 9}));
    _mlir_ciface_moecomm_rt_fill_zero_i64(&d);
    EXPECT_EQ(std::vector<int64_t>(meta, meta + 3),
              (std::vector<int64_t>{0, 0, 0}));
    // A constant of the graph's image (memref.get_global: host memory no
    // call allocated) copied into a device buffer, as moecomm-device-buffers
    // does for constants device work reads.
    static const int64_t constant[3] = {4, 5, 6};
    Desc<1> global{const_cast<int64_t *>(constant),
                   const_cast<int64_t *>(constant),
                   0,
                   {3},
                   {1}},
        onDevice{dev, dev, 0, {3}, {1}};
    s = global.unranked();
    d = onDevice.unranked();
    _mlir_ciface_moecomm_rt_copy_i64(&s, &d);
    ASSERT_EQ(moecommCompiledDeviceCopy(init, dev, sizeof init),
              moecommSuccess);
    EXPECT_EQ(std::vector<int64_t>(init, init + 3),
              (std::vector<int64_t>{4, 5, 6}));
    // Zero bytes: no buffer, freeing it does nothing.
    EXPECT_EQ(alloc(0), nullptr);
    moecomm_rt_free(nullptr);
    for (void *p : {static_cast<void *>(a), static_cast<void *>(b),
                    static_cast<void *>(meta), static_cast<void *>(dev)})
      moecomm_rt_free(p);
    EXPECT_EQ(moecommCompiledDeviceSynchronize(), moecommSuccess);
    EXPECT_EQ(moecommCompiledStatus(), moecommSuccess)
        << moecommCompiledLastError();
  });
}

// A copy that runs past the end of its buffer, and mismatched shapes, are
// recorded:
// a 3-element copy from element 2 of a 4-element buffer, then a copy of 3
// elements into 4.
TEST(CompiledDevice, CopyOutsideABuffer) {
  for (bool outside : {true, false})
    runOnThreads(1, 1, [&](moecommComm_t comm, int) {
      ASSERT_EQ(moecommCompiledBindDevice(comm, nullptr), moecommSuccess);
      auto *a = static_cast<float *>(alloc(4 * 4));
      Desc<1> src{a, a, outside ? 2 : 0, {3}, {1}},
          dst{a, a, 0, {outside ? 3 : 4}, {1}};
      moecommUnrankedMemRef s = src.unranked(), d = dst.unranked();
      _mlir_ciface_moecomm_rt_copy_f32(&s, &d);
      EXPECT_EQ(moecommCompiledStatus(), moecommInvalidArgument);
      EXPECT_EQ(moecommCompiledLastError(),
                outside ? "compiled code passed the copy source at " +
                              addressOf(a + 2) +
                              " (12 bytes), which runs past the end of its "
                              "buffer (" +
                              addressOf(a) + ", 16 bytes)"
                        : std::string("compiled code copied a memref of shape "
                                      "[3] into one of shape [4]"));
      moecomm_rt_free(a);
    });
}

// A view that starts before a buffer and runs into it, strides whose span
// overflows, and a driver copy past a buffer's end are recorded before
// anything is written.
TEST(CompiledDevice, RangesAroundABuffer) {
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    ASSERT_EQ(moecommCompiledBindDevice(comm, nullptr), moecommSuccess);
    auto *a = static_cast<float *>(alloc(4 * 4));
    Desc<1> before{a, a, -2, {4}, {1}};
    moecommUnrankedMemRef b = before.unranked();
    _mlir_ciface_moecomm_rt_fill_zero_f32(&b);
    EXPECT_EQ(moecommCompiledStatus(), moecommInvalidArgument);
    EXPECT_EQ(moecommCompiledLastError(),
              "compiled code passed the filled memref at " +
                  addressOf(a - 2) +
                  " (16 bytes), which starts before the buffer at " +
                  addressOf(a) + " (16 bytes) and runs into it");
    moecomm_rt_free(a);
  });
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    ASSERT_EQ(moecommCompiledBindDevice(comm, nullptr), moecommSuccess);
    auto *a = static_cast<float *>(alloc(4 * 4));
    Desc<1> huge{a, a, 0, {4}, {INT64_MAX / 2}};
    moecommUnrankedMemRef h = huge.unranked();
    _mlir_ciface_moecomm_rt_fill_zero_f32(&h);
    EXPECT_EQ(moecommCompiledStatus(), moecommInvalidArgument);
    EXPECT_EQ(moecommCompiledLastError(),
              std::string("compiled code passed the filled memref [4] with "
                          "strides spanning more than 2^63 - 1 bytes"));
    moecomm_rt_free(a);
  });
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    ASSERT_EQ(moecommCompiledBindDevice(comm, nullptr), moecommSuccess);
    void *a = nullptr;
    ASSERT_EQ(moecommCompiledDeviceAlloc(16, &a), moecommSuccess);
    std::vector<char> big(1024, 1);
    EXPECT_EQ(moecommCompiledDeviceCopy(a, big.data(), big.size()),
              moecommInvalidArgument);
    EXPECT_EQ(moecommCompiledLastError(),
              "moecommCompiledDeviceCopy: dst at " + addressOf(a) +
                  " (1024 bytes), which runs past the end of its buffer (" +
                  addressOf(a) + ", 16 bytes)");
    EXPECT_EQ(moecommCompiledFree(a), moecommSuccess);
  });
}

// A stopped thread writes zeros into the counts and offsets the graph's host
// code reads as loop bounds (here without a layout: its creation failed),
// on a plain and a device-bound thread; the host device's stream is NULL.
TEST(CompiledDevice, StoppedThreadZerosCounts) {
  for (bool device : {false, true})
    runOnThreads(1, 1, [&](moecommComm_t comm, int) {
      ASSERT_EQ(device ? moecommCompiledBindDevice(comm, nullptr)
                       : moecommCompiledBind(comm),
                moecommSuccess);
      EXPECT_EQ(moecomm_rt_stream(), nullptr);
      int local = 0;
      moecomm_rt_free(&local); // stops the thread
      ASSERT_EQ(moecommCompiledStatus(), moecommInvalidArgument);
      auto *counts = static_cast<int64_t *>(alloc(3 * 8, /*device=*/0));
      auto *offsets = static_cast<int64_t *>(alloc(4 * 8, /*device=*/0));
      std::fill(counts, counts + 3, -7);
      std::fill(offsets, offsets + 4, -7);
      moecommMemRef1D c{counts, counts, 0, {3}, {1}},
          o{offsets, offsets, 0, {4}, {1}};
      _mlir_ciface_moecomm_rt_tokens_per_expert(nullptr, &c);
      _mlir_ciface_moecomm_rt_expert_offsets(nullptr, &o);
      EXPECT_EQ(std::vector<int64_t>(counts, counts + 3),
                std::vector<int64_t>(3, 0));
      EXPECT_EQ(std::vector<int64_t>(offsets, offsets + 4),
                std::vector<int64_t>(4, 0));
      moecomm_rt_free(counts);
      moecomm_rt_free(offsets);
    });
}

// The layer through the compiled entries with device rows, every strategy,
// W = 4 as 2 nodes x 2: dispatch, recv weights and tokens per expert against
// the oracle, the combine bit-identical to the runtime's host result.
TEST(CompiledDevice, DispatchCombineMatchesTheOracle) {
  forEveryStrategy(f32Spec(4, 2, 6), [](const Expected &exp, int32_t strategy,
                                        const std::vector<RankRun> &host) {
    runOnThreads(4, 2, [&](moecommComm_t comm, int r) {
      checkCompiledDeviceRun(exp, r,
                             runCompiledDevice(comm, exp, r, strategy, nullptr),
                             host[r].combineW);
    });
  });
}

// all_to_all with its counts in device buffers: read and written through
// the device, the rows moved between device buffers.
TEST(CompiledDevice, AllToAllWithDeviceCounts) {
  runOnThreads(2, 1, [&](moecommComm_t comm, int r) {
    ASSERT_EQ(moecommCompiledBindDevice(comm, nullptr), moecommSuccess);
    const int64_t counts[2] = {1, 2}; // rows to rank 0, rows to rank 1
    void *sc = alloc(16), *rc = alloc(16);
    moecommCompiledDeviceCopy(sc, counts, 16);
    moecommMemRef1D scRef{sc, sc, 0, {2}, {1}}, rcRef{rc, rc, 0, {2}, {1}};
    const int64_t total =
        _mlir_ciface_moecomm_rt_all_to_all_counts_i64(2, 1, &scRef, &rcRef);
    ASSERT_EQ(total, r == 0 ? 2 : 4) << moecommCompiledLastError();
    std::vector<float> rows;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 2; ++j)
        rows.push_back(float(r * 100 + i * 10 + j));
    void *send = alloc(3 * 2 * 4), *recv = alloc(total * 2 * 4);
    moecommCompiledDeviceCopy(send, rows.data(), rows.size() * 4);
    moecommMemRef2D sendRef = ref2(send, 3, 2), recvRef = ref2(recv, total, 2);
    _mlir_ciface_moecomm_rt_all_to_all_f32_i64(2, 1, &sendRef, &scRef, &recvRef,
                                               &rcRef);
    std::vector<float> got(total * 2);
    int64_t received[2] = {-1, -1};
    moecommCompiledDeviceCopy(got.data(), recv, got.size() * 4);
    moecommCompiledDeviceCopy(received, rc, 16);
    EXPECT_EQ(moecommCompiledStatus(), moecommSuccess)
        << moecommCompiledLastError();
    if (r == 0) {
      EXPECT_EQ(got, (std::vector<float>{0, 1, 100, 101}));
      EXPECT_EQ(std::vector<int64_t>(received, received + 2),
                (std::vector<int64_t>{1, 1}));
    } else {
      EXPECT_EQ(got, (std::vector<float>{10, 11, 20, 21, 110, 111, 120, 121}));
      EXPECT_EQ(std::vector<int64_t>(received, received + 2),
                (std::vector<int64_t>{2, 2}));
    }
    for (void *p : {sc, rc, send, recv})
      moecomm_rt_free(p);
  });
}

/// On a device-bound thread of a 2-rank communicator: one token to the
/// other rank's expert, its flat layout, and stage 0 of `direction` started
/// on [1][4] f32 device rows (16 bytes each side).
struct StartedExchange {
  DeviceToken token;
  void *layout, *send, *recv, *request = nullptr;
  StartedExchange(int rank, int32_t direction) : token(1 - rank) {
    layout = token.layout(2, 2);
    send = alloc(16);
    recv = alloc(16);
    moecommMemRef2D s = ref2(send, 1, 4), d = ref2(recv, 1, 4);
    request = _mlir_ciface_moecomm_rt_exchange_start_f32(layout, direction, 0,
                                                         &s, &d);
  }
  ~StartedExchange() { moecomm_rt_layout_release(layout); }
};

// Freeing a buffer a started exchange uses is an error naming it (the
// buffer is kept); the wait then completes and the free works.
TEST(CompiledDevice, FreeBeforeWait) {
  runOnThreads(2, 1, [&](moecommComm_t comm, int r) {
    ASSERT_EQ(moecommCompiledBindDevice(comm, nullptr), moecommSuccess);
    StartedExchange e(r, moecommDirectionDispatch);
    ASSERT_NE(e.request, nullptr) << moecommCompiledLastError();
    moecomm_rt_free(e.recv);
    EXPECT_EQ(moecommCompiledStatus(), moecommInvalidArgument);
    EXPECT_EQ(moecommCompiledLastError(),
              "moecomm_rt_free of " + addressOf(e.recv) +
                  " (16 bytes), the recv rows of the dispatch stage 0 "
                  "exchange compiled code started and has not waited "
                  "(moecomm_rt_wait): the buffer is kept");
    moecomm_rt_wait(e.request);
    EXPECT_EQ(moecommCompiledFree(e.recv), moecommSuccess);
    EXPECT_EQ(moecommCompiledFree(e.send), moecommSuccess);
  });
}

// An exchange started and never waited is reported by the synchronize.
TEST(CompiledDevice, UnwaitedExchangeIsReported) {
  runOnThreads(2, 1, [&](moecommComm_t comm, int r) {
    ASSERT_EQ(moecommCompiledBindDevice(comm, nullptr), moecommSuccess);
    StartedExchange e(r, moecommDirectionCombine);
    ASSERT_NE(e.request, nullptr) << moecommCompiledLastError();
    EXPECT_EQ(moecommCompiledDeviceSynchronize(), moecommInvalidArgument);
    EXPECT_EQ(moecommCompiledLastError(),
              std::string("1 exchange(s) compiled code started were not "
                          "waited (moecomm_rt_wait), the first: combine "
                          "stage 0"));
    moecomm_rt_wait(e.request);
    EXPECT_EQ(moecommCompiledDeviceSynchronize(), moecommSuccess);
    moecomm_rt_free(e.send);
    moecomm_rt_free(e.recv);
  });
}

// Host (malloc) rows on a device-bound thread: the rows, the routing, the
// GEMM operands and tokens_per_expert in device memory are all named.
TEST(CompiledDevice, HostRowsAreNotDeviceMemory) {
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    ASSERT_EQ(moecommCompiledBindDevice(comm, nullptr), moecommSuccess);
    DeviceToken t(0);
    void *layout = t.layout(1, 1);
    ASSERT_NE(layout, nullptr) << moecommCompiledLastError();
    std::vector<float> x(4, 1.0f);
    void *recv = alloc(16);
    moecommMemRef2D xRef = ref2(x.data(), 1, 4), recvRef = ref2(recv, 1, 4);
    _mlir_ciface_moecomm_rt_dispatch_f32(layout, moecommFloat32, &xRef,
                                         &recvRef);
    EXPECT_EQ(moecommCompiledStatus(), moecommInvalidArgument);
    EXPECT_EQ(moecommCompiledLastError(),
              "compiled code passed input rows (16 bytes at " +
                  addressOf(x.data()) +
                  ") that are not device memory: not inside a device buffer "
                  "of this thread (moecomm_rt_alloc with device 1, "
                  "moecommCompiledDeviceAlloc); is it a host graph run on a "
                  "device-bound thread?");
    moecomm_rt_free(recv);
    moecomm_rt_layout_release(layout);
  });
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    ASSERT_EQ(moecommCompiledBindDevice(comm, nullptr), moecommSuccess);
    int64_t idx = 0;
    float w = 1.0f;
    moecommMemRef2D i = ref2(&idx, 1, 1), wr = ref2(&w, 1, 1);
    EXPECT_EQ(_mlir_ciface_moecomm_rt_layout_i64(
                  &i, &wr, 1, 1, 1, 1, 0, 0, moecommFloat32, 1, 0, nullptr, 0),
              nullptr);
    EXPECT_TRUE(contains(moecommCompiledLastError(),
                         "compiled code passed topk_idx (8 bytes at "));
  });
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    ASSERT_EQ(moecommCompiledBindDevice(comm, nullptr), moecommSuccess);
    float a = 1, b = 2;
    void *c = alloc(4);
    moecommMemRef2D aRef = ref2(&a, 1, 1), bRef = ref2(&b, 1, 1),
                    cRef = ref2(c, 1, 1);
    _mlir_ciface_moecomm_rt_matmul_f32(0, &aRef, &bRef, &cRef);
    EXPECT_TRUE(contains(moecommCompiledLastError(),
                         "compiled code passed GEMM operand A (4 bytes at "));
    moecomm_rt_free(c);
  });
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    ASSERT_EQ(moecommCompiledBindDevice(comm, nullptr), moecommSuccess);
    DeviceToken t(0);
    void *layout = t.layout(1, 1);
    void *counts = alloc(8, 1);
    moecommMemRef1D ref{counts, counts, 0, {1}, {1}};
    _mlir_ciface_moecomm_rt_tokens_per_expert(layout, &ref);
    EXPECT_EQ(moecommCompiledLastError(),
              std::string("compiled code passed tokens_per_expert [1] in "
                          "device memory; it is host metadata "
                          "(moecomm_rt_alloc with device 0)"));
    moecomm_rt_free(counts);
    moecomm_rt_layout_release(layout);
  });
}

// The device's GEMM and FP8 casts on device buffers give the host results.
TEST(CompiledDevice, GemmAndFp8OnTheDevice) {
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    ASSERT_EQ(moecommCompiledBindDevice(comm, nullptr), moecommSuccess);
    // C [2][2] += A [2][3] x B^T with B [2][3].
    std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {1, 0, 1, 0, 1, 0},
                       c = {10, 20, 30, 40};
    void *da = alloc(24), *db = alloc(24), *dc = alloc(16);
    moecommCompiledDeviceCopy(da, a.data(), 24);
    moecommCompiledDeviceCopy(db, b.data(), 24);
    moecommCompiledDeviceCopy(dc, c.data(), 16);
    moecommMemRef2D aRef = ref2(da, 2, 3), bRef = ref2(db, 2, 3),
                    cRef = ref2(dc, 2, 2);
    _mlir_ciface_moecomm_rt_matmul_f32(1, &aRef, &bRef, &cRef);
    moecommCompiledDeviceCopy(c.data(), dc, 16);
    EXPECT_EQ(c, (std::vector<float>{14, 22, 40, 45}));
    // Quantize [1][8] f32 and back.
    std::vector<float> x = {1, -2, 3, 0.5f, 448, 0, 7, -0.25f}, back(8);
    void *dx = alloc(32), *dq = alloc(8), *ds = alloc(4), *dy = alloc(32);
    moecommCompiledDeviceCopy(dx, x.data(), 32);
    moecommMemRef2D xRef = ref2(dx, 1, 8), qRef = ref2(dq, 1, 8),
                    sRef = ref2(ds, 1, 1), yRef = ref2(dy, 1, 8);
    _mlir_ciface_moecomm_rt_quantize_f32(&xRef, &qRef, &sRef);
    _mlir_ciface_moecomm_rt_dequantize_f32(&qRef, &sRef, &yRef);
    moecommCompiledDeviceCopy(back.data(), dy, 32);
    EXPECT_EQ(back, x); // all exact in e4m3 with scale 1
    EXPECT_EQ(moecommCompiledStatus(), moecommSuccess)
        << moecommCompiledLastError();
    for (void *p : {da, db, dc, dx, dq, ds, dy})
      moecomm_rt_free(p);
  });
}

// Driver misuse: unknown frees, NULL copies, a stream on a CPU backend, no
// device bound.
TEST(CompiledDevice, DriverErrors) {
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    ASSERT_EQ(moecommCompiledBindDevice(comm, nullptr), moecommSuccess);
    int local = 0;
    moecomm_rt_free(&local);
    EXPECT_EQ(moecommCompiledStatus(), moecommInvalidArgument);
    EXPECT_EQ(moecommCompiledLastError(),
              "moecomm_rt_free of " + addressOf(&local) +
                  ", which is not a live buffer of this thread "
                  "(moecomm_rt_alloc, moecommCompiledDeviceAlloc)");
    EXPECT_EQ(moecommCompiledFree(&local), moecommInvalidArgument);
    EXPECT_EQ(moecommCompiledDeviceCopy(nullptr, &local, 4),
              moecommInvalidArgument);
    void *none = &local;
    EXPECT_EQ(moecommCompiledDeviceAlloc(0, &none), moecommSuccess);
    EXPECT_EQ(none, nullptr);
    EXPECT_EQ(moecommCompiledFree(nullptr), moecommSuccess);
    EXPECT_EQ(moecommCompiledDeviceAlloc(SIZE_MAX, &none), moecommSystemError);
  });
  // An allocation that fails is a system error; the buffer is NULL.
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    ASSERT_EQ(moecommCompiledBindDevice(comm, nullptr), moecommSuccess);
    moecommMemRef1D m;
    _mlir_ciface_moecomm_rt_alloc(&m, INT64_MAX, 1);
    EXPECT_EQ(m.aligned, nullptr);
    EXPECT_EQ(moecommCompiledStatus(), moecommSystemError);
    EXPECT_EQ(moecommCompiledLastError(),
              std::string("out of memory: 9223372036854775807 bytes of host "
                          "device memory"));
  });
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    int stream = 0;
    EXPECT_EQ(moecommCompiledBindDevice(comm, &stream), moecommInvalidArgument);
    EXPECT_TRUE(contains(moecommCompiledLastError(),
                         "a stream was given for a communicator of a CPU "
                         "backend"));
    void *p = nullptr;
    EXPECT_EQ(moecommCompiledDeviceAlloc(4, &p), moecommInvalidArgument);
    EXPECT_EQ(moecommCompiledBindDevice(nullptr, nullptr),
              moecommInvalidArgument);
  });
}

// A plain bind keeps host graphs as they were: no device, host rows work,
// and a device-form buffer call says what is missing (still giving memory,
// so the graph's own code does not crash).
TEST(CompiledDevice, PlainBindIsUnchanged) {
  runOnThreads(1, 1, [&](moecommComm_t comm, int) {
    ASSERT_EQ(moecommCompiledBindDevice(comm, nullptr), moecommSuccess);
    ASSERT_EQ(moecommCompiledBind(comm), moecommSuccess);
    int64_t idx = 0;
    float w = 1.0f;
    moecommMemRef2D i = ref2(&idx, 1, 1), wr = ref2(&w, 1, 1);
    void *layout = _mlir_ciface_moecomm_rt_layout_i64(
        &i, &wr, 1, 1, 1, 1, 0, 0, moecommFloat32, 1, 0, nullptr, 0);
    ASSERT_NE(layout, nullptr) << moecommCompiledLastError();
    std::vector<float> x = {1, 2, 3, 4}, recv(4);
    moecommMemRef2D xRef = ref2(x.data(), 1, 4),
                    recvRef = ref2(recv.data(), 1, 4);
    _mlir_ciface_moecomm_rt_dispatch_f32(layout, moecommFloat32, &xRef,
                                         &recvRef);
    EXPECT_EQ(moecommCompiledStatus(), moecommSuccess)
        << moecommCompiledLastError();
    EXPECT_EQ(recv, x);
    moecomm_rt_layout_release(layout);
    void *p = nullptr;
    EXPECT_EQ(moecommCompiledDeviceAlloc(4, &p), moecommInvalidArgument);
    moecommMemRef1D m;
    _mlir_ciface_moecomm_rt_alloc(&m, 64, 1);
    ASSERT_NE(m.aligned, nullptr);
    static_cast<char *>(m.aligned)[63] = 1;
    moecomm_rt_free(m.aligned);
    EXPECT_EQ(moecommCompiledLastError(),
              std::string("moecommCompiledDeviceAlloc: no device is bound to "
                          "this thread; call moecommCompiledBindDevice"));
  });
}

} // namespace
