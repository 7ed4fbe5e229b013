//===- Passes.h - moecomm passes --------------------------------*- C++ -*-===//
//
// The passes of DESIGN.md §4 that stay within the moecomm dialect (declared
// from Passes.td): collective level -> staged level, fusion, overlap
// scheduling, cost report; and the buffer freeing of the runtime level that
// the lowering leaves (moecomm-buffer-deallocation). The lowering out of the
// dialect is in moecomm/Conversion/Passes.h, the named pipeline in
// moecomm/Pipelines/Pipeline.h.
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_TRANSFORMS_PASSES_H
#define MOECOMM_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"
#include "moecomm/Dialect/MoEComm/MoEComm.h"

#include <cstdint>
#include <optional>

namespace mlir {
class RewritePatternSet;
namespace moecomm {

/// The values of every `strategy` option (the passes' and
/// moecomm-pipeline's): per_expert, flat, hierarchical and auto, parsed and
/// checked by llvm::cl.
llvm::cl::ValuesClass strategyOptionValues();

/// The value of every `wire-dtype` option (the passes' and
/// moecomm-pipeline's): keep the IR's wire dtypes (the default), or set them
/// to one wire dtype.
enum class WireDtypeOption {
  keep,
  f32,
  bf16,
  fp8_e4m3,
  fp8_e4m3_ue8m0,
  mxfp8
};

/// The values of every `wire-dtype` option, parsed and checked by llvm::cl:
/// empty (keep, so the default prints as `wire-dtype=` and round-trips),
/// f32, bf16, fp8_e4m3, fp8 (the tools' spelling of fp8_e4m3; listed
/// after it, so fp8_e4m3 is the name printed), fp8_e4m3_ue8m0 and mxfp8.
llvm::cl::ValuesClass wireDtypeOptionValues();

/// Whether `op` is JAX's `stablehlo.custom_call @ragged_all_to_all` (the
/// op moecomm-import-ragged-all-to-all converts; an unregistered op, its
/// target in its attributes or properties), whatever its other attributes.
/// moecomm-opt parses it, and no other unregistered op, with this.
bool isJaxRaggedAllToAll(Operation *op);

#define GEN_PASS_DECL
#include "moecomm/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "moecomm/Transforms/Passes.h.inc"

/// The most token chunks per MoE layer moecomm-schedule-overlap accepts:
/// every chunk's exchanges start before the first wait, so all chunks' values
/// are live across the runtime calls, and LLVM's register allocation of the
/// lowered function grows faster than linearly with them (moecomm-run's JIT:
/// 2 s at 64 chunks, 22 s at 256). Overlap needs 2 to 8 chunks in practice.
constexpr int64_t kMaxOverlapChunks = 64;

/// Patterns of moecomm-lower-collectives: moecomm.dispatch (with a concrete
/// strategy), cached_dispatch and combine -> layout, permute and exchange
/// stages. A consumer whose handle type carries no strategy follows
/// `fallback` (when it is not auto; otherwise it does not match).
void populateLowerCollectivesPatterns(RewritePatternSet &patterns,
                                      Strategy fallback);

/// Patterns of moecomm-raise-dispatch: a framework's per-expert exchange
/// (permute_tokens ... unpermute_tokens, see Passes.td) -> dispatch /
/// combine. A chain that does not qualify does not match (the pass remarks
/// why).
void populateRaiseDispatchPatterns(RewritePatternSet &patterns);

/// Patterns of moecomm-fuse-quant: FP8 rows forwarded between exchange hops,
/// quantized once and dequantized once.
void populateFuseQuantPatterns(RewritePatternSet &patterns);

/// Patterns of moecomm-fuse-permute: permutes (and their quantize /
/// dequantize) folded into moecomm.pack and moecomm.unpack.
void populateFusePermutePatterns(RewritePatternSet &patterns);

} // namespace moecomm
} // namespace mlir

#endif // MOECOMM_TRANSFORMS_PASSES_H
