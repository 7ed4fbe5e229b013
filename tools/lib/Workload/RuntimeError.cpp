//===- RuntimeError.cpp - runtime results as llvm::Error ------------------===//

#include "moecomm/Workload/RuntimeError.h"
#include "moecomm/Workload/ToolIO.h"

#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace moecomm::workload {

Error runtimeError(moecommResult_t result, moecommComm_t comm, StringRef what) {
  if (result == moecommSuccess)
    return Error::success();
  std::string message = moecommCommGetLastError(comm);
  // Keep the report to one line whatever the runtime wrote.
  for (char &c : message)
    if (c == '\n' || c == '\r')
      c = ' ';
  std::string text =
      formatv("{0}: {1}{2}{3}", what, moecommGetErrorString(result),
              message.empty() ? "" : ": ", message)
          .str();
  bool badInput = result == moecommInvalidArgument ||
                  result == moecommMismatch || result == moecommUnsupported;
  return badInput ? inputError(text) : systemError(text);
}

} // namespace moecomm::workload
