//===- ExpertWeights.cpp - deterministic SwiGLU expert weights ------------===//

#include "moecomm/Reference/ExpertWeights.h"

#include <cmath>

namespace moecomm {
namespace ref {

uint64_t splitMix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

namespace {

/// The generator's state after (seed, expert, matrix, row).
uint64_t rowKey(uint64_t seed, int64_t expert, ExpertMatrix matrix,
                int64_t row) {
  uint64_t k = splitMix64(seed);
  k = splitMix64(k ^ static_cast<uint64_t>(expert));
  k = splitMix64(k ^ static_cast<uint64_t>(matrix));
  return splitMix64(k ^ static_cast<uint64_t>(row));
}

float scaleOf(int64_t fanIn) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(fanIn)));
}

float weightOf(uint64_t rowKey, int64_t col, float scale) {
  const uint64_t k = splitMix64(rowKey ^ static_cast<uint64_t>(col));
  const float u = static_cast<float>(k >> 40) * 0x1p-23f - 1.0f;
  return u * scale;
}

/// Element (r, c) of `matrix` goes to out[r * rowStride + c * colStride]:
/// the one fill loop behind fillExpertMatrix and its transposed form.
void fillStrided(uint64_t seed, int64_t expert, ExpertMatrix matrix,
                 int64_t rows, int64_t cols, int64_t fanIn, float *out,
                 int64_t rowStride, int64_t colStride) {
  const float scale = scaleOf(fanIn);
  for (int64_t r = 0; r < rows; ++r) {
    const uint64_t key = rowKey(seed, expert, matrix, r);
    for (int64_t c = 0; c < cols; ++c)
      out[r * rowStride + c * colStride] = weightOf(key, c, scale);
  }
}

} // namespace

float expertWeight(uint64_t seed, int64_t expert, ExpertMatrix matrix,
                   int64_t row, int64_t col, int64_t fanIn) {
  return weightOf(rowKey(seed, expert, matrix, row), col, scaleOf(fanIn));
}

void fillExpertMatrix(uint64_t seed, int64_t expert, ExpertMatrix matrix,
                      int64_t rows, int64_t cols, int64_t fanIn, float *out) {
  fillStrided(seed, expert, matrix, rows, cols, fanIn, out, cols, 1);
}

void fillExpertMatrixTransposed(uint64_t seed, int64_t expert,
                                ExpertMatrix matrix, int64_t rows, int64_t cols,
                                int64_t fanIn, float *out) {
  fillStrided(seed, expert, matrix, rows, cols, fanIn, out, 1, rows);
}

ExpertWeights expertWeights(uint64_t seed, int64_t expert, int64_t hidden,
                            int64_t intermediate) {
  ExpertWeights w;
  w.hidden = hidden;
  w.intermediate = intermediate;
  const size_t n = static_cast<size_t>(hidden * intermediate);
  w.gate.resize(n);
  w.up.resize(n);
  w.down.resize(n);
  fillExpertMatrix(seed, expert, ExpertMatrix::Gate, hidden, intermediate,
                   hidden, w.gate.data());
  fillExpertMatrix(seed, expert, ExpertMatrix::Up, hidden, intermediate, hidden,
                   w.up.data());
  fillExpertMatrix(seed, expert, ExpertMatrix::Down, intermediate, hidden,
                   intermediate, w.down.data());
  return w;
}

} // namespace ref
} // namespace moecomm
