//===- ExpertFfn.h - reference SwiGLU experts with error bounds -*- C++ -*-===//
//
// The single-process reference of the example graphs' routed experts
// (examples/*.mlir, @ffn_layer and @ffn_training_step): each received row
// goes through its expert's SwiGLU FFN (Shazeer, "GLU Variants Improve
// Transformer", 2020), y = (silu(x W_gate) * (x W_up)) W_down with
// silu(g) = g / (1 + exp(-g)), and a training step's input gradient
//   grad_in = (grad_h * u * silu'(g)) W_gate^T + (grad_h * silu(g)) W_up^T,
//   grad_h = grad_y W_down^T,  grad_y = round(w * grad_out) per row,
// with the weights of ExpertWeights.h. The reference computes in double and
// bounds, per output element, how far a graph computing in f32 (any
// summation order, f32 exp) and rounding its output to the data type can
// be from the reference's row: a running error analysis (a dot product of
// n terms in f32 is within gamma_n sum |a b| of the exact one; gamma_n the
// probabilistic bound of Higham and Mary, SIAM J. Sci. Comput. 2019, about
// 8 sqrt(n) 2^-24) propagated through silu to first order
// (ExpertFfn.cpp; docs/moecomm-run.md, "Expert FFNs").
//
// Library: moecomm_reference (C++17, no LLVM). Namespace moecomm::ref.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_REFERENCE_EXPERTFFN_H
#define MOECOMM_REFERENCE_EXPERTFFN_H

#include "moecomm/Reference/Reference.h"

#include <cstdint>
#include <vector>

namespace moecomm {
namespace ref {

/// Rows the experts produced on every rank, in dispatch row order, and a
/// bound per element.
struct ExpertRows {
  /// [W][R_r * H]: the reference's value rounded to the problem's data type
  /// (stored as f32, like every payload of Reference.h).
  std::vector<std::vector<float>> rows;
  /// [W][R_r * H]: e >= 0 such that a graph's row (f32 accumulation, output
  /// rounded to the data type) is within e of `rows` (computed in double,
  /// stored rounded up to f32).
  std::vector<std::vector<float>> error;
};

/// The forward of every received row: row i of rank d goes through global
/// expert d * E/W + its local expert (with a placement, the logical expert
/// p.slotExperts[d * S/W + local slot]). `recv` is [W][R_r * H] (what dispatch
/// delivers: ref::dispatch); `intermediate` I >= 1; weights from
/// expertWeights(seed, expert, H, I). `onlySource` >= 0 computes only the
/// rows whose source rank it is (an MPI process checks its own tokens, whose
/// combine reads no other rows); the other rows stay zero with bound 0.
/// Cost: O(rows computed * H * I) time, one expert's weights (3 H I f32) of
/// memory at a time; experts without rows to compute are not generated.
ExpertRows swigluForward(const Problem &p, const std::vector<RankLayout> &l,
                         const std::vector<std::vector<float>> &recv,
                         uint64_t seed, int64_t intermediate,
                         int64_t onlySource = -1);

/// The input gradient of every received row, for the cached dispatch
/// `gradRecv` of grad_out ([W][R_r * H]): grad_y = roundTo(f32(w) *
/// f32(grad_out row), dataType) with w the row's routing weight, then the
/// FFN's input gradient recomputing g and u from `recv`. `onlySource` and
/// cost as swigluForward, about twice the work.
ExpertRows swigluInputGrad(const Problem &p, const std::vector<RankLayout> &l,
                           const std::vector<std::vector<float>> &recv,
                           const std::vector<std::vector<float>> &gradRecv,
                           uint64_t seed, int64_t intermediate,
                           int64_t onlySource = -1);

} // namespace ref
} // namespace moecomm

#endif // MOECOMM_REFERENCE_EXPERTFFN_H
