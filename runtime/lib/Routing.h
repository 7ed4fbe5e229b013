//===- Routing.h - Routing validation ---------------------------*- C++ -*-===//
#ifndef MOECOMM_LIB_ROUTING_H
#define MOECOMM_LIB_ROUTING_H

#include "Status.h"
#include "moecomm/Model/Traffic.h"

namespace moecomm {

/// Checks one rank's routing before anything is exchanged (DESIGN.md §3):
/// topk >= 1, num_experts >= 1, num_tokens >= 0, a [num_tokens][topk]
/// array within Sizes.h's blockFits, capacity >= 0,
/// num_experts % W == 0 (unless `placed`: with an expert placement the
/// slots are what the ranks split, checkPlacement's rule), every id in
/// [-1, E), no id twice in a token's row.
/// Errors are InvalidArgument with the messages documented in Reference.h,
/// e.g. "rank 2 token 5 slot 1: expert id 300 out of range [-1, 256)"; the
/// first failing token, then slot, is reported.
Status validateRouting(const Topology &topo, int rank,
                       const RoutingView &routing, int64_t capacity,
                       bool placed);

} // namespace moecomm

#endif // MOECOMM_LIB_ROUTING_H
