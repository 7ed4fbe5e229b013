//===- Plan.h - Per-rank stage plans of dispatch and combine ----*- C++ -*-===//
//
// What every rank does in every stage of a strategy, as plain arrays that can
// be copied to a device: for each exchange stage the scope, the group of
// ranks and the rows sent to / received from each member, plus every local
// pack / unpack as a CSR row map. See docs/runtime.md for the exact row
// orders.
//
// The runtime builds these plans collectively (moecommLayoutCreate: each rank
// builds its part from the routing metadata it received along the stages);
// buildPlans() builds every rank's plan from the global routing in one
// process, with the same code, and is what tests and tools use to inspect
// plans without a communicator.
//
// Library: moecomm_runtime. Namespace moecomm.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_PLAN_H
#define MOECOMM_PLAN_H

#include "moecomm/Model/Traffic.h"
#include "moecomm/moecomm.h"

#include <cstdint>
#include <string>
#include <vector>

namespace moecomm {

/// A CSR row map from `in` rows to `out` rows:
///   out[i] = sum_{j in [offsets[i], offsets[i+1])} c_j * in[src[j]]
/// with c_j = coefs[j] when coefs is non-empty and the caller asks for
/// weights, else 1. An empty segment makes a zero row. Sums run in f32, in
/// j order, from +0. Dispatch maps have at most one term per row and no
/// coefficients (a gather; an empty row is an align padding row, zero).
struct RowMap {
  std::vector<int64_t> offsets{0}; ///< [rows + 1]
  std::vector<int64_t> src;        ///< [terms] input row indices
  std::vector<float> coefs;        ///< [terms] or empty

  int64_t rows() const { return (int64_t)offsets.size() - 1; }
  int64_t terms() const { return (int64_t)src.size(); }
  /// Terms are appended with addTerm, then endRow closes the output row.
  void addTerm(int64_t in) { src.push_back(in); }
  void addTerm(int64_t in, float c) {
    src.push_back(in);
    coefs.push_back(c);
  }
  void endRow() { offsets.push_back((int64_t)src.size()); }
};

/// One exchange stage of one rank.
struct StagePlan {
  moecommScope_t scope = moecommScopeGlobal;
  /// Ranks of the scope group, in member order (global: 0..W-1; intra_node:
  /// the ranks of this node by local rank; inter_node: the peers by node).
  std::vector<int> group;
  /// Rows sent to / received from each member ([group.size()]); the send
  /// buffer is ordered by member, the receive buffer concatenated by member.
  std::vector<int64_t> sendCounts, recvCounts;
  /// Builds the send buffer from the stage's input rows (dispatch: x for
  /// stage 0, else the previous stage's receive buffer; combine likewise
  /// from y).
  RowMap pack;

  int64_t sendRows() const;
  int64_t recvRows() const;
};

/// The stages of one direction plus the final local unpack.
struct DirectionPlan {
  std::vector<StagePlan> stages; ///< execution order
  /// Builds the output (dispatch: recv [R]; combine: out [T]) from the last
  /// stage's receive buffer, or from the input when there is no stage.
  RowMap unpack;
};

/// Everything one rank needs for a layout.
struct RankPlan {
  int rank = 0;
  moecommStrategy_t strategy = moecommPerExpert;
  int64_t numTokens = 0;                ///< T of this rank
  std::vector<int64_t> tokensPerExpert; ///< [E/W] after drops (real rows)
  /// [E/W + 1] start of each local expert's segment of recv, then R; each a
  /// multiple of the layout's align (padExpertSegments).
  std::vector<int64_t> expertOffsets;
  /// [R] expert-major routing weights; 0 for a padding row.
  std::vector<float> recvWeights;
  /// [R][2] (source rank, token); (-1, -1) for a padding row.
  std::vector<int64_t> recvSources;
  int64_t dropped = 0;                  ///< rows dropped at this rank
  DirectionPlan dispatch;
  DirectionPlan combine;

