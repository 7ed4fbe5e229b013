//===- Routing.cpp - Routing validation -----------------------------------===//
#include "Routing.h"

#include "moecomm/Model/Sizes.h"

#include <cstdint>

namespace moecomm {

Status validateRouting(const Topology &topo, int rank,
                       const RoutingView &routing, int64_t capacity,
                       bool placed) {
  const int K = routing.topk;
  const int64_t E = topo.numExperts;
  if (K < 1)
    return invalidArgument(cat("rank ", rank, ": topk must be >= 1, got ", K));
  if (E < 1)
    return invalidArgument(
        cat("rank ", rank, ": num_experts must be >= 1, got ", E));
  if (E > INT32_MAX)
    return invalidArgument(cat("rank ", rank, ": num_experts ", E,
                               " does not fit in 31 bits"));
  if (routing.numTokens < 0)
    return invalidArgument(cat("rank ", rank, ": num_tokens must be >= 0, got ",
                               routing.numTokens));
  // Before any id is read: a [T][K] array whose size overflows cannot be
  // the caller's buffer, and T * K would wrap while indexing it.
  if (!blockFits(routing.numTokens, K))
    return invalidArgument(cat("rank ", rank, ": num_tokens ",
                               routing.numTokens, " x topk ", K,
                               " ids are more bytes than memory holds"));
  if (capacity < 0)
    return invalidArgument(
        cat("rank ", rank, ": capacity must be >= 0, got ", capacity));
  if (!placed && E % topo.ranks != 0)
    return invalidArgument(
        cat("num_experts ", E, " is not divisible by ", topo.ranks, " ranks"));
  for (int64_t t = 0; t < routing.numTokens; ++t)
    for (int k = 0; k < K; ++k) {
      int64_t e = routing.expert(t, k);
      if (e < -1 || e >= E)
        return invalidArgument(cat("rank ", rank, " token ", t, " slot ", k,
                                   ": expert id ", e, " out of range [-1, ", E,
                                   ")"));
      if (e == -1)
        continue;
      for (int j = 0; j < k; ++j)
        if (routing.expert(t, j) == e)
          return invalidArgument(cat("rank ", rank, " token ", t,
                                     ": expert id ", e, " appears in slots ", j,
                                     " and ", k));
    }
  return Status::success();
}

} // namespace moecomm
