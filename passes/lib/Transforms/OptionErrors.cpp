//===- OptionErrors.cpp - one form for the passes' option errors ----------===//

#include "Transforms/OptionErrors.h"

#include "mlir/IR/Location.h"

using namespace mlir;

InFlightDiagnostic mlir::moecomm::emitOptionError(MLIRContext *context,
                                                  StringRef pass) {
  return emitError(UnknownLoc::get(context)) << pass << ": ";
}

std::string mlir::moecomm::optionParserError(StringRef pass,
                                             const Twine &message) {
  std::string text = message.str();
  StringRef trimmed = StringRef(text).trim();
  trimmed.consume_front("<Pass-Options-Parser>: ");
  if (trimmed.empty())
    return "";
  return (pass + ": " + trimmed).str();
}