  int64_t recvRows() const { return (int64_t)recvWeights.size(); }
};

/// The routing metadata record that travels with the rows while a layout is
/// built, one per kept (token, expert) pair (counted as metadata bytes).
struct PairRecord {
  int64_t token;   ///< token index at its source rank
  int32_t srcRank; ///< source (home) rank of the token
  int32_t expert;  ///< global expert id
  float weight;    ///< routing weight
  int32_t slot;    ///< top-k slot at the source
};
static_assert(sizeof(PairRecord) == 24, "PairRecord is sent as bytes");

/// Builds every rank's plan from the global routing (routing[r] for each of
/// the W ranks of `topo`), with capacity drops and expert segments aligned
/// to `align` rows (padExpertSegments); `strategy` must be per_expert, flat
/// or hierarchical. Returns "" on success, else the runtime's validation
/// message (plans is then empty).
std::string buildPlans(const Topology &topo, moecommStrategy_t strategy,
                       int64_t capacity,
                       const std::vector<RoutingView> &routing,
                       std::vector<RankPlan> &plans, int64_t align = 1);

//===--- The pieces the collective builder runs on each rank --------------===//

/// Source side: builds dispatch stage 0 (send side) and the combine unpack
/// of rank `rank`, and the metadata records to send to each stage-0 group
/// member. With no stage (W == 1) it builds the whole plan. `keptMask` is
/// keptSlotMask() of this rank.
struct SourceSide {
  std::vector<std::vector<PairRecord>> records; ///< [members]
};
SourceSide buildSourceSide(const Topology &topo, moecommStrategy_t strategy,
                           int rank, const RoutingView &routing,
                           const std::vector<uint8_t> &keptMask,
                           RankPlan &plan);

/// Relay side (hierarchical with two stages): given the records received in
/// dispatch stage 0 from each inter-node member, fills stage 0's receive
/// counts, stage 1's send side and the combine stage 1 pack, and returns the
/// records to send to each intra-node member.
std::vector<std::vector<PairRecord>>
buildRelaySide(const Topology &topo, int rank,
               const std::vector<std::vector<PairRecord>> &received,
               RankPlan &plan);

/// Destination side: given the records received in the last dispatch stage
/// from each member, fills its receive counts, the dispatch unpack, the
/// combine stage 0 pack, tokens per expert, recv weights and sources.
void buildDestSide(const Topology &topo, moecommStrategy_t strategy, int rank,
                   const std::vector<std::vector<PairRecord>> &received,
                   RankPlan &plan);

/// The last step of every rank's plan (after buildDestSide, or after
/// buildSourceSide when there is no stage): fills expertOffsets and, for
/// `align` > 1 (isValidAlign), makes every local expert's segment of recv
/// start at a multiple of `align` rows by appending padding rows to each
/// segment: empty rows of the dispatch unpack (the gather writes zeros, FP8
/// scale 1: RowKernels.h), weight 0, sources (-1, -1). The combine map that
/// reads recv (its stage 0 pack, or its unpack with no stage) is renumbered
/// to the padded rows, so combine never reads a padding row. No exchange
/// changes: padding is the receiver's own (DeepEP's `expert_alignment`,
/// Hybrid-EP's `pad_multiple`, Megatron's padded routing map).
void padExpertSegments(int64_t align, RankPlan &plan);

/// Records each member sends this rank in dispatch stage `stage`, known in
/// advance from the kept pair matrix [W][W] ([members]).
std::vector<int64_t> expectedRecordCounts(const Topology &topo,
                                          moecommStrategy_t strategy, int stage,
                                          int rank,
                                          const std::vector<int64_t> &kept);

/// The ranks of `scope`'s group that contain `rank`, in member order.
std::vector<int> scopeGroup(const Topology &topo, moecommScope_t scope,
                            int rank);

} // namespace moecomm

#endif // MOECOMM_PLAN_H
