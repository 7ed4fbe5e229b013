//===- gpu_kernels_bench.cpp - GPU row kernels vs cudaMemcpy --------------===//
//
// Bandwidth of the GPU backend's row kernels at DeepSeek-V3 shapes (H =
// 7168, K = 8, E = 256, T = 4096 tokens per rank, bf16 data, FP8 on the
// wire), executing the real plan of rank 0 of W = 8 ranks (per_expert:
// T*K rows per stage; uniform routing), each as a ratio to a device-to-
// device cudaMemcpy that moves the same number of bytes, measured in the
// same run:
//   pack+quantize   stage-0 pack: gather x rows, quantize to e4m3 + scales
//   unpack+dequant  dispatch unpack: gather received FP8 rows expert-major,
//                   dequantize to bf16
//   combine-reduce  combine unpack: per token the weighted f32 sum of its K
//                   rows, rounded to bf16
//   gather-copy     a plain bf16 row gather (the pack without quantizing)
// plus the end-to-end W = 1 dispatch + combine through the nccl backend's C
// API (informative: no exchange happens with one rank).
//
// Bytes of a kernel = bytes it must read + bytes it must write (each
// gathered row counted once per output row; map arrays not counted). The
// memcpy copies half that many bytes (it reads and writes each). Times are
// medians of 20 runs after 3 warm-ups, CUDA events on one stream.
// Output: a table, then one "RESULT ..." line per kernel for scripts.
//
// Usage: gpu_kernels_bench [--tokens T] [--iters N]
//
//===----------------------------------------------------------------------===//
#include "DevicePlan.h"
#include "DeviceRows.h"
#include "moecomm/Runtime/Plan.h"
#include "moecomm/moecomm_nccl.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace moecomm;

