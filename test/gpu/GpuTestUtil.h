//===- GpuTestUtil.h - Device rows and rank runs for the GPU tests --------===//
//
// Shared by the GPU tests: skipping without a device (reported by ctest as
// skipped, not passed), device copies of the runtime tests' Rows, and
// runRankDevice(), the device form of test/runtime's runRank(): the same
// calls (layout, one-shot / staged / start-wait dispatch and combine,
// identity experts, traffic) on an nccl communicator with device rows,
// returning the same RankRun so that checkRank() applies unchanged.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TEST_GPU_GPUTESTUTIL_H
#define MOECOMM_TEST_GPU_GPUTESTUTIL_H

#include "TestUtil.h"
#include "moecomm/moecomm_nccl.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace moecomm {
namespace test {

/// "" when a CUDA device is usable here, else the reason it is not.
std::string noDeviceReason();

/// Skips the test (GTEST_SKIP) when there is no CUDA device.
#define MOECOMM_REQUIRE_GPU()                                                  \
  do {                                                                         \
    const std::string whyNot = ::moecomm::test::noDeviceReason();              \
    if (!whyNot.empty())                                                       \
      GTEST_SKIP() << "no CUDA device: " << whyNot;                            \
  } while (0)

/// ASSERTs that a CUDA call succeeded.
#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

/// A block of rows in device memory (data + FP8 scales of any FP8 type),
/// freed on destruction. New blocks are filled with 0xCD bytes (f32 scales
/// -7, E8M0 scales 0xCD) so that a row the runtime forgets to write shows
/// up.
class DeviceRows {
public:
  DeviceRows() = default;
  DeviceRows(int64_t n, int64_t hidden, moecommDataType_t type);
  ~DeviceRows();
  DeviceRows(DeviceRows &&o) noexcept { *this = std::move(o); }
  DeviceRows &operator=(DeviceRows &&o) noexcept;
  DeviceRows(const DeviceRows &) = delete;

  /// A device copy of `host` (same shape and type).
  static DeviceRows from(const Rows &host);
  /// A host copy (waits for the device).
  Rows toHost() const;
  /// Values as f32 (f32 / bf16 only).
  std::vector<float> values() const { return toHost().values(); }
  moecommRows_t *view() { return &rows_; }
  const moecommRows_t &rows() const { return rows_; }

private:
  void *data_ = nullptr;
  void *scales_ = nullptr; ///< f32 or E8M0 bytes by type
  moecommRows_t rows_{};
};

/// A device copy of a host array.
template <typename T> class DeviceArray {
public:
  DeviceArray() = default;
  explicit DeviceArray(const std::vector<T> &v) : n_(v.size()) {
    if (n_ && cudaMalloc(&p_, n_ * sizeof(T)) == cudaSuccess)
      cudaMemcpy(p_, v.data(), n_ * sizeof(T), cudaMemcpyHostToDevice);
  }
  explicit DeviceArray(size_t n, int fillByte = 0) : n_(n) {
    if (n_ && cudaMalloc(&p_, n_ * sizeof(T)) == cudaSuccess)
      cudaMemset(p_, fillByte, n_ * sizeof(T));
  }
  ~DeviceArray() {
    if (p_)
      cudaFree(p_);
  }
  DeviceArray(const DeviceArray &) = delete;
  DeviceArray &operator=(const DeviceArray &) = delete;
  T *data() const { return static_cast<T *>(p_); }
  size_t size() const { return n_; }
  std::vector<T> toHost() const {
    std::vector<T> v(n_);
    cudaDeviceSynchronize();
    if (n_)
      cudaMemcpy(v.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost);
    return v;
  }

private:
  void *p_ = nullptr;
  size_t n_ = 0;
};

/// runRank() (test/runtime/TestUtil.h) on an nccl communicator: every row
/// buffer is device memory, work goes on `stream`. With `deviceRouting`,
/// topk_idx / topk_weights are passed to moecommLayoutCreate as device
/// pointers.
RankRun runRankDevice(moecommComm_t comm, const Expected &exp,
                      moecommStrategy_t strategy, int rank, cudaStream_t stream,
                      bool deviceRouting);

/// A capacity-mode desc with int64 ids and the default pair capacity (0).
moecommCapacityDesc_t capacityDesc(int64_t numTokens, int topk,
                                   int64_t numExperts, int64_t capacity,
                                   int64_t hidden, moecommDataType_t data,
                                   moecommDataType_t wire);

/// A fixture: a single-rank nccl communicator (comm_) and a non-blocking
/// stream (stream_) for one test, which is skipped without a device.
class NcclSingleRankTest : public ::testing::Test {
protected:
  void SetUp() override;
  void TearDown() override;
  /// The communicator's last error message.
  std::string lastError() const;

  moecommComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

/// Bitwise equality of two byte vectors, with the first differing index.
::testing::AssertionResult sameBytes(const std::vector<uint8_t> &a,
                                     const std::vector<uint8_t> &b);

} // namespace test
} // namespace moecomm

#endif // MOECOMM_TEST_GPU_GPUTESTUTIL_H
