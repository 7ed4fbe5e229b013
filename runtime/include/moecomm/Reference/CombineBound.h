//===- CombineBound.h - the combine's numeric contract ----------*- C++ -*-===//
//
// How far a combine may be from the reference's (docs/runtime.md, "Combine
// numerics and the error bound"): partial rows travel in the data type and
// are rounded to it on the way, so every strategy that pre-reduces per rank
// or per node differs from the reference (which reduces in slot order) by at
// most
//     |out - ref| <= ((L + 1) u + 3K 2^-24) A + (L + 1 + 3K) eta
// per element, with A = sum_k |w_k y_k| over the token's kept slots
// (ref::combineAbsSum), L the roundings to the data type on the way, u the
// output type's unit roundoff (2^-8 bf16, 2^-24 f32) and eta its smallest
// subnormal (2^-133 bf16, 2^-149 f32). per_expert and one rank are
// bit-exact (L = 0). moecomm-run's verification, the runtime tests and
// moecomm-bench's payload check all use this one statement of it.
//
// Library: moecomm_reference (C++17, no LLVM). Namespace moecomm::ref.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_REFERENCE_COMBINEBOUND_H
#define MOECOMM_REFERENCE_COMBINEBOUND_H

#include "moecomm/moecomm.h"

namespace moecomm {
namespace ref {

/// L: roundings to the data type between the expert outputs and a combine's
/// result, given the strategy in effect and its number of dispatch stages:
/// 0 for per_expert and for no stage (one rank: bit-exact), else stages + 1
/// (flat and one-stage hierarchical 2, two-stage hierarchical 3).
int combineRoundings(moecommStrategy_t strategy, int dispatchStages);

/// The most roundings any strategy makes (two-stage hierarchical).
constexpr int kMaxCombineRoundings = 3;

/// The bound for one output data type (moecommFloat32 or moecommBfloat16:
/// anything but f32 is taken as bf16), top-k `topk` and `roundings` = L.
struct CombineBound {
  /// (L + 1) u + 3K 2^-24: the factor of A.
  double relative = 0;
  /// (L + 1 + 3K) eta: the absolute term for results in the subnormal
  /// range, where roundings lose absolute, not relative, precision.
  double absolute = 0;
  /// The largest error allowed for an element whose A is `absSum`.
  double of(double absSum) const { return relative * absSum + absolute; }
};
CombineBound combineBound(moecommDataType_t dataType, int topk, int roundings);

} // namespace ref
} // namespace moecomm

#endif // MOECOMM_REFERENCE_COMBINEBOUND_H
