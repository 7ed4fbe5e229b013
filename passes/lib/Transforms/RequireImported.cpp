//===- RequireImported.cpp - JAX's ragged all-to-all must be imported -----===//
//
// `moecomm-require-imported` (Passes.td): moecomm-pipeline's first pass. A
// `stablehlo.custom_call @ragged_all_to_all` that reached the pipeline was
// not converted by moecomm-import-ragged-all-to-all; without this, the first
// pass to trip on the unregistered op (bufferization) names no cause.
//
//===----------------------------------------------------------------------===//

#include "moecomm/Transforms/Passes.h"

namespace mlir::moecomm {
#define GEN_PASS_DEF_MOECOMMREQUIREIMPORTED
#include "moecomm/Transforms/Passes.h.inc"
} // namespace mlir::moecomm

using namespace mlir;

namespace {

struct RequireImportedPass
    : public mlir::moecomm::impl::MoECommRequireImportedBase<
          RequireImportedPass> {
  void runOnOperation() override {
    // One error, at the first call: the fix is the same for all.
    WalkResult result = getOperation()->walk([](Operation *op) {
      if (!mlir::moecomm::isJaxRaggedAllToAll(op))
        return WalkResult::advance();
      op->emitError("stablehlo.custom_call @ragged_all_to_all must be "
                    "imported first: run --moecomm-import-ragged-all-to-all");
      return WalkResult::interrupt();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
