//===- GpuTestUtil.cpp - Device rows and rank runs for the GPU tests ------===//
#include "GpuTestUtil.h"
#include "RunRankWith.h"

#include "moecomm/moecomm_nccl.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace moecomm {
namespace test {

std::string noDeviceReason() {
  static const std::string reason = [] {
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      return std::string("cudaGetDeviceCount: ") + cudaGetErrorString(err);
    }
    if (count < 1)
      return std::string("cudaGetDeviceCount reports 0 devices");
    return std::string();
  }();
  return reason;
}

namespace {
/// Bytes of the scales of `n` rows of `type` (ref::rowBytes, as test
/// Rows sizes them: independent of the runtime's sizes); 0 unless FP8.
int64_t scaleBytesOf(int64_t n, int64_t hidden, moecommDataType_t type) {
  return ref::isFp8Wire(type) ? n * (ref::rowBytes(type, hidden) - hidden) : 0;
}
} // namespace

DeviceRows::DeviceRows(int64_t n, int64_t hidden, moecommDataType_t type) {
  const size_t bytes = std::max<int64_t>(1, n * hidden * elemSize(type));
  if (cudaMalloc(&data_, bytes) != cudaSuccess) {
    ADD_FAILURE() << "cudaMalloc of " << bytes << " bytes failed";
    data_ = nullptr;
  } else {
    cudaMemset(data_, 0xCD, bytes);
  }
  if (ref::isFp8Wire(type)) {
    // fp8_e4m3: f32 -7 each; E8M0 bytes: 0xCD (2^78), as the data.
    const size_t sb = std::max<int64_t>(4, scaleBytesOf(n, hidden, type));
    if (cudaMalloc(&scales_, sb) != cudaSuccess) {
      ADD_FAILURE() << "cudaMalloc of scales failed";
      scales_ = nullptr;
    } else if (type == moecommFloat8E4M3) {
      std::vector<float> fill(sb / 4, -7.0f);
      cudaMemcpy(scales_, fill.data(), sb, cudaMemcpyHostToDevice);
    } else {
      cudaMemset(scales_, 0xCD, sb);
    }
  }
  rows_.data = data_;
  rows_.scales = scales_;
  rows_.rows = n;
  rows_.hidden = hidden;
  rows_.type = type;
}

DeviceRows::~DeviceRows() {
  if (data_)
    cudaFree(data_);
  if (scales_)
    cudaFree(scales_);
}

DeviceRows &DeviceRows::operator=(DeviceRows &&o) noexcept {
  if (this != &o) {
    if (data_)
      cudaFree(data_);
    if (scales_)
      cudaFree(scales_);
    data_ = std::exchange(o.data_, nullptr);
    scales_ = std::exchange(o.scales_, nullptr);
    rows_ = o.rows_;
    o.rows_ = moecommRows_t{};
  }
  return *this;
}

DeviceRows DeviceRows::from(const Rows &host) {
  const moecommRows_t &h = host.rows;
  DeviceRows d(h.rows, h.hidden, h.type);
  const size_t bytes = h.rows * h.hidden * elemSize(h.type);
  if (bytes && d.data_)
    cudaMemcpy(d.data_, host.data.data(), bytes, cudaMemcpyHostToDevice);
  if (const int64_t sb = scaleBytesOf(h.rows, h.hidden, h.type); sb && d.scales_)
    cudaMemcpy(d.scales_, host.scales.data(), sb, cudaMemcpyHostToDevice);
  return d;
}

Rows DeviceRows::toHost() const {
  Rows h(rows_.rows, rows_.hidden, rows_.type);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << "the device failed";
  const size_t bytes = rows_.rows * rows_.hidden * elemSize(rows_.type);
  if (bytes && data_)
    cudaMemcpy(h.data.data(), data_, bytes, cudaMemcpyDeviceToHost);
  if (const int64_t sb = scaleBytesOf(rows_.rows, rows_.hidden, rows_.type);
      sb && scales_)
    cudaMemcpy(h.scales.data(), scales_, sb, cudaMemcpyDeviceToHost);
  return h;
}

moecommCapacityDesc_t capacityDesc(int64_t numTokens, int topk,
                                   int64_t numExperts, int64_t capacity,
                                   int64_t hidden, moecommDataType_t data,
                                   moecommDataType_t wire) {
  moecommCapacityDesc_t d{}; // pairCapacity 0: the default rule
  d.numTokens = numTokens;
  d.topk = topk;
  d.numExperts = numExperts;
  d.capacity = capacity;
  d.hidden = hidden;
  d.idxType = moecommInt64;
  d.dataType = data;
  d.wireType = wire;
  return d;
}

void NcclSingleRankTest::SetUp() {
  MOECOMM_REQUIRE_GPU();
  ASSERT_EQ(moecommCommInitNcclSingle(&comm_, -1), moecommSuccess)
      << moecommCommGetLastError(nullptr);
  CUDA_OK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

void NcclSingleRankTest::TearDown() {
  if (stream_)
    cudaStreamDestroy(stream_);
  if (comm_)
    EXPECT_EQ(moecommCommDestroy(comm_), moecommSuccess) << lastError();
}

std::string NcclSingleRankTest::lastError() const {
  return moecommCommGetLastError(comm_);
}

::testing::AssertionResult sameBytes(const std::vector<uint8_t> &a,
                                     const std::vector<uint8_t> &b) {
  if (a.size() != b.size())
    return ::testing::AssertionFailure()
           << "sizes differ: " << a.size() << " vs " << b.size();
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i])
      return ::testing::AssertionFailure()
             << "byte " << i << " differs: " << (int)a[i] << " vs "
             << (int)b[i];
  return ::testing::AssertionSuccess();
}

namespace {

/// runRankWith()'s Space for device rows: every call goes on `stream`.
struct DeviceSpace {
  using RowsType = DeviceRows;
  cudaStream_t cudaStream;
  DeviceRows upload(const std::vector<float> &values, int64_t n, int64_t hidden,
                    moecommDataType_t type) {
    Rows h = Rows::fromValues(values, hidden, type);
    h.rows.rows = n;
    return DeviceRows::from(h);
  }
  moecommResult_t quantizeFp8(moecommComm_t comm, moecommRows_t *in,
                              moecommRows_t *out) {
    return moecommQuantizeFp8Device(comm, in, out, cudaStream);
  }
  moecommStream_t stream() { return cudaStream; }
  void finish() { EXPECT_EQ(cudaStreamSynchronize(cudaStream), cudaSuccess); }
};

} // namespace

RankRun runRankDevice(moecommComm_t comm, const Expected &exp,
                      moecommStrategy_t strategy, int rank, cudaStream_t stream,
                      bool deviceRouting) {
  const ref::Problem &p = exp.problem;
  const ref::RankRouting &rr = p.routing[rank];
  moecommLayoutDesc_t desc = descFor(p, rank, strategy);
  // Alive until the layout is made from them.
  DeviceArray<int64_t> idx(rr.topkIdx);
  DeviceArray<float> weights(rr.topkWeights);
  DeviceArray<int64_t> slots(p.slotExperts);
  if (deviceRouting && rr.numTokens > 0) {
    desc.topkIdx = idx.data();
    desc.topkWeights = weights.data();
  }
  if (deviceRouting && p.hasPlacement())
    desc.slotExperts = slots.data(); // copied to the host with the routing
  DeviceSpace space{stream};
  return runRankWith(comm, exp, desc, rank, space, RankRun());
}

} // namespace test
} // namespace moecomm
