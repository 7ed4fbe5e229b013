//===- RoutingProblem.h - one routing problem -------------------*- C++ -*-===//
//
// The routing problem the tools execute: topology (W, G), experts E, top-k
// K, hidden size H, payload dtype, optional capacity and every rank's topk_idx
// / topk_weights. It comes from a `moecomm-routing-v1` file (RoutingFile.h,
// DESIGN.md §8) or a generator (Generators.h), and is the single input of
// every execution path, the reference oracle and the reports.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_WORKLOAD_ROUTINGPROBLEM_H
#define MOECOMM_WORKLOAD_ROUTINGPROBLEM_H

#include "moecomm/moecomm.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace moecomm::workload {

/// The "dtype" of DESIGN.md §8: the payload type in and out of dispatch and
/// combine, and the type on the wire. The FP8 ones mean bf16 in/out with an
/// FP8 wire format (moecomm/Model/WireFormat.h): `FP8` e4m3 with 1x128 f32
/// block scales (DESIGN.md's "fp8"), `FP8UE8M0` 1x128 power-of-two scales as
/// E8M0 bytes, `MXFP8` OCP MXFP8 (1x32 E8M0 scales).
enum class PayloadType { BF16, F32, FP8, FP8UE8M0, MXFP8 };

/// True for the FP8 wire formats.
inline bool isFp8(PayloadType type) {
  return type == PayloadType::FP8 || type == PayloadType::FP8UE8M0 ||
         type == PayloadType::MXFP8;
}

/// "bf16", "f32", "fp8", "fp8_e4m3_ue8m0" or "mxfp8".
llvm::StringRef payloadTypeName(PayloadType type);
/// Parses "bf16", "f32", "fp8" (also spelled "fp8_e4m3", as in the IR),
/// "fp8_e4m3_ue8m0" or "mxfp8"; std::nullopt for anything else.
std::optional<PayloadType> parsePayloadType(llvm::StringRef name);
/// Parses a strategy as moecomm::strategyName spells it (per_expert, flat,
/// hierarchical, auto); std::nullopt for anything else.
std::optional<moecommStrategy_t> parseStrategyName(llvm::StringRef name);
/// The runtime type of x, recv, y and out: moecommFloat32 for F32, otherwise
/// moecommBfloat16.
moecommDataType_t hostType(PayloadType type);
/// The runtime wire type passed to moecommDispatch: hostType(), or the FP8
/// type (moecommFloat8E4M3, moecommFloat8E4M3UE8M0, moecommMxfp8).
moecommDataType_t wireType(PayloadType type);

/// One complete routing problem. Invariants after loadRoutingFile() or
/// generateRouting() (shape invariants) and validateRouting() (semantic ones):
/// topkIdx.size() == topkWeights.size() == numTokens.size() == ranks, and
/// topkIdx[r].size() == numTokens[r] * topk.
struct RoutingProblem {
  int ranks = 0;          ///< W >= 1.
  int ranksPerNode = 0;   ///< G >= 1, W % G == 0.
  int64_t numExperts = 0; ///< E >= 1, E % W == 0 (without a placement).
  int topk = 0;           ///< K >= 1.
  int64_t hidden = 0;     ///< H >= 1.
  PayloadType dtype = PayloadType::BF16;
  /// Received-row bound per rank (DESIGN.md §2); 0 = none.
  int64_t capacity = 0;
  /// Expert segment alignment of the dispatch output in rows (a power of
  /// two; 1 = unpadded): a run setting (moecomm-run's --align), never read
  /// from or written to a routing file.
  int64_t align = 1;
  /// Expert placement (moecomm/Model/Placement.h; moecomm-run's --placement)
  /// and its replica choice: [S] logical expert of each physical slot, empty
  /// = none; topkIdx then holds logical ids. Run settings like align.
  std::vector<int64_t> slotExperts;
  moecommReplicaChoice_t replicaChoice = moecommReplicaLocality;
  /// T_r for each rank (may be 0).
  std::vector<int64_t> numTokens;
  /// topkIdx[r] is rank r's [T_r][K] expert ids, row-major; -1 = masked slot.
  std::vector<std::vector<int64_t>> topkIdx;
  /// topkWeights[r] is rank r's [T_r][K] routing weights (f32). Defaults to
  /// 1.0 for every non-masked slot (0.0 for masked ones) when not given.
  std::vector<std::vector<float>> topkWeights;
  /// Whether topk_weights was given (file) or drawn (generator).
  bool explicitWeights = false;
  /// A short human-readable description of where the routing came from.
  std::string origin;

  int numNodes() const { return ranks / ranksPerNode; }
  int nodeOf(int rank) const { return rank / ranksPerNode; }
  /// Experts per rank: E / W, or with a placement its slots per rank S / W.
  int64_t localExperts() const {
    return (slotExperts.empty() ? numExperts
                                : static_cast<int64_t>(slotExperts.size())) /
           ranks;
  }
  /// The rank hosting expert (with a placement: slot) `e`.
  int rankOfExpert(int64_t e) const {
    return static_cast<int>(e / localExperts());
  }
  int64_t totalTokens() const;
};

/// Round-to-nearest-even f32 -> bf16 bits (NaN stays NaN).
uint16_t floatToBf16(float value);
/// Exact bf16 bits -> f32.
float bf16ToFloat(uint16_t bits);

/// Semantic checks, all of DESIGN.md §3's input rules: W >= 1, G >= 1,
/// W % G == 0, E >= 1, E % W == 0 (without a placement: with one, its
/// own rules are checkPlacedRouting's), K >= 1, H >= 1, every id in [-1, E), no
/// id twice in a row, capacity >= 0; and the tool's own rule that a token's
/// sum of |weight| is at most the largest bf16 (about 3.39e38), so its
/// combine cannot overflow. Returns invalid_argument with a one-line message
/// (naming rank, token and slot for id errors).
llvm::Error validateRouting(const RoutingProblem &problem);

} // namespace moecomm::workload

#endif // MOECOMM_WORKLOAD_ROUTINGPROBLEM_H
