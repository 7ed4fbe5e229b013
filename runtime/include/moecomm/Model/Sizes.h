//===- Sizes.h - The rule for caller-given sizes ----------------*- C++ -*-===//
//
// Row counts, hidden sizes, token counts and top-k come from callers as
// int64; products of them (bytes of a block, elements of a [T][K] routing
// array, FP8 scale counts) are computed all over the runtime. Signed
// overflow in any of them is undefined behaviour and, worse, a wrapped size
// can pass a check and then index past a buffer. So every caller-given
// block is checked once, at the boundary, with this one rule, and every
// size the runtime derives from a checked block then fits in int64.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_MODEL_SIZES_H
#define MOECOMM_MODEL_SIZES_H

#include <algorithm>
#include <cstdint>

namespace moecomm {

/// Bytes per element the rule reserves: the widest element (int64). An FP8
/// row of H elements plus its scales (at most 4 * ceil(H / 128) f32 bytes,
/// or ceil(H / 32) E8M0 bytes) takes at most 8 * H bytes, so it is covered
/// too.
constexpr int64_t kMaxElementBytes = 8;

/// Whether a [rows][cols] block (rows, cols >= 0) is addressable: max(rows,
/// 1) * cols elements of kMaxElementBytes bytes fit in int64. The max with
/// 1 bounds a row's size even when a block is empty (a row of a huge
/// hidden size still gets its bytes and scale count computed).
inline bool blockFits(int64_t rows, int64_t cols) {
  int64_t elements;
  if (__builtin_mul_overflow(std::max<int64_t>(rows, 1), cols, &elements))
    return false;
  return elements <= INT64_MAX / kMaxElementBytes;
}

/// a * b when it fits in int64 (into `out`); false when it overflows.
inline bool checkedMul(int64_t a, int64_t b, int64_t &out) {
  return !__builtin_mul_overflow(a, b, &out);
}

/// a + b when it fits in int64 (into `out`); false when it overflows.
inline bool checkedAdd(int64_t a, int64_t b, int64_t &out) {
  return !__builtin_add_overflow(a, b, &out);
}

/// a * b for non-negative counters, INT64_MAX when it does not fit. Traffic
/// counted from a caller's size hint (auto's row size) is not backed by
/// memory, so it may exceed int64: it then saturates, which keeps it
/// defined and ordered (more traffic never counts as less).
inline int64_t saturatingMul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

/// a + b for non-negative counters, INT64_MAX when it does not fit.
inline int64_t saturatingAdd(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

} // namespace moecomm

#endif // MOECOMM_MODEL_SIZES_H
