//===- dispatch_combine_bench.cpp - Threads-backend dispatch + combine ----===//
//
// Measures, in one run, dispatch + combine on the threads backend for each
// strategy and a plain memcpy of the same number of bytes by the same number
// of threads, and prints GB/s and their ratio. Defaults (DESIGN.md issue 3):
// W = 8 ranks, G = 4 per node, E = 256, K = 8, H = 7168, T = 1024 tokens per
// rank, bf16, uniform routing, identity experts (y = dispatch output,
// weighted combine).
//
// "Bytes moved" = payload rows of every exchange stage of dispatch and
// combine times the row bytes, copies to self included (they are moved in
// memory too); counted exactly with moecomm::countTraffic. The wall time is
// CPU time on this machine, reported only as a ratio against the memcpy
// baseline measured in the same run (DESIGN.md §7). The modelled time on
// H200 DGX links (moecomm::modelTime) is printed next to it, labelled.
//
// Usage: dispatch_combine_bench [--ranks W] [--ranks-per-node G]
//          [--experts E] [--topk K] [--hidden H] [--tokens T] [--iters N]
//          [--strategy per_expert|flat|hierarchical|auto]
//
//===----------------------------------------------------------------------===//
#include "moecomm/Model/CostModel.h"
#include "moecomm/Model/Traffic.h"
#include "moecomm/Workload/RankLauncher.h"
#include "moecomm/moecomm.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace moecomm;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  int ranks = 8, ranksPerNode = 4, topk = 8, iters = 3;
  int64_t experts = 256, hidden = 7168, tokens = 1024;
  std::string only; ///< run one strategy (per_expert|flat|hierarchical|auto)
};

uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

