//===- DirectPath.cpp - moecomm-run's runtime-direct execution ------------===//

#include "DirectPath.h"
#include "HostRows.h"

#include "moecomm/Reference/Reference.h"

#include "moecomm/Workload/RoutingProblem.h"
#include "moecomm/Workload/RuntimeError.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>

using namespace llvm;
using namespace moecomm::workload;

namespace moecomm::run {

namespace {

/// Destroys a layout when it goes out of scope.
struct LayoutGuard {
  moecommLayout_t layout = nullptr;
  ~LayoutGuard() {
    if (layout)
      moecommLayoutDestroy(layout);
  }
};

} // namespace

Error DirectPath::runIteration(moecommComm_t comm, const RoutingProblem &p,
                               int rank, LayerResult &out) {
  using Clock = std::chrono::steady_clock;
  const int64_t T = p.numTokens[rank];
  const int64_t H = p.hidden;
  const moecommDataType_t host = hostType(p.dtype);
  if (Error e = startIteration(comm, p, rank, out))
    return e;
  if (options.setLinkModel)
    if (Error e =
            runtimeError(moecommCommSetLinkModel(comm, &options.linkModel),
                         comm, "moecommCommSetLinkModel"))
      return e;

  // The payload is built before the clock starts: it is not communication.
  HostRows x(host, T * H);
  x.assign(ref::standardX(rank, T, H));

  const auto start = Clock::now();
  moecommLayoutDesc_t desc{};
  desc.numTokens = T;
  desc.topk = p.topk;
  desc.numExperts = p.numExperts;
  desc.idxType = moecommInt64;
  desc.topkIdx = p.topkIdx[rank].data();
  desc.topkWeights = p.explicitWeights ? p.topkWeights[rank].data() : nullptr;
  desc.capacity = p.capacity;
  desc.strategy = options.strategy;
  desc.hidden = H;
  desc.wireType = wireType(p.dtype);
  desc.align = p.align;
  desc.numSlots = static_cast<int64_t>(p.slotExperts.size());
  desc.slotExperts = p.slotExperts.empty() ? nullptr : p.slotExperts.data();
  desc.replicaChoice = p.replicaChoice;

  LayoutGuard guard;
  if (Error e = runtimeError(moecommLayoutCreate(comm, &desc, &guard.layout),
                             comm, "moecommLayoutCreate"))
    return e;
  moecommLayoutInfo_t info{};
  if (Error e = runtimeError(moecommLayoutGetInfo(guard.layout, &info), comm,
                             "moecommLayoutGetInfo"))
    return e;
  const int64_t R = info.recvRows;
  out.recvRows = R;
  out.dropped = info.dropped;
  out.strategy = info.strategy;
  out.tokensPerExpert.resize(static_cast<size_t>(info.localExperts));
  out.recvWeights.resize(static_cast<size_t>(R));
  out.sources.resize(static_cast<size_t>(2 * R));
  if (Error e = runtimeError(moecommLayoutTokensPerExpert(
                                 guard.layout, out.tokensPerExpert.data()),
                             comm, "moecommLayoutTokensPerExpert"))
    return e;
  if (Error e = runtimeError(
          moecommLayoutRecvWeights(guard.layout, out.recvWeights.data()), comm,
          "moecommLayoutRecvWeights"))
    return e;
  if (Error e = runtimeError(
          moecommLayoutRecvSources(guard.layout, out.sources.data()), comm,
          "moecommLayoutRecvSources"))
    return e;
  for (moecommDirection_t d :
       {moecommDirectionDispatch, moecommDirectionCombine})
    for (int s = 0; s < info.numStages; ++s) {
      StageInfo stage;
      stage.direction = d;
      stage.stage = s;
      if (Error e =
              runtimeError(moecommLayoutStage(guard.layout, d, s, &stage.scope,
                                              &stage.sendRows, &stage.recvRows),
                           comm, "moecommLayoutStage"))
        return e;
      out.stages.push_back(stage);
    }

  // Dispatch, identity experts (y = recv), weighted combine.
  HostRows recv(host, R * H);
  HostRows combined(host, T * H);
  moecommRows_t xRows = x.rows(T, H);
  moecommRows_t recvRows = recv.rows(R, H);
  moecommRows_t outRows = combined.rows(T, H);
  if (api == DirectApi::OneShot) {
    if (Error e =
            runtimeError(moecommDispatch(comm, guard.layout, &xRows,
                                         wireType(p.dtype), &recvRows, nullptr),
                         comm, "moecommDispatch"))
      return e;
    moecommRows_t yRows = recvRows;
    if (Error e =
            runtimeError(moecommCombine(comm, guard.layout, &yRows,
                                        /*weighted=*/1, &outRows, nullptr),
                         comm, "moecommCombine"))
      return e;
  } else {
    moecommRequest_t request = nullptr;
    if (Error e = runtimeError(
            moecommDispatchStart(comm, guard.layout, &xRows, wireType(p.dtype),
                                 &recvRows, nullptr, &request),
            comm, "moecommDispatchStart"))
      return e;
    if (Error e = runtimeError(moecommWait(request), comm, "moecommWait"))
      return e;
    moecommRows_t yRows = recvRows;
    if (Error e = runtimeError(moecommCombineStart(comm, guard.layout, &yRows,
                                                   /*weighted=*/1, &outRows,
                                                   nullptr, &request),
                               comm, "moecommCombineStart"))
      return e;
    if (Error e = runtimeError(moecommWait(request), comm, "moecommWait"))
      return e;
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();

  if (Error e =
          runtimeError(moecommCommGetTraffic(comm, /*global=*/0, &out.traffic),
                       comm, "moecommCommGetTraffic"))
    return e;
  recv.toFloat(out.recv);
  combined.toFloat(out.combine);
  return Error::success();
}

} // namespace moecomm::run
