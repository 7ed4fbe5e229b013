//===- Reference.h - Single-process oracle for dispatch/combine -*- C++ -*-===//
//
// A deliberately simple, single-process model of what moecomm's dispatch and
// combine must produce on every rank (DESIGN.md §3, §5). It loops over all
// tokens of all ranks; it shares no code with the runtime's plan builder
// (runtime/lib/Plan.cpp) or its FP8 quantizer (runtime/lib/Fp8.cpp), so the
// tests and `moecomm-run` can use it as an independent oracle.
//
// Library: moecomm_reference (C++17, no LLVM). Namespace moecomm::ref.
//
// Conventions: payload rows are stored as f32 values, row-major. A value of
// data type bf16 is stored as the f32 it represents exactly. Shapes are given
// as [rows][hidden]; T_r = routing[r].numTokens.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_REFERENCE_H
#define MOECOMM_REFERENCE_H

#include "moecomm/moecomm.h"

#include <cstdint>
#include <string>
#include <vector>

namespace moecomm {
namespace ref {

/// One rank's routing.
struct RankRouting {
  /// T >= 0.
  int64_t numTokens = 0;
  /// [T][K] expert ids; -1 = masked slot.
  std::vector<int64_t> topkIdx;
  /// [T][K] routing weights, or empty (every weight is 1.0).
  std::vector<float> topkWeights;
};

/// A whole expert-parallel problem: topology, options and every rank's
/// routing.
struct Problem {
  int ranks = 1;          ///< W >= 1
  int ranksPerNode = 1;   ///< G >= 1, W % G == 0
  int64_t numExperts = 1; ///< E; E % W must be 0
  int topk = 1;           ///< K >= 1
  int64_t hidden = 1;     ///< H >= 1
  /// Type of x, y and out: moecommFloat32 or moecommBfloat16.
  moecommDataType_t dataType = moecommBfloat16;
  /// Dispatch wire type: dataType or an FP8 type (moecommFloat8E4M3,
  /// moecommFloat8E4M3UE8M0, moecommMxfp8).
  moecommDataType_t wireType = moecommBfloat16;
  /// Max received rows per rank; 0 = unbounded.
  int64_t capacity = 0;
  /// [W] routing of each rank.
  std::vector<RankRouting> routing;
  /// Expert segment alignment of the dispatch output, in rows: a power of
  /// two in [1, kMaxAlign] (moecomm/Model/Limits.h); 1 = unpadded. Last, so
  /// that aggregates written before it keep their meaning.
  int64_t align = 1;
  /// Expert placement (moecomm/Model/Placement.h, DeepSeek EPLB's phy2log):
  /// [S] logical expert of each physical slot, numExperts = E logical
  /// experts; empty = none (slot e holds expert e). With one, the routing's
  /// ids are logical and every rank's are rewritten into slot ids by
  /// chooseReplicas with `replicaChoice` (physicalProblem) before the
  /// layout; E % W need not be 0, S % W must. After align, for the same
  /// reason.
  std::vector<int64_t> slotExperts;
  moecommReplicaChoice_t replicaChoice = moecommReplicaLocality;

  bool hasPlacement() const { return !slotExperts.empty(); }
  /// Experts per rank of the layout: S/W with a placement, else E/W.
  int64_t localExperts() const {
    return (hasPlacement() ? (int64_t)slotExperts.size() : numExperts) / ranks;
  }
  int nodes() const { return ranks / ranksPerNode; }
};

/// Checks `p` exactly as moecommLayoutCreate does. Returns "" when valid;
/// otherwise the runtime's message for the lowest failing rank (first
/// failing token, then slot), e.g.
///   "rank 2 token 5 slot 1: expert id 300 out of range [-1, 256)"
///   "rank 0 token 3: expert id 7 appears in slots 0 and 2"
///   "num_experts 10 is not divisible by 4 ranks"
///   "rank 0: unknown replica choice 7"
///   "rank 0: placement: logical expert 3 has no slot"
/// (the placement's messages: moecomm/Model/Placement.h's checkPlacement)
/// and sets *code (if non-null) to the result the runtime returns.
std::string validate(const Problem &p, moecommResult_t *code = nullptr);

/// The problem the layout is built from: without a placement `p` itself;
/// with one, every rank's topkIdx rewritten into physical slot ids in
/// [-1, S) by chooseReplicas (moecomm/Model/Placement.h: the choice is the
/// runtime's documented policy; the oracle checks the data movement),
/// numExperts = S and no placement. `p` must be valid.
Problem physicalProblem(const Problem &p);

/// One received row of the dispatch output. A padding row (align > 1) has
/// srcRank = srcToken = slot = -1 and weight 0.
struct RecvRow {
  int64_t localExpert; ///< in [0, localExperts()): a local slot
  int64_t srcRank;
  int64_t srcToken;
  int slot;     ///< top-k slot of the pair at its source
  float weight; ///< routing weight (1.0 if the problem has none)

