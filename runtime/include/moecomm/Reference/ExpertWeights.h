//===- ExpertWeights.h - deterministic SwiGLU expert weights ----*- C++ -*-===//
//
// The weights moecomm-run gives the example graphs' expert FFNs
// (docs/moecomm-run.md, "Expert weights"), defined element by element so
// that anyone can recompute them: a counter-based generator (the idea of
// Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11, with
// SplitMix64 of Steele et al., OOPSLA'14, as the mixing function) of
// (seed, global expert id, matrix, row, col), scaled like PyTorch's default
// nn.Linear initialisation, uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)).
//
// Library: moecomm_reference (C++17, no LLVM). Namespace moecomm::ref.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_REFERENCE_EXPERTWEIGHTS_H
#define MOECOMM_REFERENCE_EXPERTWEIGHTS_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace moecomm {
namespace ref {

/// The three matrices of a SwiGLU expert, y = (silu(x W_gate) * (x W_up))
/// W_down: gate and up [H][I] (fan_in H), down [I][H] (fan_in I). The
/// graphs take them transposed, as nn.Linear stores its weight ([out][in]:
/// fillExpertMatrixTransposed).
enum class ExpertMatrix : uint64_t { Gate = 0, Up = 1, Down = 2 };

/// SplitMix64's output function of one state z:
///   z += 0x9E3779B97F4A7C15; z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;
///   z = (z ^ (z >> 27)) * 0x94D049BB133111EB; return z ^ (z >> 31).
uint64_t splitMix64(uint64_t z);

/// Element (row, col) of `matrix` of global expert `expert` (rank * E/W +
/// local expert) for `seed`, as f32:
///   k = s(s(s(s(s(seed) ^ expert) ^ matrix) ^ row) ^ col), s = splitMix64,
///   u = (k >> 40) * 2^-23 - 1          (exact in f32, in [-1, 1))
///   w = u * f32(1 / sqrt(fan_in))     (the product rounded to f32)
/// with fan_in = H for gate and up, I for down. Ranges: every argument
/// >= 0, fanIn >= 1.
float expertWeight(uint64_t seed, int64_t expert, ExpertMatrix matrix,
                   int64_t row, int64_t col, int64_t fanIn);

/// Fills `out` ([rows][cols], row-major) with `matrix` of `expert`:
/// out[r * cols + c] = expertWeight(seed, expert, matrix, r, c, fanIn). One
/// SplitMix64 per element (the prefix up to the row is shared).
void fillExpertMatrix(uint64_t seed, int64_t expert, ExpertMatrix matrix,
                      int64_t rows, int64_t cols, int64_t fanIn, float *out);

/// Fills `out` ([cols][rows], row-major) with the transpose of `matrix`
/// ([rows][cols]): out[c * rows + r] = expertWeight(seed, expert, matrix, r,
/// c, fanIn). The layout nn.Linear keeps its weight in ([out][in]), which
/// the example graphs take: their GEMMs then read B transposed, which
/// OpenBLAS runs faster here at a chunk's rows (docs/moecomm-run.md,
/// "Expert FFNs"; docs/BENCHMARKS.md, "Overlap"). Ranges as
/// expertWeight; `out` holds rows * cols floats.
void fillExpertMatrixTransposed(uint64_t seed, int64_t expert,
                                ExpertMatrix matrix, int64_t rows, int64_t cols,
                                int64_t fanIn, float *out);

/// One expert's weights for hidden size H and intermediate size I:
/// gate, up [H][I] and down [I][H], f32.
struct ExpertWeights {
  int64_t hidden = 0, intermediate = 0;
  std::vector<float> gate, up, down;
};
ExpertWeights expertWeights(uint64_t seed, int64_t expert, int64_t hidden,
                            int64_t intermediate);

/// The expert whose weights slot `slot` (in [0, S)) holds: with an expert
/// placement (`slotExperts` [S], DeepSeek EPLB's phy2log) its logical expert,
/// so that every replica applies the same weights; without one (empty) the
/// slot itself.
inline int64_t weightsExpert(const std::vector<int64_t> &slotExperts,
                             int64_t slot) {
  return slotExperts.empty() ? slot
                             : slotExperts[static_cast<std::size_t>(slot)];
}

} // namespace ref
} // namespace moecomm

#endif // MOECOMM_REFERENCE_EXPERTWEIGHTS_H