#define CHECK(call)                                                            \
  do {                                                                         \
    moecommResult_t rc_ = (call);                                              \
    if (rc_ != moecommSuccess) {                                               \
      std::fprintf(stderr, "%s failed: %s\n", #call,                           \
                   moecommCommGetLastError(comm));                             \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

struct Result {
  double seconds = 0; // per iteration
  moecommStrategy_t resolved = moecommPerExpert;
  uint64_t intra = 0, inter = 0; // counted bytes per iteration (no self)
};

Result runStrategy(const Options &o, moecommStrategy_t strategy,
                   const std::vector<std::vector<int32_t>> &idx,
                   const std::vector<std::vector<float>> &w,
                   const std::vector<std::vector<uint16_t>> &x) {
  Result result;
  llvm::Error launched = workload::runOnThreadGroup(
      o.ranks, o.ranksPerNode, [&](moecommComm_t comm, int r) {
        moecommLayoutDesc_t d{};
        d.numTokens = o.tokens;
        d.topk = o.topk;
        d.numExperts = o.experts;
        d.idxType = moecommInt32;
        d.topkIdx = idx[r].data();
        d.topkWeights = w[r].data();
        d.strategy = strategy;
        d.hidden = o.hidden;
        d.wireType = moecommBfloat16;
        moecommLayout_t layout = nullptr;
        CHECK(moecommLayoutCreate(comm, &d, &layout));
        moecommLayoutInfo_t info;
        CHECK(moecommLayoutGetInfo(layout, &info));
        std::vector<uint16_t> recv(info.recvRows * o.hidden),
            out(o.tokens * o.hidden);
        moecommRows_t xr{const_cast<uint16_t *>(x[r].data()), nullptr, o.tokens,
                         o.hidden, moecommBfloat16};
        moecommRows_t rr{recv.data(), nullptr, info.recvRows, o.hidden,
                         moecommBfloat16};
        moecommRows_t orr{out.data(), nullptr, o.tokens, o.hidden,
                          moecommBfloat16};
        auto once = [&] {
          CHECK(moecommDispatch(comm, layout, &xr, moecommBfloat16, &rr,
                                nullptr));
          CHECK(moecommCombine(comm, layout, &rr, 1, &orr, nullptr));
        };
        once(); // warm-up: page faults, buffer pool
        CHECK(moecommCommResetTraffic(comm));
        CHECK(moecommBarrier(comm));
        auto t0 = Clock::now();
        for (int i = 0; i < o.iters; ++i)
          once();
        CHECK(moecommBarrier(comm));
        auto t1 = Clock::now();
        moecommTraffic_t tr;
        CHECK(moecommCommGetTraffic(comm, 1, &tr));
        if (r == 0) {
          result.seconds =
              std::chrono::duration<double>(t1 - t0).count() / o.iters;
          result.resolved = info.strategy;
          for (int dir = 0; dir < 2; ++dir)
            for (int sc = 0; sc < 3; ++sc) {
              result.intra += tr.bytes[dir][sc][0] / o.iters;
              result.inter += tr.bytes[dir][sc][1] / o.iters;
            }
        }
        CHECK(moecommLayoutDestroy(layout));
      });
  if (launched) {
    std::fprintf(stderr, "%s\n", llvm::toString(std::move(launched)).c_str());
    std::exit(1);
  }
  return result;
}

/// Seconds for W threads to memcpy `bytes` in total (each bytes / W, in
/// chunks through a buffer of at most 64 MiB), best of `iters`.
double memcpySeconds(int W, int64_t bytes, int iters) {
  const int64_t perThread = bytes / W;
  const int64_t buf = std::min<int64_t>(perThread, int64_t(64) << 20);
  std::vector<std::vector<char>> src(W), dst(W);
  for (int r = 0; r < W; ++r) {
    src[r].assign(buf, (char)r);
    dst[r].assign(buf, 0);
  }
  double best = 1e30;
  for (int it = 0; it < iters + 1; ++it) {
    std::vector<std::thread> threads;
    auto t0 = Clock::now();
    for (int r = 0; r < W; ++r)
      threads.emplace_back([&, r] {
        for (int64_t done = 0; done < perThread; done += buf)
          std::memcpy(dst[r].data(), src[r].data(),
                      std::min(buf, perThread - done));
      });
    for (auto &t : threads)
      t.join();
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (it > 0) // first pass: page faults
      best = std::min(best, s);
  }
  return best;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    long long v = std::atoll(argv[i + 1]);
    if (a == "--strategy")
      o.only = argv[i + 1];
    else if (a == "--ranks")
      o.ranks = (int)v;
    else if (a == "--ranks-per-node")
      o.ranksPerNode = (int)v;
    else if (a == "--experts")
      o.experts = v;
    else if (a == "--topk")
      o.topk = (int)v;
    else if (a == "--hidden")
      o.hidden = v;
    else if (a == "--tokens")
      o.tokens = v;
    else if (a == "--iters")
      o.iters = (int)v;
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  // Uniform routing: K distinct experts per token; random bf16 payload.
  std::vector<std::vector<int32_t>> idx(o.ranks);
  std::vector<std::vector<float>> w(o.ranks);
  std::vector<std::vector<uint16_t>> x(o.ranks);
  std::vector<RoutingView> views(o.ranks);
  for (int r = 0; r < o.ranks; ++r) {
    std::mt19937_64 rng(1234 + r);
    std::vector<int32_t> all(o.experts);
    for (int64_t t = 0; t < o.tokens; ++t) {
      for (int64_t e = 0; e < o.experts; ++e)
        all[e] = (int32_t)e;
      for (int k = 0; k < o.topk; ++k) {
        std::uniform_int_distribution<int64_t> d(k, o.experts - 1);
        std::swap(all[k], all[d(rng)]);
        idx[r].push_back(all[k]);
        w[r].push_back(1.0f / o.topk);
      }
    }
    std::normal_distribution<float> n(0.0f, 1.0f);
    x[r].resize(o.tokens * o.hidden);
    for (auto &v : x[r])
      v = toBf16(n(rng));
    views[r] = {o.tokens, o.topk, idx[r].data(), moecommInt32, w[r].data()};
  }
  Topology topo;
  topo.ranks = o.ranks;
  topo.ranksPerNode = o.ranksPerNode;
  topo.numExperts = o.experts;
  RoutingSummary summary = summarizeRouting(topo, 0, views);
  const int64_t rowBytes = wireRowBytes(moecommBfloat16, o.hidden);

  std::printf("dispatch+combine, threads backend: W=%d G=%d E=%lld K=%d "
              "H=%lld T=%lld bf16, uniform routing, %d iterations, %u "
              "hardware threads\n",
              o.ranks, o.ranksPerNode, (long long)o.experts, o.topk,
              (long long)o.hidden, (long long)o.tokens, o.iters,
              std::thread::hardware_concurrency());
  std::printf("%-13s %-13s %10s %10s %10s %9s %10s %9s %7s %14s\n", "strategy",
              "resolved", "moved MB", "intra MB", "inter MB", "ms/iter", "GB/s",
              "memcpy", "ratio", "model h200 us");
  for (moecommStrategy_t s :
       {moecommPerExpert, moecommFlat, moecommHierarchical, moecommAuto}) {
    if (!o.only.empty() && o.only != strategyName(s))
      continue;
    Result res = runStrategy(o, s, idx, w, x);
    StrategyTraffic tr =
        countTraffic(summary, res.resolved, rowBytes, rowBytes);
    int64_t moved = 0;
    for (const auto *stages : {&tr.dispatch, &tr.combine})
      for (const StageTraffic &st : *stages)
        for (const RankStageTraffic &rt : st.ranks)
          moved += rt.rowsSent * rowBytes;
    double gbs = moved / res.seconds / 1e9;
    double mem = moved / memcpySeconds(o.ranks, moved, o.iters) / 1e9;
    ModelledTime mt = modelTime(tr, findLinkPreset("h200-dgx")->link);
    std::printf("%-13s %-13s %10.1f %10.1f %10.1f %9.1f %10.2f %9.2f %7.3f "
                "%14.1f\n",
                strategyName(s), strategyName(res.resolved), moved / 1e6,
                res.intra / 1e6, res.inter / 1e6, res.seconds * 1e3, gbs, mem,
                gbs / mem, mt.totalSec() * 1e6);
  }
  std::printf("GB/s = payload bytes moved (all stages, self copies included) "
              "per second of wall time; memcpy = the same bytes copied by the "
              "same number of threads in this run; model = alpha-beta time on "
              "h200-dgx links (modelled, not measured).\n");
  return 0;
}