  bool isPadding() const { return srcRank < 0; }
};

/// What one rank receives from dispatch.
struct RankLayout {
  /// [R] expert-major: local expert asc, then source rank asc, then source
  /// token asc, then the expert's padding rows up to a multiple of align.
  /// Dropped pairs are absent.
  std::vector<RecvRow> rows;
  /// [localExperts()] real rows per local expert (slot) after drops (int64).
  std::vector<int64_t> tokensPerExpert;
  /// [localExperts() + 1] first row of each local expert's segment, then R.
  std::vector<int64_t> expertOffsets;
  /// Rows dropped by capacity at this (destination) rank.
  int64_t dropped = 0;
};

/// Routing result on every rank ([W]). Capacity drops: destination d keeps
/// its incoming (token, expert) pairs in (source rank, source token, expert
/// id) order and drops those beyond `capacity`; with a placement the ids
/// are physicalProblem's slot ids. `p` must be valid.
std::vector<RankLayout> layout(const Problem &p);

/// True if pair (rank, token, slot) survived drops and is not masked.
/// Helper view over layout(): kept[r][t*K + k].
std::vector<std::vector<bool>> keptSlots(const Problem &p,
                                         const std::vector<RankLayout> &l);

/// DESIGN.md §8's fixed payload, as values exactly representable in bf16:
/// x[t][h] = ((rank*977 + t*131 + h*7) mod 255 - 127) / 128. Returns [T][H].
std::vector<float> standardX(int rank, int64_t numTokens, int64_t hidden);

/// Rounds an f32 value to `type` (f32: unchanged; bf16: round to nearest
/// even; NaN stays NaN).
float roundTo(float v, moecommDataType_t type);

/// What moecommDispatch must return on every rank: [W][R_r * H], each row
/// zeros for a padding row, else the source row x[srcRank][srcToken] after
/// the wire round trip: unchanged
/// when wireType == dataType; for FP8, quantized per block (128 elements,
/// mxfp8 32) with fp8BlockScale's scale, q = round-to-nearest-even e4m3fn of
/// x / scale, saturated at 448, dequantized as q * scale in f32 and rounded
/// to dataType. `x` is [W][T_r * H].
std::vector<std::vector<float>>
dispatch(const Problem &p, const std::vector<RankLayout> &l,
         const std::vector<std::vector<float>> &x);

/// What combine must return: out[r][t] = sum over kept slots k in slot order
/// of (weighted ? w[t][k] : 1) * y[row(r, t, k)], accumulated in f32 from 0
/// (acc = acc + w * y), rounded to dataType. Tokens with no kept slot get
/// zeros. `y` is [W][R_d * H] in dispatch row order (padding rows are not
/// read); returns [W][T_r * H].
/// This is bit-exact for the per_expert strategy.
std::vector<std::vector<float>>
combine(const Problem &p, const std::vector<RankLayout> &l,
        const std::vector<std::vector<float>> &y, bool weighted);

/// sum over kept slots k of |(weighted ? w : 1) * y[row(r, t, k)]| per
/// element, in f64: the scale of the combine error bound (docs/runtime.md).
std::vector<std::vector<double>>
combineAbsSum(const Problem &p, const std::vector<RankLayout> &l,
              const std::vector<std::vector<float>> &y, bool weighted);

/// Bytes of one row on the wire: H * sizeof(type), or for FP8 the payload
/// plus its scales: H + 4 * ceil(H / 128) (f32 scales), H + ceil(H / 128)
/// (fp8_e4m3_ue8m0's E8M0 bytes), H + ceil(H / 32) (mxfp8).
int64_t rowBytes(moecommDataType_t type, int64_t hidden);

/// The inter-node lower bound of DESIGN.md §5.5: sum over all tokens of the
/// number of distinct nodes, other than the token's own, that hold at least
/// one of its kept experts (with a placement: of the slots physicalProblem
/// chose), times `rowBytes`. The hierarchical strategy's
/// dispatch (and, with the combine row bytes, combine) inter-node payload
/// bytes equal it exactly.
int64_t interNodeLowerBoundBytes(const Problem &p,
                                 const std::vector<RankLayout> &l,
                                 int64_t rowBytes);

/// True for the FP8 wire types.
bool isFp8Wire(moecommDataType_t type);

/// The scale of an FP8 block of `wire` type whose largest magnitude is
/// `amax` (NaNs ignored): 1 for amax == 0; fp8_e4m3: amax / 448 in f32;
/// fp8_e4m3_ue8m0: 2^ceil(log2(amax / 448)) (DeepSeek-V3's UE8M0 scales);
/// mxfp8: 2^(floor(log2(amax)) - 8) (OCP MX v1.0 §6.3); the power-of-two
/// exponent clamped to E8M0's [-127, 127] (infinite amax: 2^127).
float fp8BlockScale(moecommDataType_t wire, float amax);

/// Reference FP8 e4m3fn encoding of one f32 value (round to nearest even,
/// saturating to +-448; NaN -> 0x7F), by nearest search over the code table.
uint8_t fp8Encode(float v);
/// Value of an e4m3fn code (0x7F / 0xFF are NaN).
float fp8Decode(uint8_t code);

} // namespace ref
} // namespace moecomm

#endif // MOECOMM_REFERENCE_H