namespace {

#define CHECK(call)                                                            \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_));  \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

void checkStatus(const Status &st, const char *what) {
  if (!st.ok()) {
    std::fprintf(stderr, "%s failed: %s\n", what, st.message.c_str());
    std::exit(1);
  }
}

struct Timer {
  cudaStream_t stream;
  int iters;
  /// Median milliseconds of `fn` (enqueued on `stream`).
  double median(const std::function<void()> &fn) {
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    for (int i = 0; i < 3; ++i)
      fn();
    std::vector<double> ms;
    for (int i = 0; i < iters; ++i) {
      CHECK(cudaEventRecord(a, stream));
      fn();
      CHECK(cudaEventRecord(b, stream));
      CHECK(cudaEventSynchronize(b));
      float t = 0;
      CHECK(cudaEventElapsedTime(&t, a, b));
      ms.push_back(t);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  }
};

/// Device memory for the benchmark's buffers.
void *deviceAlloc(size_t bytes) {
  void *p = nullptr;
  CHECK(cudaMalloc(&p, std::max<size_t>(bytes, 256)));
  return p;
}

struct Result {
  std::string name;
  int64_t rows;
  double bytes, ms, memcpyMs;
};

} // namespace

int main(int argc, char **argv) {
  int64_t T = 4096;
  int iters = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--tokens"))
      T = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--iters"))
      iters = std::atoi(argv[i + 1]);
  }
  const int W = 8, G = 8, K = 8;
  const int64_t E = 256, H = 7168, nb = (H + 127) / 128;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    std::fprintf(stderr, "no CUDA device\n");
    return 2;
  }
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, device));
  std::printf("device: %s (%d SMs), H=%lld K=%d E=%lld T=%lld per rank, "
              "W=%d (plan of rank 0, per_expert)\n",
              prop.name, prop.multiProcessorCount, (long long)H, K,
              (long long)E, (long long)T, W);

  // Uniform routing on every rank; the plans the runtime would build.
  Topology topo;
  topo.ranks = W;
  topo.ranksPerNode = G;
  topo.numExperts = E;
  std::vector<std::vector<int64_t>> ids(W);
  std::vector<std::vector<float>> weights(W);
  std::vector<RoutingView> views(W);
  std::mt19937_64 rng(42);
  for (int r = 0; r < W; ++r) {
    ids[r].resize(T * K);
    weights[r].resize(T * K);
    for (int64_t t = 0; t < T; ++t) {
      std::vector<int64_t> all(E);
      for (int64_t e = 0; e < E; ++e)
        all[e] = e;
      for (int k = 0; k < K; ++k) {
        std::swap(all[k], all[k + rng() % (E - k)]);
        ids[r][t * K + k] = all[k];
        weights[r][t * K + k] = (float)(1 + rng() % 64) / 64.0f;
      }
    }
    views[r].numTokens = T;
    views[r].topk = K;
    views[r].topkIdx = ids[r].data();
    views[r].idxType = moecommInt64;
    views[r].topkWeights = weights[r].data();
  }
  std::vector<RankPlan> plans;
  std::string err = buildPlans(topo, moecommPerExpert, 0, views, plans);
  if (!err.empty()) {
    std::fprintf(stderr, "buildPlans: %s\n", err.c_str());
    return 1;
  }
  std::unique_ptr<cuda::DevicePlan> dp;
  checkStatus(cuda::DevicePlan::upload(plans[0], dp), "DevicePlan::upload");
  const cuda::DeviceMap &pack =
      dp->direction(moecommDirectionDispatch).packs[0];
  const cuda::DeviceMap &unpack =
      dp->direction(moecommDirectionDispatch).unpack;
  const cuda::DeviceMap &reduce = dp->direction(moecommDirectionCombine).unpack;
  const int64_t sendRows = pack.rows;
  const int64_t recvRows = plans[0].dispatch.stages[0].recvRows();
  const int64_t R = plans[0].recvRows();
  // Combine's unpack reads the rows the last combine stage received (one
  // per pair this rank sent), not the R dispatch rows.
  const int64_t backRows = plans[0].combine.stages.back().recvRows();

  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Timer timer{s, iters};

  // Buffers: x (bf16), send (FP8 + scales), received FP8 rows, recv
  // (bf16), y (bf16, R rows), out (bf16, T rows), a bf16 send buffer.
  auto *x = deviceAlloc(T * H * 2);
  auto *sendQ = deviceAlloc(sendRows * H);
  auto *sendS = static_cast<float *>(deviceAlloc(sendRows * nb * 4));
  auto *recvQ = deviceAlloc(recvRows * H);
  auto *recvS = static_cast<float *>(deviceAlloc(recvRows * nb * 4));
  auto *recv = deviceAlloc(R * H * 2);
  auto *out = deviceAlloc(T * H * 2);
  auto *sendB = deviceAlloc(sendRows * H * 2);
  auto *back = deviceAlloc(backRows * H * 2);
  CHECK(cudaMemset(back, 0, backRows * H * 2));
  {
    std::vector<uint16_t> hx(T * H);
    for (auto &v : hx)
      v = (uint16_t)(0x3C00 + rng() % 0x0800) | (rng() % 2 ? 0x8000 : 0);
    CHECK(cudaMemcpy(x, hx.data(), hx.size() * 2, cudaMemcpyHostToDevice));
    std::vector<uint8_t> hq(recvRows * H);
    for (auto &v : hq)
      v = (uint8_t)(rng() % 0x7E) | (rng() % 2 ? 0x80 : 0);
    CHECK(cudaMemcpy(recvQ, hq.data(), hq.size(), cudaMemcpyHostToDevice));
    std::vector<float> hs(recvRows * nb, 0.01f);
    CHECK(cudaMemcpy(recvS, hs.data(), hs.size() * 4, cudaMemcpyHostToDevice));
  }
  const moecommRows_t xRows{x, nullptr, T, H, moecommBfloat16};
  const moecommRows_t sendRowsQ{sendQ, sendS, sendRows, H, moecommFloat8E4M3};
  const moecommRows_t sendRowsB{sendB, nullptr, sendRows, H, moecommBfloat16};
  const moecommRows_t recvRowsQ{recvQ, recvS, recvRows, H, moecommFloat8E4M3};
  const moecommRows_t recvRowsB{recv, nullptr, R, H, moecommBfloat16};
  const moecommRows_t outRows{out, nullptr, T, H, moecommBfloat16};
  const moecommRows_t backRowsB{back, nullptr, backRows, H, moecommBfloat16};

  std::vector<Result> results;
  size_t largest = 0;
  auto measure = [&](const char *name, int64_t rows, double bytes,
                     const std::function<void()> &fn) {
    const double ms = timer.median(fn);
    CHECK(cudaGetLastError());
    results.push_back({name, rows, bytes, ms, 0});
    largest = std::max(largest, (size_t)(bytes / 2));
  };
  measure("pack+quantize", sendRows, (double)sendRows * (H * 2 + H + nb * 4),
          [&] {
            checkStatus(
                cuda::gatherRowsDevice(
                    xRows, sendRowsQ, cuda::GatherIndex{pack.gather, false}, s),
                "pack");
          });
  measure("unpack+dequant", R, (double)R * (H + nb * 4 + H * 2), [&] {
    checkStatus(cuda::gatherRowsDevice(recvRowsQ, recvRowsB,
                                       cuda::GatherIndex{unpack.gather, false},
                                       s),
                "unpack");
  });
  measure("combine-reduce", T, (double)reduce.terms * H * 2 + (double)T * H * 2,
          [&] {
            checkStatus(cuda::reduceRowsDevice(backRowsB, outRows,
                                               reduce.reduceMap(true), s),
                        "reduce");
          });
  measure("gather-copy", sendRows, (double)sendRows * H * 2 * 2, [&] {
    checkStatus(cuda::gatherRowsDevice(
                    xRows, sendRowsB, cuda::GatherIndex{pack.gather, false}, s),
                "copy");
  });
  // The memcpy baselines, same bytes moved.
  void *m1 = deviceAlloc(largest), *m2 = deviceAlloc(largest);
  for (Result &r : results) {
    const size_t n = (size_t)(r.bytes / 2);
    r.memcpyMs = timer.median([&] {
      CHECK(cudaMemcpyAsync(m2, m1, n, cudaMemcpyDeviceToDevice, s));
    });
  }

  std::printf("\n| kernel | rows | MB moved | ms | GB/s | memcpy GB/s | "
              "ratio |\n|---|---|---|---|---|---|---|\n");
  for (const Result &r : results) {
    const double gbs = r.bytes / (r.ms * 1e6),
                 mgbs = r.bytes / (r.memcpyMs * 1e6);
    std::printf("| %s | %lld | %.1f | %.4f | %.0f | %.0f | %.2f |\n",
                r.name.c_str(), (long long)r.rows, r.bytes / 1e6, r.ms, gbs,
                mgbs, gbs / mgbs);
  }
  for (const Result &r : results)
    std::printf("RESULT kernel=%s rows=%lld bytes=%.0f ms=%.5f GBps=%.1f "
                "memcpy_GBps=%.1f ratio=%.3f\n",
                r.name.c_str(), (long long)r.rows, r.bytes, r.ms,
                r.bytes / (r.ms * 1e6), r.bytes / (r.memcpyMs * 1e6),
                r.memcpyMs / r.ms);

  // End to end with one rank through the C API.
  {
    moecommComm_t comm = nullptr;
    if (moecommCommInitNcclSingle(&comm, device) != moecommSuccess) {
      std::fprintf(stderr, "moecommCommInitNcclSingle: %s\n",
                   moecommCommGetLastError(nullptr));
      return 1;
    }
    moecommLayoutDesc_t d{};
    d.numTokens = T;
    d.topk = K;
    d.numExperts = E;
    d.idxType = moecommInt64;
    d.topkIdx = ids[0].data();
    d.topkWeights = weights[0].data();
    d.strategy = moecommPerExpert;
    d.hidden = H;
    d.wireType = moecommFloat8E4M3;
    moecommLayout_t layout = nullptr;
    if (moecommLayoutCreate(comm, &d, &layout) != moecommSuccess) {
      std::fprintf(stderr, "moecommLayoutCreate: %s\n",
                   moecommCommGetLastError(comm));
      return 1;
    }
    moecommLayoutInfo_t info{};
    moecommLayoutGetInfo(layout, &info);
    void *r1 = deviceAlloc(info.recvRows * H * 2);
    moecommRows_t xr = xRows,
                  rr{r1, nullptr, info.recvRows, H, moecommBfloat16},
                  outr = outRows;
    const double ms = timer.median([&] {
      if (moecommDispatch(comm, layout, &xr, moecommFloat8E4M3, &rr, s) !=
              moecommSuccess ||
          moecommCombine(comm, layout, &rr, 1, &outr, s) != moecommSuccess) {
        std::fprintf(stderr, "dispatch/combine: %s\n",
                     moecommCommGetLastError(comm));
        std::exit(1);
      }
    });
    std::printf("\nW=1 nccl dispatch (bf16, FP8 wire) + weighted combine: "
                "%lld rows, %.3f ms\n",
                (long long)info.recvRows, ms);
    std::printf("RESULT e2e=w1_dispatch_combine rows=%lld ms=%.4f\n",
                (long long)info.recvRows, ms);
    cudaFree(r1);
    moecommLayoutDestroy(layout);
    moecommCommDestroy(comm);
  }
  for (void *p : {x, (void *)sendQ, (void *)sendS, recvQ, (void *)recvS, recv,
                  out, sendB, back, m1, m2})
    cudaFree(p);
  cudaStreamDestroy(s);
  return 0;
}
