//===- DirectPath.h - moecomm-run's runtime-direct execution ----*- C++ -*-===//
//
// Runs the MoE layer by calling the runtime's C ABI directly:
// moecommLayoutCreate -> moecommDispatch -> identity experts (y = recv) ->
// moecommCombine(weighted) on the rank's communicator (`--direct`).
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TOOLS_RUN_DIRECTPATH_H
#define MOECOMM_TOOLS_RUN_DIRECTPATH_H

#include "LayerResult.h"
#include "moecomm/Workload/RoutingProblem.h"

namespace moecomm::run {

/// Which runtime entry points the direct path drives.
enum class DirectApi {
  /// moecommDispatch / moecommCombine (blocking one-shot calls).
  OneShot,
  /// moecommDispatchStart / moecommCombineStart + moecommWait.
  Async,
};

class DirectPath final : public ExecutionPath {
public:
  DirectPath(PathOptions options, DirectApi api) : options(options), api(api) {}
  const char *name() const override { return "direct"; }
  /// See ExecutionPath::runIteration. The payload is DESIGN.md §8's fixed
  /// x (moecomm::ref::standardX) in the problem's host type; weights are
  /// passed as NULL when the routing file had none (runtime default 1.0).
  llvm::Error runIteration(moecommComm_t comm,
                           const workload::RoutingProblem &problem, int rank,
                           LayerResult &out) override;

private:
  PathOptions options;
  DirectApi api;
};

} // namespace moecomm::run

#endif // MOECOMM_TOOLS_RUN_DIRECTPATH_H
