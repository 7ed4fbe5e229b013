//===- Limits.h - What the runtime can address ------------------*- C++ -*-===//
//
// Bounds on the sizes of a MoE layer that the dialect's verifiers, the
// tools' input checks and the runtime agree on.
//
// Library: moecomm_model (C++17, no dependencies). Namespace moecomm.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_MODEL_LIMITS_H
#define MOECOMM_MODEL_LIMITS_H

#include <cstdint>

namespace moecomm {

/// Ranks of one communicator (rank ids fit in an int with room to spare).
constexpr int64_t kMaxRanks = int64_t(1) << 20;
/// Experts: ids are 31-bit (int32 topk_idx).
constexpr int64_t kMaxExperts = (int64_t(1) << 31) - 1;
/// Elements of one row (the hidden size).
constexpr int64_t kMaxHidden = (int64_t(1) << 31) - 1;

/// The largest top-k. Compiling a layer takes time linear in a static K (the
/// cost model sums over the K slots), a minute near 2^31; models route to at
/// most a few dozen experts. moecomm-run's routing files have the same bound.
constexpr int64_t kMaxTopk = 4096;

/// The largest expert segment alignment of dispatch's recv, in rows
/// (moecomm.h's MOECOMM_MAX_ALIGN): grouped GEMM tiles are at most a few
/// hundred rows, and the bound keeps the padding (at most E/W * (align - 1)
/// rows per rank) addressable.
constexpr int64_t kMaxAlign = int64_t(1) << 16;

/// Whether `align` is a valid expert segment alignment: a power of two in
/// [1, kMaxAlign] (the runtime maps a desc's 0 to 1 before asking).
constexpr bool isValidAlign(int64_t align) {
  return align >= 1 && align <= kMaxAlign && (align & (align - 1)) == 0;
}

} // namespace moecomm

#endif // MOECOMM_MODEL_LIMITS_H
