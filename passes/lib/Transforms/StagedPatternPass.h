//===- StagedPatternPass.h - a pass that is one pattern set -----*- C++ -*-===//
//
// moecomm-fuse-quant and moecomm-fuse-permute are each nothing but their
// populate*Patterns function applied greedily to staged IR; this template is
// that pass once, so the two differ only in their patterns.
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_TRANSFORMS_STAGEDPATTERNPASS_H
#define MOECOMM_TRANSFORMS_STAGEDPATTERNPASS_H

#include "Transforms/OptionErrors.h"
#include "Transforms/Unstaged.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::moecomm {

/// The pass of ODS base `BaseT` (e.g. impl::MoECommFuseQuantBase) that
/// remarks on collective-level ops it leaves alone (Unstaged.h), then applies
/// the patterns of `populate` until none matches. A source file explicitly
/// instantiates it for its base, which defines the base's create function.
template <template <typename> class BaseT,
          void (*populate)(RewritePatternSet &)>
struct StagedPatternPass
    : public WithOptionErrors<BaseT<StagedPatternPass<BaseT, populate>>> {
  void runOnOperation() override {
    remarkUnstaged(this->getOperation(), this->getArgument());
    RewritePatternSet patterns(&this->getContext());
    populate(patterns);
    if (failed(
            applyPatternsGreedily(this->getOperation(), std::move(patterns))))
      this->signalPassFailure();
  }
};

} // namespace mlir::moecomm

#endif // MOECOMM_TRANSFORMS_STAGEDPATTERNPASS_H
