//===- GpuTestUtil.cpp - Device rows and rank runs for the GPU tests ------===//
#include "GpuTestUtil.h"

#include "moecomm/moecomm_nccl.h"

#include <algorithm>
#include <cstring>
#include <deque>
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
int64_t blocksOf(int64_t hidden) { return (hidden + 127) / 128; }
} // namespace

DeviceRows::DeviceRows(int64_t n, int64_t hidden, moecommDataType_t type) {
  const size_t bytes = std::max<int64_t>(1, n * hidden * elemSize(type));
  if (cudaMalloc(&data_, bytes) != cudaSuccess) {
    ADD_FAILURE() << "cudaMalloc of " << bytes << " bytes failed";
    data_ = nullptr;
  } else {
    cudaMemset(data_, 0xCD, bytes);
  }
  if (type == moecommFloat8E4M3) {
    const size_t nb = std::max<int64_t>(1, n * blocksOf(hidden));
    std::vector<float> fill(nb, -7.0f);
    void *s = nullptr;
    if (cudaMalloc(&s, nb * 4) == cudaSuccess) {
      scales_ = static_cast<float *>(s);
      cudaMemcpy(scales_, fill.data(), nb * 4, cudaMemcpyHostToDevice);
    } else {
      ADD_FAILURE() << "cudaMalloc of scales failed";
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
  if (h.type == moecommFloat8E4M3 && d.scales_ && h.rows > 0)
    cudaMemcpy(d.scales_, host.scales.data(), h.rows * blocksOf(h.hidden) * 4,
               cudaMemcpyHostToDevice);
  return d;
}

Rows DeviceRows::toHost() const {
  Rows h(rows_.rows, rows_.hidden, rows_.type);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << "the device failed";
  const size_t bytes = rows_.rows * rows_.hidden * elemSize(rows_.type);
  if (bytes && data_)
    cudaMemcpy(h.data.data(), data_, bytes, cudaMemcpyDeviceToHost);
  if (rows_.type == moecommFloat8E4M3 && scales_ && rows_.rows > 0)
    cudaMemcpy(h.scales.data(), scales_,
               rows_.rows * blocksOf(rows_.hidden) * 4, cudaMemcpyDeviceToHost);
  return h;
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

RankRun runRankDevice(moecommComm_t comm, const Expected &exp,
                      moecommStrategy_t strategy, int rank, cudaStream_t stream,
                      bool deviceRouting) {
  const ref::Problem &p = exp.problem;
  const ref::RankRouting &rr = p.routing[rank];
  const int64_t H = p.hidden, T = rr.numTokens;
  moecommStream_t s = stream;
  RankRun run;
  auto note = [&](moecommResult_t r, const char *what) {
    if (r != moecommSuccess && run.result == moecommSuccess) {
      run.result = r;
      run.error = std::string(what) + ": " + moecommCommGetLastError(comm);
    }
  };
  moecommLayoutDesc_t desc = descFor(p, rank, strategy);
  DeviceArray<int64_t> idx(rr.topkIdx);
  DeviceArray<float> weights(rr.topkWeights);
  if (deviceRouting && T > 0) {
    desc.topkIdx = idx.data();
    desc.topkWeights = weights.data();
  }
  note(moecommCommResetTraffic(comm), "reset");
  moecommLayout_t layout = nullptr;
  moecommResult_t lr = moecommLayoutCreate(comm, &desc, &layout);
  note(lr, "layout");
  if (lr != moecommSuccess)
    return run;
  note(moecommCommGetTraffic(comm, 0, &run.layoutTraffic), "traffic");
  note(moecommLayoutGetInfo(layout, &run.info), "info");
  const int64_t R = run.info.recvRows;
  run.tokensPerExpert.assign(run.info.localExperts, -1);
  run.weights.assign(R, -1.0f);
  run.sources.assign(2 * R, -1);
  note(moecommLayoutTokensPerExpert(layout, run.tokensPerExpert.data()), "tpe");
  note(moecommLayoutRecvWeights(layout, run.weights.data()), "weights");
  note(moecommLayoutRecvSources(layout, run.sources.data()), "sources");
  for (int st = 0; st < run.info.numStages; ++st) {
    moecommScope_t sc;
    note(moecommLayoutStage(layout, moecommDirectionDispatch, st, &sc, nullptr,
                            nullptr),
         "stage");
    run.dispatchScopes.push_back(sc);
    note(moecommLayoutStage(layout, moecommDirectionCombine, st, &sc, nullptr,
                            nullptr),
         "stage");
    run.combineScopes.push_back(sc);
  }

  // One-shot dispatch.
  Rows xh = Rows::fromValues(exp.x[rank], H, p.dataType);
  xh.rows.rows = T;
  DeviceRows x = DeviceRows::from(xh);
  DeviceRows recv(R, H, p.dataType);
  note(moecommCommResetTraffic(comm), "reset");
  note(moecommDispatch(comm, layout, x.view(), p.wireType, recv.view(), s),
       "dispatch");
  note(moecommCommGetTraffic(comm, 0, &run.dispatchTraffic), "traffic");
  note(moecommCommGetTraffic(comm, 1, &run.dispatchGlobal), "traffic");
  run.dispatch = recv.values();

  // Staged dispatch.
  {
    std::deque<DeviceRows> keep;
    moecommRows_t *in = x.view();
    if (run.info.numStages == 0 && p.wireType == moecommFloat8E4M3) {
      keep.emplace_back(T, H, moecommFloat8E4M3);
      note(moecommQuantizeFp8Device(comm, x.view(), keep.back().view(), s),
           "quantize");
      in = keep.back().view();
    }
    for (int st = 0; st < run.info.numStages; ++st) {
      int64_t sendRows = 0, recvRows = 0;
      note(moecommLayoutStage(layout, moecommDirectionDispatch, st, nullptr,
                              &sendRows, &recvRows),
           "stage");
      keep.emplace_back(sendRows, H, p.wireType);
      note(moecommPack(comm, layout, moecommDirectionDispatch, st, in, 0,
                       keep.back().view(), s),
           "pack");
      keep.emplace_back(recvRows, H, p.wireType);
      note(moecommExchange(comm, layout, moecommDirectionDispatch, st,
                           keep[keep.size() - 2].view(), keep.back().view(), s),
           "exchange");
      in = keep.back().view();
    }
    DeviceRows out(R, H, p.dataType);
    note(moecommUnpack(comm, layout, moecommDirectionDispatch, in, 0,
                       out.view(), s),
         "unpack");
    run.dispatchStaged = out.values();
  }
  // Start / wait dispatch.
  {
    DeviceRows out(R, H, p.dataType);
    moecommRequest_t req = nullptr;
    note(moecommDispatchStart(comm, layout, x.view(), p.wireType, out.view(), s,
                              &req),
         "dispatch start");
    if (req)
      note(moecommWait(req), "wait");
    run.dispatchAsync = out.values();
  }

  // Combine of y.
  Rows yh = Rows::fromValues(exp.y[rank], H, p.dataType);
  yh.rows.rows = R;
  DeviceRows y = DeviceRows::from(yh);
  {
    DeviceRows out(T, H, p.dataType);
    note(moecommCommResetTraffic(comm), "reset");
    note(moecommCombine(comm, layout, y.view(), 1, out.view(), s), "combine");
    note(moecommCommGetTraffic(comm, 0, &run.combineTraffic), "traffic");
    note(moecommCommGetTraffic(comm, 1, &run.combineGlobal), "traffic");
    run.combineW = out.values();
    DeviceRows outU(T, H, p.dataType);
    note(moecommCombine(comm, layout, y.view(), 0, outU.view(), s), "combine");
    run.combineU = outU.values();
  }
  // Staged combine (weighted).
  {
    std::deque<DeviceRows> keep;
    moecommRows_t *in = y.view();
    for (int st = 0; st < run.info.numStages; ++st) {
      int64_t sendRows = 0, recvRows = 0;
      note(moecommLayoutStage(layout, moecommDirectionCombine, st, nullptr,
                              &sendRows, &recvRows),
           "stage");
      keep.emplace_back(sendRows, H, p.dataType);
      note(moecommPack(comm, layout, moecommDirectionCombine, st, in, 1,
                       keep.back().view(), s),
           "pack");
      keep.emplace_back(recvRows, H, p.dataType);
      note(moecommExchange(comm, layout, moecommDirectionCombine, st,
                           keep[keep.size() - 2].view(), keep.back().view(), s),
           "exchange");
      in = keep.back().view();
    }
    DeviceRows out(T, H, p.dataType);
    note(moecommUnpack(comm, layout, moecommDirectionCombine, in, 1, out.view(),
                       s),
         "unpack");
    run.combineStagedW = out.values();
  }
  {
    DeviceRows out(T, H, p.dataType);
    moecommRequest_t req = nullptr;
    note(moecommCombineStart(comm, layout, y.view(), 1, out.view(), s, &req),
         "combine start");
    if (req)
      note(moecommWait(req), "wait");
    run.combineAsyncW = out.values();
  }
  // Identity experts: y = the dispatch output.
  {
    DeviceRows outW(T, H, p.dataType), outU(T, H, p.dataType);
    note(moecommCombine(comm, layout, recv.view(), 1, outW.view(), s),
         "combine");
    note(moecommCombine(comm, layout, recv.view(), 0, outU.view(), s),
         "combine");
    run.identityW = outW.values();
    run.identityU = outU.values();
  }
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  note(moecommLayoutDestroy(layout), "destroy");
  return run;
}

} // namespace test
} // namespace moecomm
