//===- RoutingProblem.cpp - one routing problem ---------------------------===//

#include "moecomm/Workload/RoutingProblem.h"
#include "moecomm/Model/Traffic.h"
#include "moecomm/Workload/ToolIO.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstring>

using namespace llvm;

namespace moecomm::workload {

std::optional<moecommStrategy_t> parseStrategyName(StringRef name) {
  for (moecommStrategy_t s :
       {moecommPerExpert, moecommFlat, moecommHierarchical, moecommAuto})
    if (name == ::moecomm::strategyName(s))
      return s;
  return std::nullopt;
}

StringRef payloadTypeName(PayloadType type) {
  switch (type) {
  case PayloadType::BF16:
    return "bf16";
  case PayloadType::F32:
    return "f32";
  case PayloadType::FP8:
    return "fp8";
  case PayloadType::FP8UE8M0:
    return "fp8_e4m3_ue8m0";
  case PayloadType::MXFP8:
    return "mxfp8";
  }
  return "?";
}

std::optional<PayloadType> parsePayloadType(StringRef name) {
  if (name == "bf16")
    return PayloadType::BF16;
  if (name == "f32")
    return PayloadType::F32;
  if (name == "fp8" || name == "fp8_e4m3") // the IR's and pipeline's spelling
    return PayloadType::FP8;
  if (name == "fp8_e4m3_ue8m0")
    return PayloadType::FP8UE8M0;
  if (name == "mxfp8")
    return PayloadType::MXFP8;
  return std::nullopt;
}

moecommDataType_t hostType(PayloadType type) {
  return type == PayloadType::F32 ? moecommFloat32 : moecommBfloat16;
}

moecommDataType_t wireType(PayloadType type) {
  return type == PayloadType::FP8        ? moecommFloat8E4M3
         : type == PayloadType::FP8UE8M0 ? moecommFloat8E4M3UE8M0
         : type == PayloadType::MXFP8    ? moecommMxfp8
                                         : hostType(type);
}

int64_t RoutingProblem::totalTokens() const {
  int64_t total = 0;
  for (int64_t t : numTokens)
    total += t;
  return total;
}

uint16_t floatToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) // NaN: keep it quiet and a NaN
    return static_cast<uint16_t>((bits >> 16) | 0x40u);
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float bf16ToFloat(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

/// The largest finite bf16, 0x7f7f.
constexpr double kMaxWeightMagnitude = 3.3895313892515355e38;

Error validateRouting(const RoutingProblem &p) {
  // The scalar rules, in the order they are reported.
  auto atLeast = [](StringRef field, int64_t value, int64_t least) {
    return value >= least ? Error::success()
                          : inputError(formatv("{0} must be >= {1}, got {2}",
                                               field, least, value));
  };
  // "<field> (<value>) must be a multiple of <of> (<divisor>): <rule> = r".
  auto multipleOf = [](StringRef field, int64_t value, StringRef of,
                       int64_t divisor, StringRef rule) {
    return value % divisor == 0
               ? Error::success()
               : inputError(formatv("{0} ({1}) must be a multiple of {2} "
                                    "({3}): {4} = {5}",
                                    field, value, of, divisor, rule,
                                    value % divisor));
  };
  if (Error e = atLeast("ranks", p.ranks, 1))
    return e;
  if (Error e = atLeast("ranks_per_node", p.ranksPerNode, 1))
    return e;
  if (Error e = multipleOf("ranks", p.ranks, "ranks_per_node", p.ranksPerNode,
                           "W % G"))
    return e;
  if (Error e = atLeast("num_experts", p.numExperts, 1))
    return e;
  // With a placement the slots are what the ranks split (checkPlacement).
  if (p.slotExperts.empty())
    if (Error e =
            multipleOf("num_experts", p.numExperts, "ranks", p.ranks, "E % W"))
      return e;
  if (Error e = atLeast("topk", p.topk, 1))
    return e;
  if (Error e = atLeast("hidden", p.hidden, 1))
    return e;
  if (Error e = atLeast("capacity", p.capacity, 0))
    return e;
  if (static_cast<int>(p.topkIdx.size()) != p.ranks ||
      static_cast<int>(p.numTokens.size()) != p.ranks ||
      static_cast<int>(p.topkWeights.size()) != p.ranks)
    return inputError(formatv("rank count mismatch: ranks is {0} but the "
                              "routing has {1} ranks",
                              p.ranks, p.topkIdx.size()));
  for (int r = 0; r < p.ranks; ++r) {
    const int64_t T = p.numTokens[r];
    if (static_cast<int64_t>(p.topkIdx[r].size()) != T * p.topk ||
        static_cast<int64_t>(p.topkWeights[r].size()) != T * p.topk)
      return inputError(formatv("rank {0}: topk_idx/topk_weights hold {1}/{2} "
                                "entries, expected T*K = {3}",
                                r, p.topkIdx[r].size(), p.topkWeights[r].size(),
                                T * p.topk));
    for (int64_t t = 0; t < T; ++t) {
      const int64_t *row = p.topkIdx[r].data() + t * p.topk;
      for (int k = 0; k < p.topk; ++k) {
        const int64_t e = row[k];
        if (e < -1 || e >= p.numExperts)
          return inputError(formatv("rank {0}, token {1}, slot {2}: expert id "
                                    "{3} out of range [-1, {4})",
                                    r, t, k, e, p.numExperts));
        if (e < 0)
          continue;
        for (int j = 0; j < k; ++j)
          if (row[j] == e)
            return inputError(formatv("rank {0}, token {1}, slot {2}: "
                                      "duplicate expert id {3} (also in slot "
                                      "{4})",
                                      r, t, k, e, j));
      }
      // Rows of DESIGN §8's x are below 1 in magnitude, so every partial sum
      // of a weighted combine, in any order, is below the token's sum of
      // |weight|; past the largest bf16 it could overflow on some strategies
      // and not others, and no result would be right.
      double magnitude = 0;
      for (int k = 0; k < p.topk; ++k)
        magnitude += std::fabs(p.topkWeights[r][t * p.topk + k]);
      if (magnitude > kMaxWeightMagnitude)
        return inputError(formatv("rank {0}, token {1}: the weights' "
                                  "magnitudes sum to {2:e}, above {3:e} "
                                  "(the largest bf16): its combine could "
                                  "overflow",
                                  r, t, magnitude, kMaxWeightMagnitude));
    }
  }
  return Error::success();
}

} // namespace moecomm::workload
