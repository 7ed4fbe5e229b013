//===- OptionErrors.cpp - one form for the passes' option errors ----------===//

#include "Transforms/OptionErrors.h"

#include "mlir/IR/Location.h"

#include "llvm/ADT/StringSet.h"

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

/// The length of the value at the front of `options`: up to the first space
/// outside quotes and braces, as MLIR's parser reads values (a nested pass
/// pipeline, a quoted string). An unclosed brace runs to the end; an
/// unclosed quote is a character like the others.
static size_t valueLength(StringRef options) {
  int braces = 0;
  for (size_t i = 0; i < options.size(); ++i) {
    char c = options[i];
    if (c == ' ' && braces == 0)
      return i;
    if (c == '{')
      ++braces;
    else if (c == '}' && braces > 0)
      --braces;
    else if (c == '"' || c == '\'') {
      if (size_t close = options.find(c, i + 1); close != StringRef::npos)
        i = close;
    }
  }
  return options.size();
}

std::string mlir::moecomm::checkOptionNames(StringRef pass, StringRef options) {
  llvm::StringSet<> seen;
  while (!(options = options.ltrim(' ')).empty()) {
    StringRef name =
        options.take_until([](char c) { return c == ' ' || c == '='; });
    options = options.drop_front(name.size());
    if (options.consume_front("="))
      options = options.drop_front(valueLength(options));
    if (name.empty())
      return (pass + ": an option without a name; options are NAME=VALUE")
          .str();
    if (!seen.insert(name).second)
      return (pass + ": option " + name + " given twice").str();
  }
  return "";
}
