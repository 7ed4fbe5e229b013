//===- ExecutionPath.cpp - what every execution path shares ---------------===//

#include "LayerResult.h"

#include "moecomm/Workload/RuntimeError.h"

using namespace llvm;
using namespace moecomm::workload;

namespace moecomm::run {

ExecutionPath::~ExecutionPath() = default;

Error ExecutionPath::startIteration(moecommComm_t comm,
                                    const RoutingProblem &problem, int rank,
                                    LayerResult &out) {
  out = LayerResult();
  out.rank = rank;
  out.hidden = problem.hidden;
  out.numTokens = problem.numTokens[rank];
  return runtimeError(moecommCommResetTraffic(comm), comm,
                      "moecommCommResetTraffic");
}

} // namespace moecomm::run
