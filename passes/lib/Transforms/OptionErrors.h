//===- OptionErrors.h - one form for the passes' option errors --*- C++ -*-===//
//
// A bad option of a moecomm pass is reported once, before any IR is touched,
// as one line without a location (an option belongs to no op), e.g.
//
//   <unknown>:0: error: moecomm-schedule-overlap: chunks must be in [1, 64]...
//
// Passes check their options' values in initialize() with emitOptionError;
// WithOptionErrors gives the option parser's own errors (an unknown option)
// the same form, and registerMoECommPipeline does for the pipeline's.
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_TRANSFORMS_OPTIONERRORS_H
#define MOECOMM_TRANSFORMS_OPTIONERRORS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/Pass.h"

#include <string>

namespace mlir::moecomm {

/// Starts the error about an option of `pass` (its argument, e.g.
/// `moecomm-split-hierarchical`); the caller streams what is wrong.
InFlightDiagnostic emitOptionError(MLIRContext *context, StringRef pass);

/// `message` of MLIR's option parser as the text of an option error of
/// `pass`: its `<Pass-Options-Parser>: ` prefix and trailing newline go.
/// Empty when `message` is: llvm::cl then printed its own line (a value that
/// does not parse as the option's type) and there is nothing to add.
std::string optionParserError(StringRef pass, const Twine &message);

/// The option error of `pass` about the names in `options` (the text
/// `NAME=VALUE ...` after the pass's name), empty when there is none: an
/// option without a name (`=4`) or one given twice (`ranks=4 ranks=8`).
/// MLIR's option parser (PassOptions::parseFromString) skips the first and
/// keeps the last value of the second. Options are split as it splits them:
/// at spaces outside quotes and braces, the name ends at `=`.
std::string checkOptionNames(StringRef pass, StringRef options);

/// A moecomm pass whose option parser errors are one line in the form above.
template <typename BaseT> struct WithOptionErrors : public BaseT {
  using BaseT::BaseT;

  LogicalResult initializeOptions(
      StringRef options,
      function_ref<LogicalResult(const Twine &)> errorHandler) override {
    if (std::string problem = checkOptionNames(this->getArgument(), options);
        !problem.empty())
      return errorHandler(problem);
    auto oneLine = [&](const Twine &message) {
      std::string text = optionParserError(this->getArgument(), message);
      return text.empty() ? failure() : errorHandler(text);
    };
    return BaseT::initializeOptions(options, oneLine);
  }
};

} // namespace mlir::moecomm

#endif // MOECOMM_TRANSFORMS_OPTIONERRORS_H
