//===- ProgressCheck.cpp - Requests that complete while the caller computes ===//
#include "ProgressCheck.h"

#include "ProgressEngine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>
#include <thread>

namespace moecomm {
namespace test {

CaseSpec largeExchangeSpec(int W, int G) {
  return CaseSpec{W,   G,    8,    2, 2048, moecommBfloat16, moecommBfloat16,
                  RoutingKind::Uniform, 768, 0, true, 7};
}

namespace {

/// Whether the trace of `comm` holds an event of `kind`.
bool traced(moecommComm_t comm, moecommTraceKind_t kind) {
  int64_t n = 0;
  if (moecommCommGetTrace(comm, nullptr, 0, &n) != moecommSuccess)
    return false;
  std::vector<moecommTraceEvent_t> events(n);
  moecommCommGetTrace(comm, events.data(), n, &n);
  for (const moecommTraceEvent_t &e : events)
    if (e.kind == kind)
      return true;
  return false;
}

/// Sleeps in 5 ms steps until `kind` is traced or `limitSec` passed; true
/// when it was.
bool awaitTraced(moecommComm_t comm, moecommTraceKind_t kind,
                 double limitSec) {
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::duration<double>(limitSec);
  while (!traced(comm, kind)) {
    if (std::chrono::steady_clock::now() > end)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

/// Expects `request` to complete (its whole-call span of `kind` traced)
/// within `limitSec` with no runtime call, then waits for it.
void awaitThenWait(moecommComm_t comm, moecommRequest_t request,
                   moecommTraceKind_t kind, int rank, double limitSec) {
  EXPECT_TRUE(awaitTraced(comm, kind, limitSec))
      << "rank " << rank << ": the " << moecommTraceKindName(kind)
      << " did not complete in " << limitSec << " s without a runtime call";
  EXPECT_EQ(moecommWait(request), moecommSuccess)
      << moecommCommGetLastError(comm);
}

} // namespace

StartedDispatch::StartedDispatch(moecommComm_t comm, const Expected &exp,
                                 int rank, moecommStrategy_t strategy) {
  const ref::Problem &p = exp.problem;
  moecommLayoutDesc_t desc = descFor(p, rank, strategy);
  result = moecommLayoutCreate(comm, &desc, &layout);
  if (result != moecommSuccess)
    return; // every rank got the same result
  moecommLayoutGetInfo(layout, &info);
  x = Rows::fromValues(exp.x[rank], p.hidden, p.dataType);
  recv = Rows(info.recvRows, p.hidden, p.dataType);
  result = moecommDispatchStart(comm, layout, x.view(), p.wireType,
                                recv.view(), nullptr, &request);
}

StartedDispatch::~StartedDispatch() {
  if (layout)
    moecommLayoutDestroy(layout);
}

void checkCompletesUnattended(moecommComm_t comm, const Expected &exp,
                              int rank, double limitSec) {
  const ref::Problem &p = exp.problem;
  const int64_t H = p.hidden, T = p.routing[rank].numTokens;
  EXPECT_EQ(moecommCommSetTrace(comm, 1), moecommSuccess);
  StartedDispatch d(comm, exp, rank, moecommHierarchical);
  ASSERT_EQ(d.result, moecommSuccess) << moecommCommGetLastError(comm);
  EXPECT_EQ(d.info.numStages, 2); // the relay runs on the progress thread
  awaitThenWait(comm, d.request, moecommTraceKindDispatch, rank, limitSec);
  EXPECT_TRUE(sameBits(d.recv.values(), exp.dispatch[rank])) << "rank " << rank;

  Rows y = Rows::fromValues(exp.y[rank], H, p.dataType);
  Rows out(T, H, p.dataType);
  moecommRequest_t request = nullptr;
  EXPECT_EQ(moecommCommSetTrace(comm, 1), moecommSuccess); // clears
  EXPECT_EQ(moecommCombineStart(comm, d.layout, y.view(), 1, out.view(),
                                nullptr, &request),
            moecommSuccess)
      << moecommCommGetLastError(comm);
  awaitThenWait(comm, request, moecommTraceKindCombine, rank, limitSec);
  EXPECT_EQ(moecommCommSetTrace(comm, 0), moecommSuccess);
  // The reference sums in another order (TestUtil.cpp checks combine within
  // a bound of it); the blocking combine, so checked, gives these bits.
  Rows blocking(T, H, p.dataType);
  EXPECT_EQ(moecommCombine(comm, d.layout, y.view(), 1, blocking.view(),
                           nullptr),
            moecommSuccess);
  EXPECT_TRUE(sameBits(out.values(), blocking.values())) << "rank " << rank;
}

double progressThreadCpuSeconds() {
  double ticks = 0;
  for (const auto &task :
       std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    if (!std::getline(comm, name) || name != kProgressThreadName)
      continue;
    // /proc/PID/task/TID/stat: "tid (comm) state ..."; utime and stime are
    // the 14th and 15th fields, the 12th and 13th after the comm's ')'.
    std::ifstream stat(task.path() / "stat");
    std::string line;
    std::getline(stat, line);
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::string field;
    for (int i = 0; i < 11 && rest >> field; ++i) {
    }
    double utime = 0, stime = 0;
    rest >> utime >> stime;
    ticks += utime + stime;
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

} // namespace test
} // namespace moecomm
