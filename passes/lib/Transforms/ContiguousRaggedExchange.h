//===- ContiguousRaggedExchange.h - ragged calls as all_to_all --*- C++ -*-===//
//
// XLA's RaggedAllToAll puts each sender's rows where the offsets say. The
// per-expert exchange of MaxText's sparse path computes them so that every
// segment is contiguous in rank order on both sides (its
// get_all_to_all_params: exclusive cumulative sums of the sizes, the
// receivers' offsets sent back to the senders), which is exactly what
// moecomm.all_to_all moves. These matchers prove that from the IR for
// moecomm-raise-dispatch; the forms they accept are in its description
// (Passes.td).
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_TRANSFORMS_CONTIGUOUSRAGGEDEXCHANGE_H
#define MOECOMM_TRANSFORMS_CONTIGUOUSRAGGEDEXCHANGE_H

#include "moecomm/Dialect/MoEComm/MoEComm.h"

#include "mlir/IR/Value.h"

#include <optional>
#include <string>

namespace mlir::moecomm {

/// Whether `exchange` sends one row to every one of its W ranks: its send
/// counts are a constant of W ones (an exchange of per-rank metadata, such
/// as group sizes or offsets).
bool sendsOneRowPerRank(AllToAllOp exchange);

/// An exclusive prefix sum over the W entries of `sizes` (tensor<W x iN>),
/// as a cumulative sum lowers to loops:
///
///   %r:2 = scf.for %i = %c0 to %cW step %c1
///       iter_args(%s = %zero, %t = %init) -> (iN, tensor<W x iN>) {
///     %t1 = tensor.insert %s into %t[%i]
///     %n = tensor.extract %sizes[%i]
///     %s1 = arith.addi %s, %n            // or %n, %s
///     scf.yield %s1, %t1
///   }
///
/// `prefix` (%r#1: entry i is the sum of entries [0, i)) and `total` (%r#0)
/// are results of one such loop; other loop-carried values may ride along.
struct ExclusiveScan {
  Value sizes;
  Value prefix;
  Value total;
};

/// The exclusive scan `v` is the prefix or the total of, if any.
std::optional<ExclusiveScan> exclusiveScanOf(Value v);

/// The tensor<W x i64> `src` of which `v` is the peer exchange (entry s of
/// `v` on rank r is entry r of `src` on rank s), if any, and its all_to_all
/// in `exchange`:
///
///   %2 = tensor.expand_shape %src [[0, 1]] output_shape [W, 1]
///   %r, %_ = moecomm.all_to_all %2, %ones     // W ones: a row to every rank
///   %1 = tensor.collapse_shape %r [[0, 1]]
///   %v = tensor.cast %1 : tensor<?xi64> to tensor<Wxi64>   // optional
Value peerExchangeOf(Value v, AllToAllOp &exchange);

/// Whether the JAX ragged all-to-all `call` (isJaxRaggedAllToAll) on
/// `ranks` ranks moves contiguous segments in rank order into an output of
/// exactly the rows it receives, i.e. is `moecomm.all_to_all` of its
/// operand with its send_sizes on `topology`: it passes
/// checkJaxRaggedAllToAll with a group of `ranks`; its input_offsets are
/// the exclusive scan of its send_sizes; its output_offsets are the peer
/// exchange, on `topology`, of the exclusive scan of its recv_sizes; its
/// output is a `tensor.empty` of the total of an exclusive scan of its
/// recv_sizes (through an arith.index_cast). That recv_sizes holds what the
/// peers send and the operand holds the rows sent are the caller's to
/// prove. Otherwise returns why not, naming the operand.
std::optional<std::string> whyNotContiguous(Operation *call, int64_t ranks,
                                            TopologyAttr topology);

} // namespace mlir::moecomm

#endif // MOECOMM_TRANSFORMS_CONTIGUOUSRAGGEDEXCHANGE_H
