//===- WorkloadTest.cpp - the workload library on small cases -------------===//
//
// The pieces moecomm-run, moecomm-bench, bench/ and the runtime tests share:
// the rank launcher, the expert-load re-binning, the routing file format's
// round trip, the generators' reproducibility and the timeline writer's
// tracks and compute slices. The tools' lit tests cover the same code
// through the command line.
//
//===----------------------------------------------------------------------===//
#include "moecomm/Workload/ExpertLoad.h"
#include "moecomm/Workload/Generators.h"
#include "moecomm/Workload/RankLauncher.h"
#include "moecomm/Workload/RoutingFile.h"
#include "moecomm/Workload/Timeline.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <set>
#include <system_error>
#include <vector>

using namespace moecomm;
using namespace moecomm::workload;

namespace {

TEST(RankLauncher, ThreadGroupGivesEveryRankItsCommunicator) {
  std::vector<int> seen(6, -1), sizes(6, 0);
  llvm::Error e = runOnThreadGroup(6, 3, [&](moecommComm_t comm, int r) {
    moecommCommRank(comm, &seen[r]);
    moecommCommSize(comm, &sizes[r]);
    moecommBarrier(comm);
  });
  ASSERT_FALSE(e) << llvm::toString(std::move(e));
  for (int r = 0; r < 6; ++r) {
    EXPECT_EQ(seen[r], r);
    EXPECT_EQ(sizes[r], 6);
  }
}

TEST(RankLauncher, BadTopologyIsBadInputAndRunsNothing) {
  std::atomic<int> ran{0};
  llvm::Error e = runOnThreadGroup(6, 4, [&](moecommComm_t, int) { ++ran; });
  ASSERT_TRUE(static_cast<bool>(e));
  EXPECT_EQ(llvm::errorToErrorCode(std::move(e)),
            std::make_error_code(std::errc::invalid_argument));
  EXPECT_EQ(ran.load(), 0);
}

TEST(RankLauncher, RankThreadsRunEveryRankOnce) {
  std::vector<std::atomic<int>> runs(17);
  llvm::Error e = runOnRankThreads(17, [&](int r) { ++runs[r]; });
  ASSERT_FALSE(e) << llvm::toString(std::move(e));
  for (const std::atomic<int> &n : runs)
    EXPECT_EQ(n.load(), 1);
}

TEST(ExpertLoad, RebinKeepsSplitsAndSums) {
  const std::vector<double> loads{1.0, 0.5, 0.25, 0.0};
  EXPECT_EQ(rebinLoads(loads, 4), loads);
  EXPECT_EQ(rebinLoads(loads, 8),
            (std::vector<double>{0.5, 0.5, 0.25, 0.25, 0.125, 0.125, 0, 0}));
  EXPECT_EQ(rebinLoads(loads, 2), (std::vector<double>{1.5, 0.25}));
}

TEST(RoutingFile, WrittenDocumentParsesBack) {
  GenerateOptions o;
  o.ranks = 4;
  o.ranksPerNode = 2;
  o.numExperts = 8;
  o.topk = 2;
  o.hidden = 16;
  o.tokens = {3, 0, 5, 1};
  llvm::Expected<RoutingProblem> p = generateRouting(o);
  ASSERT_TRUE(static_cast<bool>(p)) << llvm::toString(p.takeError());
  std::string text;
  llvm::raw_string_ostream os(text);
  os << routingToJson(*p);
  llvm::Expected<RoutingProblem> q = parseRoutingJson(text, "round trip");
  ASSERT_TRUE(static_cast<bool>(q)) << llvm::toString(q.takeError());
  llvm::Error valid = validateRouting(*q);
  EXPECT_FALSE(static_cast<bool>(valid)) << llvm::toString(std::move(valid));
  EXPECT_EQ(q->numTokens, p->numTokens);
  EXPECT_EQ(q->topkIdx, p->topkIdx);
  EXPECT_EQ(q->topkWeights, p->topkWeights);
}

TEST(Generators, SameSeedSameRouting) {
  GenerateOptions o;
  llvm::Expected<RoutingDist> dist = parseRoutingDist("zipf:1.2");
  ASSERT_TRUE(static_cast<bool>(dist)) << llvm::toString(dist.takeError());
  o.dist = *dist;
  o.seed = 7;
  llvm::Expected<RoutingProblem> a = generateRouting(o);
  ASSERT_TRUE(static_cast<bool>(a)) << llvm::toString(a.takeError());
  llvm::Expected<RoutingProblem> b = generateRouting(o);
  ASSERT_TRUE(static_cast<bool>(b)) << llvm::toString(b.takeError());
  EXPECT_EQ(a->topkIdx, b->topkIdx);
  o.seed = 8;
  llvm::Expected<RoutingProblem> c = generateRouting(o);
  ASSERT_TRUE(static_cast<bool>(c)) << llvm::toString(c.takeError());
  EXPECT_NE(a->topkIdx, c->topkIdx);
}

// The weights EPLB balances are the generator's: uniform's are equal, and
// zipf's order is the one the seeded routing realizes (its most and least
// drawn experts are the heaviest and lightest weights).
TEST(Generators, ExpertWeightsAreTheSamplingWeights) {
  GenerateOptions o;
  o.numExperts = 16;
  o.tokens = {4096};
  llvm::Expected<std::vector<double>> uniform = expertWeights(o);
  ASSERT_TRUE(static_cast<bool>(uniform))
      << llvm::toString(uniform.takeError());
  EXPECT_EQ(*uniform, std::vector<double>(16, 1.0));
  llvm::Expected<RoutingDist> dist = parseRoutingDist("zipf:1.5");
  ASSERT_TRUE(static_cast<bool>(dist)) << llvm::toString(dist.takeError());
  o.dist = *dist;
  o.seed = 3;
  llvm::Expected<std::vector<double>> w = expertWeights(o);
  ASSERT_TRUE(static_cast<bool>(w)) << llvm::toString(w.takeError());
  std::vector<double> sorted = *w;
  std::sort(sorted.rbegin(), sorted.rend());
  for (size_t i = 0; i < sorted.size(); ++i)
    EXPECT_DOUBLE_EQ(sorted[i], 1.0 / std::pow(double(i + 1), 1.5));
  llvm::Expected<RoutingProblem> p = generateRouting(o);
  ASSERT_TRUE(static_cast<bool>(p)) << llvm::toString(p.takeError());
  std::vector<int64_t> drawn(16, 0);
  for (const std::vector<int64_t> &idx : p->topkIdx)
    for (int64_t e : idx)
      drawn[(size_t)e]++;
  auto argmax = [](const auto &v) {
    return std::max_element(v.begin(), v.end()) - v.begin();
  };
  auto argmin = [](const auto &v) {
    return std::min_element(v.begin(), v.end()) - v.begin();
  };
  EXPECT_EQ(argmax(drawn), argmax(*w));
  EXPECT_EQ(argmin(drawn), argmin(*w));
}

moecommTraceEvent_t traceEvent(moecommTraceKind_t kind,
                               moecommTraceDirection_t dir, int stage,
                               double start, double end) {
  return {kind, dir, stage, moecommScopeInterNode, start, end, 64};
}

// Spans of one track that partially overlap go to separate lanes; the caller
// computes in the gaps between its runtime calls inside an iteration, also
// while a collective it started is in flight (here the combine, completed by
// the progress thread before the caller waits for it).
TEST(Timeline, LanesAndComputeSlices) {
  RankTimeline rt;
  rt.rank = 0;
  const auto D = moecommTraceDirDispatch, C = moecommTraceDirCombine,
             N = moecommTraceDirNone;
  rt.events = {traceEvent(moecommTraceKindLayout, N, -1, 10, 11),
               traceEvent(moecommTraceKindCall, N, -1, 10, 11),
               traceEvent(moecommTraceKindPack, D, 0, 12, 12.1),
               traceEvent(moecommTraceKindExchange, D, 0, 12.1, 13),
               traceEvent(moecommTraceKindExchange, D, 0, 12.5, 14),
               traceEvent(moecommTraceKindDispatch, D, -1, 12, 15),
               traceEvent(moecommTraceKindCall, N, -1, 12, 15),
               traceEvent(moecommTraceKindCall, N, -1, 16, 16.2),
               traceEvent(moecommTraceKindExchange, C, 1, 16.1, 17.9),
               traceEvent(moecommTraceKindCombine, C, -1, 16, 17.9),
               traceEvent(moecommTraceKindWait, N, -1, 18, 19),
               traceEvent(moecommTraceKindCall, N, -1, 18, 19)};
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("timeline", "json", path));
  llvm::FileRemover remove(path);
  TimelineOutput out;
  out.jsonPath = path.str().str();
  out.title = "test";
  llvm::Error e = writeTimeline({rt}, out);
  ASSERT_FALSE(e) << llvm::toString(std::move(e));
  auto buffer = llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(bool(buffer));
  llvm::Expected<llvm::json::Value> doc =
      llvm::json::parse((*buffer)->getBuffer());
  ASSERT_TRUE(bool(doc)) << llvm::toString(doc.takeError());
  std::set<int64_t> exchangeTracks;
  std::vector<std::pair<double, double>> compute;
  int calls = 0;
  for (const llvm::json::Value &v :
       *doc->getAsObject()->getArray("traceEvents")) {
    const llvm::json::Object &o = *v.getAsObject();
    if (*o.getString("ph") != "X")
      continue;
    EXPECT_EQ(*o.getInteger("pid"), 0);
    if (*o.getString("name") == "exchange" &&
        *o.getObject("args")->getString("direction") == "dispatch")
      exchangeTracks.insert(*o.getInteger("tid"));
    if (*o.getString("name") == "compute")
      compute.push_back({*o.getNumber("ts"), *o.getNumber("dur")});
    if (*o.getString("name") == "call")
      ++calls;
  }
  // Microseconds from the first span (10 s).
  EXPECT_EQ(exchangeTracks.size(), 2u);
  std::vector<std::pair<double, double>> want = {
      {1e6, 1e6}, {5e6, 1e6}, {6.2e6, 1.8e6}};
  EXPECT_EQ(compute, want);
  EXPECT_EQ(calls, 4); // drawn too: compute is their complement
}

} // namespace
