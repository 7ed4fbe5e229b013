//===- WeightedRows.h - rows times their routing weights --------*- C++ -*-===//
//
// The backward pass of a per-expert exchange sends each (token, expert) row
// scaled by its routing weight: moecomm.permute_tokens with weights scales
// before the exchange, a raised backward (moecomm-raise-dispatch) after
// moecomm.cached_dispatch, with the received rows' weights. Both spell the
// product here, so that they give the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_TRANSFORMS_WEIGHTEDROWS_H
#define MOECOMM_TRANSFORMS_WEIGHTEDROWS_H

#include "mlir/IR/Builders.h"

namespace mlir::moecomm {

/// `rows` (`tensor<N x H x bf16|f32>`) with row i multiplied by
/// `weights[i]` (`tensor<N x f32>`): a linalg.generic that extends each
/// element to f32, multiplies it by the row's weight and rounds the product
/// once to the rows' dtype (arith.truncf, round to nearest even), as the
/// examples' training steps scale cached_dispatch's rows.
Value scaleRowsByWeights(OpBuilder &b, Location loc, Value rows, Value weights);

} // namespace mlir::moecomm

#endif // MOECOMM_TRANSFORMS_WEIGHTEDROWS_H
